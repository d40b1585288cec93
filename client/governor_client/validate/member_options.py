"""The ``validate`` options of the member checks (``validate.members``): ``--account ID``, ``--members``,
``--member-role``, ``--hub-bus-arn``; and the check they ask for, run once the policy is parsed."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from governor_client.validate.findings import Finding
    from governor_client.validate.members import SessionFor
    from tuning_governor.policy import Policy

_ACCOUNT = re.compile(r"[0-9]{12}")


def account_id(text: str) -> str:
    """``--account``'s value: a 12-digit account id."""
    if not _ACCOUNT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an account id (12 digits)")
    return text


def add_member_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--members",
        action="store_true",
        help="check every account under the policy's accounts: its member role can be assumed, permits the hub's"
        " calls, and its rules forward to the hub's bus (AWS credentials the member role trusts)",
    )
    parser.add_argument(
        "--member-role",
        default=os.environ.get("GOVERNOR_MEMBER_ROLE") or "tuning-governor-member",
        metavar="NAME",
        help="the member role's name prefix, as the hub's MemberRoleName (default: $GOVERNOR_MEMBER_ROLE,"
        " else tuning-governor-member); the role assumed is NAME-<region>",
    )
    parser.add_argument(
        "--hub-bus-arn",
        default=None,
        metavar="ARN",
        help="the hub's bus the members forward to (hub output HubEventBusArn; default: the caller's"
        " account's default bus in --region)",
    )


def member_check(
    args: argparse.Namespace,
    session_for: SessionFor | None = None,
    hub_bus: Callable[[str], str] | None = None,
) -> Callable[[Policy], list[Finding]] | None:
    """The member check ``args`` ask for (None: none); the AWS sessions are made when it runs."""
    chosen = args.account if isinstance(args.account, str) else None
    if chosen is None and not args.members:
        return None

    def check(policy: Policy) -> list[Finding]:
        from governor_client.validate import members  # noqa: PLC0415 - boto3 only when asked

        accounts = (chosen,) if chosen is not None else tuple(sorted(policy.accounts))
        target = members.MemberTarget(
            accounts=accounts,
            role_name=args.member_role,
            hub_bus_arn=args.hub_bus_arn or (hub_bus or members.default_hub_bus)(args.region),
            region=args.region,
        )
        sessions = session_for or members.live_session_for(args.member_role, args.region)
        return members.member_findings(policy, target, sessions)

    return check
