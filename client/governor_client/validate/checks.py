"""The semantic checks on a valid policy alone (pure: the policy and a price catalog); each returns its
findings in a stable order."""

from __future__ import annotations

import difflib
import json
from decimal import Decimal

from governor_client.validate.findings import Finding
from tuning_governor.domain.pricing import PriceCatalog
from tuning_governor.policy import Policy, render_path
from tuning_governor.policy.rules import specs


def _money(value: Decimal) -> str:
    return f"${value.quantize(Decimal('0.01'))}"


def _deprecated(policy: Policy) -> list[Finding]:
    # The governor's own warnings (what it logs when it loads the policy), worded as it words them; each
    # starts with the path it is about. Any warning it adds later shows up here as policy-warning.
    found: list[Finding] = []
    for text in policy.warnings():
        head = text.split(" ", 1)[0]
        path = head if ("." in head or "[" in head) and not head.endswith(":") else None
        code = "deprecated-key" if "deprecated" in text else "policy-warning"
        found.append(Finding(severity="warning", code=code, path=path, message=text))
    return found


def _stop_guards(policy: Policy) -> list[str]:
    d = policy.defaults
    guards: list[str] = []
    if d.job_budget:
        guards.append("defaults.job_budget_usd" if d.job_budget_usd is not None else "defaults.budget_usd")
    for spec in specs:  # each rule's own switches (policy.rules), in judging order
        guards += spec.guards(d)
    for name, team in sorted(policy.teams.items()):
        if team.job_budget:
            guards.append(render_path(("teams", name, "job_budget_usd")))
        if team.monthly_budget_usd:
            guards.append(render_path(("teams", name, "monthly_budget_usd")))
        if team.instances:
            guards.append(render_path(("teams", name, "instances")))
    if policy.quotas:
        guards.append("quotas")
    if policy.spot_quotas:
        guards.append("spot_quotas")
    return guards


def _monitor_mode(policy: Policy) -> list[Finding]:
    guards = _stop_guards(policy)
    if policy.enforcing or not guards:
        return []
    return [
        Finding(
            severity="warning",
            code="monitor-mode-stops-nothing",
            path="mode",
            message=(
                f"mode is monitor{'' if 'mode' in policy.model_fields_set else ' (the default: mode is not set)'}:"
                f" {', '.join(guards)} will be evaluated and reported but no job will be stopped;"
                " set mode: enforce when the replay and the reports look right"
            ),
        )
    ]


def _grace(policy: Policy) -> list[Finding]:
    # Each rule's spec says what switches it on; a budget can always come from a job's tag (nothing in
    # defaults switches it off), so its grace period always means something.
    d = policy.defaults
    rule_on = {spec.name: spec.switched_on(d) for spec in specs}
    return [
        Finding(
            severity="warning",
            code="grace-for-a-rule-that-is-off",
            path=render_path(("defaults", "grace_minutes", rule)),
            message=(
                f"{render_path(('defaults', 'grace_minutes', rule))} is {minutes:g} but the {rule} rule is off:"
                " the grace period delays nothing"
            ),
        )
        for rule, minutes in sorted(d.grace_minutes.items())
        if minutes and not rule_on.get(rule, True)
    ]


def _hourly(catalog: PriceCatalog, region: str, instance_type: str) -> Decimal | None:
    quote = catalog.quote(region, instance_type)
    return quote.usd_per_hour if quote is not None else None


def _budgets(policy: Policy, catalog: PriceCatalog, region: str) -> list[Finding]:
    found: list[Finding] = []
    for name in sorted(policy.teams):
        found += _team_budget(policy, name, catalog, region)
    default = policy.defaults.job_budget or None
    default_path = _default_budget_path(policy)
    if default:
        for itype in sorted(set(policy.quotas) | set(policy.spot_quotas)):
            price = _hourly(catalog, region, itype)
            if price is not None and default < price:
                found.append(
                    Finding(
                        severity="warning",
                        code="budget-below-one-hour",
                        path=default_path,
                        message=(
                            f"the default per-job budget {_money(default)} is below one hour of a single"
                            f" {itype} (${price}/h in {region}): one trial on one instance exceeds it"
                        ),
                    )
                )
    return found


def _default_budget_path(policy: Policy) -> str:
    return "defaults.job_budget_usd" if policy.defaults.job_budget_usd is not None else "defaults.budget_usd"


