"""The AWS clients the ``tuning-governor`` commands make (``report``, ``validate --account``, ``replay s3://``,
``check --table``, ``submit``, ``prices export``).

An operator at a terminal wants to hear that an endpoint is unreachable, or that there are no
credentials, in seconds, not after the SDK's default retries (legacy mode: 5 attempts with backoff,
~27 s against a closed port). These clients connect within 5 s, read within 30 s, and try each call
twice (standard retry mode).

Without credentials, the SDK's chain ends by asking the instance metadata service (IMDS), which off
EC2 (a laptop, offline) never answers: by default it asks for an IMDSv2 token, then once more without
one (IMDSv1), a second wait of ``metadata_service_timeout`` (1 s). These clients ask once (IMDSv2,
which every EC2 instance offers) unless ``AWS_EC2_METADATA_V1_DISABLED`` or the profile's
``ec2_metadata_v1_disabled`` says otherwise (set it to ``false`` in a container whose instance allows
only one network hop, where the token's answer cannot arrive).

boto3 reads the region from ``AWS_DEFAULT_REGION`` or the profile; like the AWS CLI v2, these clients
also read ``AWS_REGION`` (which the other SDKs and Lambda set), before them.
"""

from __future__ import annotations

import os
from typing import Any

CONNECT_TIMEOUT_S, READ_TIMEOUT_S, MAX_ATTEMPTS = 5, 30, 2
V1_SETTING = "ec2_metadata_v1_disabled"


def cli_client(service: str, region: str | None = None, *, credentials_first: bool = False) -> Any:
    """A boto3 client for ``service`` with the CLI's timeouts, from a fresh session (so the credentials
    and ``AWS_ENDPOINT_URL`` are read now, not cached from an earlier call).

    The client finds its credentials when it is made (the chain's one metadata probe, off EC2, happens
    here). With ``credentials_first``, finding none raises botocore's ``NoCredentialsError`` here, as the
    first call would, so a command that makes its client before loading the rest of its machinery says
    "no credentials" without loading it."""
    import boto3  # noqa: PLC0415 - the SDK loads when a command calls AWS, not for --help
    import botocore.session  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    core = botocore.session.get_session()
    if os.environ.get("AWS_EC2_METADATA_V1_DISABLED") is None and V1_SETTING not in _profile(core):
        core.set_config_variable(V1_SETTING, True)
    if credentials_first and core.get_credentials() is None:  # found ones are kept for the client
        from botocore.exceptions import NoCredentialsError  # noqa: PLC0415

        raise NoCredentialsError
    config = Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
    )
    session = boto3.session.Session(botocore_session=core, region_name=region or os.environ.get("AWS_REGION") or None)
    return session.client(service, config=config)  # type: ignore[call-overload]


def _profile(core: Any) -> dict[str, Any]:
    """The profile's settings (empty when the profile named does not exist: the client will say so)."""
    from botocore.exceptions import ProfileNotFound  # noqa: PLC0415

    try:
        return dict(core.get_scoped_config())
    except ProfileNotFound:
        return {}
