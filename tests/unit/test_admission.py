"""Admission arithmetic: spot vs on-demand quotas, AWS defaults, prioritized configurations, re-counts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tests.builders import job_facts, quota
from tests.conftest import load_event
from tuning_governor.app.envelope import parse_event
from tuning_governor.domain.capacity import AdmissionPlan, Holder, Reservation, recount
from tuning_governor.governance.capacity import capacity_facts, first_fit
from tuning_governor.governance.facts import JobFacts
from tuning_governor.governance.rules import ConcurrencyRule
from tuning_governor.models.events import TuningJobStateChange
from tuning_governor.policy import parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
G5, G4DN, M5_2X, P3 = "ml.g5.xlarge", "ml.g4dn.xlarge", "ml.m5.2xlarge", "ml.p3.2xlarge"
ENFORCE = parse_policy("mode: enforce", "test")


def facts(plans: list[AdmissionPlan], team: str | None = "vision") -> JobFacts:
    tags = {"team": team} if team else {}
    return job_facts(team=team, tags=tags, max_parallel=3, completed_objectives=[], admission=plans)


def capacity(plans: list[AdmissionPlan], holders: list[Holder], **limits: Any) -> Any:
    return capacity_facts(
        job_key="job",
        team="vision",
        demand={t: 0 for p in plans for t in p.on_demand},
        holders=holders,
        policy_quotas=limits.get("policy_quotas", {}),
        service_quotas=limits.get("service_quotas", {}),
        team_limits=limits.get("team_limits", {}),
        spot_demand={t for p in plans for t in p.spot},
        policy_spot_quotas=limits.get("policy_spot_quotas", {}),
        spot_service_quotas=limits.get("spot_service_quotas", {}),
        total_quota=limits.get("total_quota"),
        spot_total_quota=limits.get("spot_total_quota"),
    )


def test_prioritized_instance_configs_are_plans_in_priority_order_charged_one_at_a_time() -> None:
    # Given the sample job: spot, 3 parallel, InstanceConfigs g5 x1, g4dn x1, m5.2xlarge x2
    job = parse_event(load_event("tuning-instance-configs-inprogress"), TuningJobStateChange).detail
    plans = job.admission_options()
    # Then each configuration is one plan, charged on its own type only, as spot
    assert [(p["on_demand"], p["spot"]) for p in plans] == [
        ({}, {G5: 3}),
        ({}, {G4DN: 3}),
        ({}, {M5_2X: 6}),
    ]


def test_a_prioritized_job_fits_when_its_second_choice_fits_although_its_first_is_full() -> None:
    plans = [AdmissionPlan(label="g5", on_demand={G5: 3}), AdmissionPlan(label="g4dn", on_demand={G4DN: 3})]
    others = [Holder(key="other", kind="tuning-job", team="speech", instances={G5: 4})]
    facts_ = capacity(plans, others, policy_quotas={G5: 4, G4DN: 4})
    chosen, judged = first_fit(plans, "vision", facts_)
    assert chosen == 1
    assert judged[0].breaches and judged[1].fits
    assert ConcurrencyRule().evaluate(ENFORCE, facts(plans), facts_) is None
    # When the second choice is full as well, the breach names every plan tried
    busy = [*others, Holder(key="third", kind="tuning-job", team="speech", instances={G4DN: 2})]
    decision = ConcurrencyRule().evaluate(ENFORCE, facts(plans), capacity(plans, busy, policy_quotas={G5: 4, G4DN: 4}))
    assert decision is not None
    assert [p["plan"] for p in decision.numbers["plans"]] == ["g5", "g4dn"]
    assert decision.numbers["instance_types"][G5]["headroom"] == 0


def test_spot_demand_is_counted_against_the_spot_quota_and_spot_usage_only() -> None:
    # Given on-demand p3 usage at its limit, and nobody on spot
    plan = AdmissionPlan(spot={P3: 6})
    others = [Holder(key="od", kind="tuning-job", team="speech", instances={P3: 8})]
    limits = {
        "service_quotas": {P3: quota(f"{P3} for training job usage", 8)},
        "spot_service_quotas": {P3: quota(f"{P3} for spot training job usage", 6)},
    }
    # Then a spot job of 6 fits (on-demand usage is not spot usage)
    assert ConcurrencyRule().evaluate(ENFORCE, facts([plan]), capacity([plan], others, **limits)) is None
    # And a spot job that exceeds the spot quota breaches it, named as the spot quota
    spot_user = [*others, Holder(key="sp", kind="tuning-job", team="speech", instances={}, spot={P3: 1})]
    decision = ConcurrencyRule().evaluate(ENFORCE, facts([plan]), capacity([plan], spot_user, **limits))
    assert decision is not None
    row = decision.numbers["spot_instance_types"][P3]
    assert (row["usage"], row["demand"], row["limit"]) == (1, 6, 6)
    assert "spot training job usage" in row["limit_source"]
    assert "instance_types" in decision.numbers and decision.numbers["instance_types"] == {}


def test_policy_spot_quotas_apply_to_spot_and_policy_quotas_to_on_demand() -> None:
    plan = AdmissionPlan(on_demand={P3: 2}, spot={P3: 4})
    limits = {"policy_quotas": {P3: 2}, "policy_spot_quotas": {P3: 3}}
    decision = ConcurrencyRule().evaluate(ENFORCE, facts([plan]), capacity([plan], [], **limits))
    assert decision is not None
    assert decision.numbers["spot_instance_types"][P3]["limit_source"] == "policy spot_quotas"
    assert decision.numbers["instance_types"][P3]["limit_source"] == "policy quotas"
    assert len(decision.message.split("; ")) == 1  # only the spot side breaches


def test_an_aws_default_quota_is_used_and_named_when_there_is_no_applied_value() -> None:
    plan = AdmissionPlan(on_demand={P3: 3})
    default = quota(f"{P3} for training job usage", 2, applied=False)
    decision = ConcurrencyRule().evaluate(ENFORCE, facts([plan]), capacity([plan], [], service_quotas={P3: default}))
    assert decision is not None
    source = decision.numbers["instance_types"][P3]["limit_source"]
    assert source.startswith(f"AWS default quota {default.code}") and "no applied value" in source


def test_account_wide_instance_counts_are_checked_per_market() -> None:
    plan = AdmissionPlan(on_demand={P3: 2, G5: 2})
    others = [Holder(key="o", kind="training-job", team=None, instances={M5_2X: 3}, spot={G4DN: 50})]
    total = quota("Number of instances across all training jobs", 6)
    spot_total = quota("Number of instances across all spot training jobs", 4)
    decision = ConcurrencyRule().evaluate(
        ENFORCE, facts([plan]), capacity([plan], others, total_quota=total, spot_total_quota=spot_total)
    )
    assert decision is not None
    assert decision.numbers["totals"]["all training jobs"] | {} == {
        "demand": 4,
        "usage": 3,
        "limit": 6,
        "limit_source": f"Service Quota {total.code} (Number of instances across all training jobs)",
        "headroom": 3,
    }
    assert "all spot training jobs" not in decision.numbers["totals"]  # an on-demand job: spot total not charged


def test_team_limits_count_both_markets_together() -> None:
    plan = AdmissionPlan(spot={P3: 2})
    others = [Holder(key="o", kind="tuning-job", team="vision", instances={P3: 1}, spot={P3: 1})]
    decision = ConcurrencyRule().evaluate(ENFORCE, facts([plan]), capacity([plan], others, team_limits={P3: 3}))
    assert decision is not None
    assert decision.numbers["spot_instance_types"][P3]["team_usage"] == 2


def test_a_reservation_is_recounted_from_the_types_its_running_trials_use() -> None:
    # Given a reservation on the first choice (3 slots x 1 ml.g5.xlarge, spot)
    reservation = Reservation.for_plan("job", "vision", AdmissionPlan(spot={G5: 3}), 3, "2026-11-30T09:00:00.000+00:00")
    # When two trials run on the second choice (AMT found no g5 capacity)
    recounted = reservation.recounted([({G4DN: 1}, True), ({G4DN: 1}, True)])
    # Then they are charged where they run, and the free slot stays on the first choice
    assert (dict(recounted.spot), dict(recounted.on_demand)) == ({G4DN: 2, G5: 1}, {})
    # And with every slot running, nothing is left on the first choice
    assert recount({}, {G5: 1}, 3, [({G4DN: 1}, True)] * 3) == ({}, {G4DN: 3})


def test_a_recount_never_counts_more_running_trials_than_the_job_runs_in_parallel() -> None:
    # Given 3 slots of 2 instances, and 7 trials the table believes running (4 of them ended, events lost)
    running = [({"ml.p3.2xlarge": 2}, False)] * 7
    on_demand, spot = recount({"ml.p3.2xlarge": 2}, {}, 3, running)
    # Then at most MaxParallel x InstanceCount
    assert (on_demand, spot) == ({"ml.p3.2xlarge": 6}, {})


def test_a_reservation_made_on_incomplete_facts_counts_every_trial_seen_running() -> None:
    # Given a job judged on a thin event (MaxParallel unknown, taken as 1) whose 4 trials are seen running
    thin = Reservation.for_plan(
        "thin-hpo", None, AdmissionPlan(on_demand={"ml.p3.2xlarge": 1}), 1, "2026-11-30T09:00:00Z"
    )
    thin = replace(thin, incomplete=True)
    # Then its re-count holds the 4 instances they use, not 1
    assert thin.recounted([({"ml.p3.2xlarge": 1}, False)] * 4).on_demand == {"ml.p3.2xlarge": 4}
    # And a reservation made on its configuration stays bounded by MaxParallel
    assert replace(thin, incomplete=False).recounted([({"ml.p3.2xlarge": 1}, False)] * 4).on_demand == {
        "ml.p3.2xlarge": 1
    }