def _team_budget(policy: Policy, name: str, catalog: PriceCatalog, region: str) -> list[Finding]:
    team = policy.teams[name]
    budget = team.job_budget if team.job_budget is not None else policy.defaults.job_budget or None
    if not budget:
        return []
    if team.job_budget is not None:
        path = render_path(("teams", name, "job_budget_usd" if team.job_budget_usd is not None else "budget_usd"))
    else:
        path = _default_budget_path(policy)
    found: list[Finding] = []
    for itype, limit in sorted(team.instances.items()):
        price = _hourly(catalog, region, itype)
        if not limit or price is None or budget >= limit * price:
            continue
        hour = limit * price
        found.append(
            Finding(
                severity="warning",
                code="budget-below-one-hour",
                path=path,
                message=(
                    f"team {name}'s per-job budget {_money(budget)} is below one hour at its limit of"
                    f" {limit} {itype} ({limit} x ${price}/h = {_money(hour)} in {region}):"
                    " a job using the team's capacity reaches it in"
                    f" {int(budget / hour * 60)} minutes"
                ),
            )
        )
    if team.monthly_budget_usd and team.monthly_budget_usd < budget:
        found.append(
            Finding(
                severity="warning",
                code="monthly-below-job-budget",
                path=render_path(("teams", name, "monthly_budget_usd")),
                message=(
                    f"team {name}'s monthly budget {_money(team.monthly_budget_usd)} is below its per-job"
                    f" budget {_money(budget)}: one job can spend the whole month's budget"
                ),
            )
        )
    return found


def _team_limits(policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    for name, team in sorted(policy.teams.items()):
        for itype, limit in sorted(team.instances.items()):
            quota = policy.quotas.get(itype)
            if quota is not None and limit > quota:
                found.append(
                    Finding(
                        severity="warning",
                        code="team-limit-above-quota",
                        path=render_path(("teams", name, "instances", itype)),
                        message=(
                            f"team {name}'s limit of {limit} {itype} is above the policy's account quota of"
                            f" {quota} (quotas[{json.dumps(itype)}]): the team can never reach it"
                        ),
                    )
                )
    return found


def _shares(policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    totals: dict[str, dict[str, int]] = {}
    for name, team in sorted(policy.teams.items()):
        for itype, count in sorted((team.share.capacity_limits if team.share else {}).items()):
            totals.setdefault(itype, {})[name] = count
    for itype, by_team in sorted(totals.items()):
        quota, total = policy.quotas.get(itype), sum(by_team.values())
        if quota is not None and total > quota:
            each = ", ".join(f"{name} {count}" for name, count in by_team.items())
            found.append(
                Finding(
                    severity="warning",
                    code="shares-above-quota",
                    path=render_path(("quotas", itype)),
                    message=(
                        f"teams' shares of {total} {itype} ({each}) are above the account quota of {quota}:"
                        " a team's request that fits its share may still wait for the quota"
                    ),
                )
            )
    return found


def _known_types(catalog: PriceCatalog) -> set[str]:
    return {itype for region in catalog.regions() for itype in catalog.types(region)}


def _unpriced(policy: Policy, catalog: PriceCatalog, region: str) -> list[Finding]:
    named: dict[str, str] = {}
    for itype in policy.quotas:
        named.setdefault(itype, render_path(("quotas", itype)))
    for itype in policy.spot_quotas:
        named.setdefault(itype, render_path(("spot_quotas", itype)))
    for name, team in sorted(policy.teams.items()):
        for itype in team.instances:
            named.setdefault(itype, render_path(("teams", name, "instances", itype)))
    known = _known_types(catalog)
    found: list[Finding] = []
    for itype, path in sorted(named.items()):
        if catalog.quote(region, itype) is not None:
            continue
        hint = difflib.get_close_matches(itype, sorted(known), n=1)
        found.append(
            Finding(
                severity="warning",
                code="unpriced-instance-type",
                path=path,
                message=(
                    f"{itype} has no price in any region of the bundled catalog nor in the policy's prices:"
                    f" {f'did you mean {hint[0]}? ' if hint else ''}(a type the governor cannot price is"
                    " not counted against budgets; add it under prices if it is real)"
                ),
            )
        )
    return found


def policy_findings(policy: Policy, catalog: PriceCatalog, region: str) -> list[Finding]:
    """The findings on the policy alone, ``catalog`` already holding the policy's ``prices``."""
    return [
        *_deprecated(policy),
        *_monitor_mode(policy),
        *_grace(policy),
        *_budgets(policy, catalog, region),
        *_team_limits(policy),
        *_shares(policy),
        *_unpriced(policy, catalog, region),
    ]
