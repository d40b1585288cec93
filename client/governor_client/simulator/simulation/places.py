"""Jobs created in other accounts and regions: SageMaker there, on moto.

moto keys its state by account and region, and STS AssumeRole into a role ARN of another account id
returns credentials whose calls land in that account (the role need not exist): a job created with
them lives there, and the AMT stand-in emits its events with that account and region in their
envelope, as EventBridge delivers a member's events to the hub's bus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING:
    from governor_client.offline.environment import OfflineEnvironment

ROLE = "arn:aws:iam::{account}:role/tuning-governor-simulated-user"


def _credentials(account: str) -> dict[str, str]:
    answer = boto3.client("sts", region_name="us-east-1").assume_role(
        RoleArn=ROLE.format(account=account), RoleSessionName="simulation"
    )
    c = answer["Credentials"]
    return {
        "aws_access_key_id": c["AccessKeyId"],
        "aws_secret_access_key": c["SecretAccessKey"],
        "aws_session_token": c["SessionToken"],
    }


def sagemaker_of(env: OfflineEnvironment, account: str | None, region: str | None) -> Any:
    """The SageMaker client of (account, region): the environment's own when neither differs from it."""
    home = env.sagemaker
    where = region or home.meta.region_name
    if account is None:  # the caller's own account: no need to ask STS which it is
        return home if where == home.meta.region_name else boto3.client("sagemaker", region_name=where)
    own = boto3.client("sts", region_name=where).get_caller_identity()["Account"]
    if account == own and where == home.meta.region_name:
        return home
    if account == own:
        return boto3.client("sagemaker", region_name=where)
    # Not cached: moto's state (and the credentials it issued) are per mock_aws.
    c = _credentials(account)
    return boto3.client(
        "sagemaker",
        region_name=where,
        aws_access_key_id=c["aws_access_key_id"],
        aws_secret_access_key=c["aws_secret_access_key"],
        aws_session_token=c["aws_session_token"],
    )
