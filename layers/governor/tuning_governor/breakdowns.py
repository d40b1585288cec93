"""Metrics broken down by team, by rule or by account and region, for the CloudWatch dashboard in template.yaml.

The invocation's ``metrics`` carry one dimension set (``service``) for every metric they hold, so a
metric with a second dimension is written on its own EMF line (Powertools ``single_metric``), with
``service`` too, so that one ``SEARCH`` over ``{TuningGovernor,service,team}`` or
``{TuningGovernor,rule,service}`` finds every team or rule. Each distinct dimension value is a custom
metric CloudWatch bills for: rules are a fixed registry, teams are the tag values in use.
"""

from __future__ import annotations

from decimal import Decimal

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from tuning_governor.observability import NAMESPACE, SERVICE

UNTAGGED_TEAM = "(untagged)"
#: CloudWatch's limit on a dimension value's length.
MAX_DIMENSION_VALUE = 1024


def _dimension(value: str) -> str:
    return value[:MAX_DIMENSION_VALUE] if value else UNTAGGED_TEAM


def team_spent(team: str | None, usd: Decimal) -> None:
    """A finished tuning job's priced cost, on its team (``(untagged)`` without a team tag)."""
    with single_metric(
        name="TeamSpendUSD",
        unit=MetricUnit.NoUnit,
        value=float(usd),
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="team", value=_dimension(team or ""))


def rule_decided(rule: str) -> None:
    """One governance decision recorded (claimed) for ``rule``, whatever its verdict and action."""
    with single_metric(
        name="DecisionsByRule",
        unit=MetricUnit.Count,
        value=1,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="rule", value=_dimension(rule))


def rule_stopped(rule: str) -> None:
    """One StopHyperParameterTuningJob call made because ``rule`` breached (as ``JobsStopped`` counts them)."""
    with single_metric(
        name="StopsByRule",
        unit=MetricUnit.Count,
        value=1,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="rule", value=_dimension(rule))


def _account_metric(name: str, account: str, region: str | None = None) -> None:
    with single_metric(
        name=name, unit=MetricUnit.Count, value=1, namespace=NAMESPACE, default_dimensions={"service": SERVICE}
    ) as metric:
        metric.add_dimension(name="account", value=_dimension(account))
        if region is not None:
            metric.add_dimension(name="region", value=_dimension(region))


def account_spent(account: str, region: str, usd: Decimal) -> None:
    """A finished tuning job's priced cost, on the account and region it ran in (the dashboard's spend by
    account: one organisation, one view)."""
    with single_metric(
        name="AccountSpendUSD",
        unit=MetricUnit.NoUnit,
        value=float(usd),
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="account", value=_dimension(account))
        metric.add_dimension(name="region", value=_dimension(region))


def account_stopped(account: str, region: str) -> None:
    """One StopHyperParameterTuningJob call made in (account, region) (as ``JobsStopped`` counts them)."""
    with single_metric(
        name="StopsByAccount",
        unit=MetricUnit.Count,
        value=1,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="account", value=_dimension(account))
        metric.add_dimension(name="region", value=_dimension(region))


def member_unreachable(account: str, region: str) -> None:
    """The member role of (account, region) could not be assumed: the event is retried (the member is
    "unmanaged" until it can be; template.yaml's UnmanagedMemberAlarm names the account)."""
    _account_metric("MembersUnreachable", account, region)


def event_not_governed(account: str) -> None:
    """An event from an account the governor does not govern (or naming another account) was rejected."""
    _account_metric("UngovernedAccountEvents", account)
