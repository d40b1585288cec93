"""``governor_client.offline.moto_signing``: while moto answers, a SigV4 request carries botocore's headers
with a signature of zeros, moto answers as the same account, and check mode compares the header with
botocore's; without a mock, botocore signs as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from moto import mock_aws

from governor_client.offline import moto_signing

MEMBER = "111111111111"


class Sent(Exception):
    """Raised by the capture hook: the request is not sent anywhere."""


def capture(client: Any, headers: list[str], *, stop: bool = False) -> None:
    def keep(request: Any, **_: Any) -> None:
        header = request.headers["Authorization"]
        headers.append(header.decode() if isinstance(header, bytes) else header)
        if stop:
            raise Sent

    client.meta.events.register_first("before-send", keep)


@pytest.fixture
def aws(aws_credentials: None) -> Iterator[None]:
    with mock_aws():
        yield


def _member_identity() -> tuple[str, list[str]]:
    """The account moto answers a member role's session as, and the headers of its two requests."""
    sts = boto3.client("sts", region_name="us-east-1")
    role = f"arn:aws:iam::{MEMBER}:role/tg-member"
    credentials = sts.assume_role(RoleArn=role, RoleSessionName="governor")["Credentials"]
    member = boto3.client(
        "sts",
        region_name="eu-west-1",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    headers: list[str] = []
    capture(member, headers)
    account = member.get_caller_identity()["Account"]
    member.get_caller_identity()
    return account, headers


def test_moto_answers_an_assumed_role_as_its_account_with_the_signature_left_out(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert moto_signing.installed()  # by tests/conftest.py
    monkeypatch.delenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", raising=False)
    account, headers = _member_identity()
    assert account == MEMBER
    assert all(header.endswith(f"Signature={moto_signing.UNCHECKED_SIGNATURE}") for header in headers)
    assert all("/eu-west-1/sts/aws4_request, SignedHeaders=" in header for header in headers)

    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")  # botocore signs too; headers compared
    account, headers = _member_identity()
    assert account == MEMBER
    assert not any(moto_signing.UNCHECKED_SIGNATURE in header for header in headers)  # botocore's own went


def test_a_header_that_differs_from_botocores_is_caught_in_check_mode(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A check that cannot fail proves nothing: a header naming another access key is caught.
    inject = SigV4Auth._inject_signature_to_request

    def other_key(self: Any, request: Any, signature: str) -> Any:
        inject(self, request, signature)
        if signature == moto_signing.UNCHECKED_SIGNATURE:
            request.headers.replace_header(
                "Authorization", request.headers["Authorization"].replace("Credential=", "Credential=X")
            )
        return request

    monkeypatch.setattr(SigV4Auth, "_inject_signature_to_request", other_key)
    monkeypatch.setenv("TUNING_GOVERNOR_MOTO_SPEED_CHECK", "1")
    with pytest.raises(moto_signing.SigningMismatch):
        boto3.client("sts", region_name="us-east-1").get_caller_identity()


def test_without_a_mock_botocore_signs_as_before(aws_credentials: None) -> None:
    client = boto3.client("sts", region_name="us-east-1")
    headers: list[str] = []
    capture(client, headers, stop=True)
    with pytest.raises(Sent):
        client.get_caller_identity()
    signature = headers[0].rsplit("Signature=", 1)[1]
    assert len(signature) == 64 and signature != moto_signing.UNCHECKED_SIGNATURE


def test_uninstall_puts_botocores_signer_back(aws: None) -> None:
    moto_signing.uninstall()
    try:
        assert not moto_signing.installed()
        client = boto3.client("sts", region_name="us-east-1")
        headers: list[str] = []
        capture(client, headers)
        assert client.get_caller_identity()["Account"] == "123456789012"
        assert not headers[0].endswith(moto_signing.UNCHECKED_SIGNATURE)
    finally:
        moto_signing.install()
    assert moto_signing.installed()
