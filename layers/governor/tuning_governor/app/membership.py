"""Whose event is this: the envelope's account checked against the policy's ``accounts`` before any
use case reads the event (no confused deputy: nothing in an event chooses the account acted in).

The check runs while the policy lists ``accounts`` or the stack is deployed in organisation mode
(``Settings.organization_id``, template.yaml's OrganizationId); a single-account deploy with no
``accounts`` is handled as before. An event from an account that is not the home one and not a listed
member, or that names another account or region in its ARNs, is rejected: ``RejectedEvent`` with the
reason (so the caller's ``handle_errors`` logs it and counts ``RejectedEvents``) and the
``UngovernedAccountEvents`` metric with the account. A listed member in ``mode: monitor`` is judged
under a monitoring copy of the policy: decided and reported, never stopped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tuning_governor.breakdowns import event_not_governed
from tuning_governor.errors import RejectedEvent
from tuning_governor.policy import Policy
from tuning_governor.policy.accounts import Place, membership, under_account_terms

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices

_ACCOUNT = re.compile(r"[0-9]{12}")


def checks_membership(policy: Policy, services: AppServices[object]) -> bool:
    """Whether events are checked against the membership (organisation mode, or accounts listed)."""
    return bool(policy.accounts or services.settings.organization_id)


def _as_mapping(event: Any) -> Mapping[str, Any]:
    """The event as EventBridge sent it: a replayed one comes parsed (a model), read back by its aliases."""
    if isinstance(event, BaseModel):
        return event.model_dump(mode="json", by_alias=True)
    return event if isinstance(event, Mapping) else {}


def admit[S](event: Any, services: AppServices[S]) -> AppServices[S]:
    """The services to handle ``event`` with, or ``RejectedEvent`` when its account is not governed.

    A governed member whose terms do not enforce gets services whose policy is the monitoring copy."""
    policy = services.policy()
    if not checks_membership(policy, services):
        return services
    home = Place(services.settings.account_id, services.settings.region)
    verdict = membership(_as_mapping(event), policy.accounts, home, policy.enforcing)
    if not verdict.governed:
        account = verdict.place.account
        event_not_governed(account if _ACCOUNT.fullmatch(account) else "(malformed)")
        raise RejectedEvent(f"not governed: {verdict.reason}")
    terms = under_account_terms(policy, verdict.place.account)
    return services if terms is policy else services.with_policy(lambda: terms)
