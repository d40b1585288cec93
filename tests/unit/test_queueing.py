"""The queue's scheduling core (issue 20 items 3 and 4): examples, then properties over random
arrival and completion sequences driven through ``schedule`` as the admission loop would."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuning_governor.domain.queueing import Decision, Holding, QueuedRequest, ShareTerms, schedule
from tuning_governor.domain.shares import UNBOUNDED, Ledger, Strategy

G5 = "ml.g5.xlarge"
P3 = "ml.p3.2xlarge"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def request(key: str, team: str, parallel: int, per_trial: int = 1, itype: str = G5, **kw: object) -> QueuedRequest:
    kw.setdefault("enqueued_at", NOW)
    return QueuedRequest(key=key, team=team, max_parallel=parallel, per_trial={itype: per_trial}, **kw)  # type: ignore[arg-type]


def by_key(decisions: Sequence[Decision]) -> dict[str, Decision]:
    return {d.key: d for d in decisions}


# -- examples -----------------------------------------------------------------------------------------
def test_priority_then_fifo_within_a_team() -> None:
    shares = {"a": ShareTerms({G5: 4})}
    queued = [
        request("late-high", "a", 2, priority=5, enqueued_at=NOW),
        request("early-low", "a", 2, enqueued_at=NOW - timedelta(hours=1)),
        request("earlier-low", "a", 4, enqueued_at=NOW - timedelta(hours=2)),
    ]
    out = by_key(schedule(queued, [], shares, {G5: 4}, NOW))
    assert out["late-high"].action == "admit"
    # early-low would fit the 2 left, but it never overtakes earlier-low, which does not.
    assert (out["earlier-low"].action, out["earlier-low"].position) == ("wait", 1)
    assert (out["early-low"].position, out["early-low"].behind) == (2, ("earlier-low",))


def test_fair_share_serves_the_team_furthest_below_its_share_first() -> None:
    shares = {"a": ShareTerms({G5: 4}, "LEND_AND_BORROW"), "b": ShareTerms({G5: 4}, "LEND_AND_BORROW")}
    held = [Holding("a-running", "a", {G5: 3})]
    queued = [request("a2", "a", 3, enqueued_at=NOW - timedelta(hours=1)), request("b1", "b", 3)]
    out = schedule(queued, held, shares, {G5: 8}, NOW)
    assert [d.key for d in out if d.action == "admit"] == ["b1"]
    assert by_key(out)["a2"].action == "wait"


def test_refused_when_demand_can_never_fit_and_expired_after_max_wait() -> None:
    shares = {"a": ShareTerms({G5: 4}, "LEND_AND_BORROW", borrow_limit=50)}
    queued = [
        request("above-quota", "a", 10),
        request("above-borrow-limit", "a", 7),
        request("old", "a", 1, enqueued_at=NOW - timedelta(hours=3), max_wait=timedelta(hours=2)),
    ]
    out = by_key(schedule(queued, [], shares, {G5: 8}, NOW))
    assert out["above-quota"].action == "refuse" and "quota of 8" in out["above-quota"].reason
    assert out["above-borrow-limit"].action == "refuse" and "can ever hold" in out["above-borrow-limit"].reason
    assert out["old"].action == "expire"


def test_borrowing_idle_lent_capacity_within_the_limit_and_never_a_reserve() -> None:
    shares = {
        "lender": ShareTerms({G5: 4}, "LEND"),
        "keeper": ShareTerms({G5: 4}, "RESERVE"),
        "borrower": ShareTerms({G5: 2}, "LEND_AND_BORROW", borrow_limit=200),
    }
    out = by_key(schedule([request("b", "borrower", 8)], [], shares, {G5: 10}, NOW))
    assert out["b"].action == "refuse"  # 2 + 200 % of 2 = 6 < 8
    out = by_key(schedule([request("b", "borrower", 6)], [], shares, {G5: 10}, NOW))
    assert (out["b"].action, out["b"].borrowed) == ("admit", {G5: 4})
    out = by_key(schedule([request("b", "borrower", 6)], [Holding("l", "lender", {G5: 1})], shares, {G5: 10}, NOW))
    assert out["b"].action == "wait"  # only 3 idle in the lender's share; the keeper's 4 are not lent


def test_fit_to_share_lowers_max_parallel_only_with_consent() -> None:
    shares = {"a": ShareTerms({G5: 4})}
    held = [Holding("r", "a", {G5: 1})]
    out = by_key(schedule([request("asks", "a", 4, fit_to_share=True)], held, shares, {G5: 4}, NOW))
    assert (out["asks"].action, out["asks"].max_parallel, out["asks"].fitted) == ("admit", 3, True)
    out = by_key(schedule([request("asks", "a", 4)], held, shares, {G5: 4}, NOW))
    assert out["asks"].action == "wait"


def test_lender_reclaims_by_preempting_the_borrower_with_fewest_completed_trials() -> None:
    shares = {"a": ShareTerms({G5: 4}, "LEND"), "b": ShareTerms({G5: 4}, "LEND_AND_BORROW", preemptible=True)}
    held = [
        Holding("b-own", "b", {G5: 4}),
        Holding("b-many", "b", {G5: 2}, completed_trials=9, borrowed={G5: 2}),
        Holding("b-few", "b", {G5: 2}, completed_trials=1, borrowed={G5: 2}),
    ]
    queued = [request("a1", "a", 2), request("b-more", "b", 1)]
    # Given 1 free of 9: the lender's a1 fits its idle share (4) but not the free capacity.
    out = schedule(queued, held, shares, {G5: 9}, NOW)
    assert [(d.key, d.for_key) for d in out if d.action == "preempt"] == [("b-few", "a1")]
    assert by_key(out)["b-more"].action == "wait"  # no new borrower while the lender reclaims
    assert by_key(out)["a1"].behind == ("b-few",) and "stopping b-few to make room" in by_key(out)["a1"].reason
    after = schedule(queued, [h for h in held if h.key != "b-few"], shares, {G5: 9}, NOW)
    assert by_key(after)["a1"].action == "admit"


def test_a_borrower_that_has_launched_its_whole_budget_is_never_preempted() -> None:
    """Nothing could resume it (AWS counts its launched trials against a warm start's limit): stopping it
    would only lose its trials in flight, and it ends soon on its own."""
    shares = {"a": ShareTerms({G5: 4}, "LEND"), "b": ShareTerms({G5: 4}, "LEND_AND_BORROW", preemptible=True)}
    held = [
        Holding("b-own", "b", {G5: 4}),
        Holding("b-last-wave", "b", {G5: 2}, completed_trials=1, borrowed={G5: 2}, resumable=False),
        Holding("b-more", "b", {G5: 2}, completed_trials=5, borrowed={G5: 2}),
    ]
    out = schedule([request("a1", "a", 2)], held, shares, {G5: 9}, NOW)
    assert [(d.key, d.for_key) for d in out if d.action == "preempt"] == [("b-more", "a1")]
    only_last = [held[0], held[1]]
    assert [d.action for d in schedule([request("a1", "a", 2)], only_last, shares, {G5: 7}, NOW)] == ["wait"]


def test_no_preemption_where_the_policy_says_never() -> None:
    shares = {"a": ShareTerms({G5: 4}, "LEND"), "b": ShareTerms({G5: 4}, "LEND_AND_BORROW")}
    held = [Holding("b-own", "b", {G5: 4}), Holding("b-borrow", "b", {G5: 4}, borrowed={G5: 4})]
    out = schedule([request("a1", "a", 2)], held, shares, {G5: 8}, NOW)
    assert [d.action for d in out] == ["wait"]


def test_a_lender_taking_back_its_own_share_never_eats_another_teams_reserve() -> None:
    """Found by the property below: b's lent share was busy with a's borrowing, and b's own request took
    the last free instance, c's idle RESERVE share. b waits instead (its share is held by a borrower)."""
    shares = {
        "a": ShareTerms({G5: 1}, "LEND_AND_BORROW"),
        "b": ShareTerms({G5: 7}, "LEND"),
        "c": ShareTerms({G5: 1}, "RESERVE"),
    }
    held = [Holding("a1", "a", {G5: 1}), Holding("a2", "a", {G5: 6}, borrowed={G5: 6})]
    out = by_key(schedule([request("b1", "b", 2)], held, shares, {G5: 9}, NOW))
    assert out["b1"].action == "wait" and "1 available" in out["b1"].reason
    out = by_key(schedule([request("b1", "b", 1), request("c1", "c", 1)], held, shares, {G5: 9}, NOW))
    assert out["b1"].action == "admit" and out["c1"].action == "admit"


def test_a_team_without_a_share_uses_only_the_pool() -> None:
    shares = {"a": ShareTerms({G5: 4}, "LEND")}
    out = by_key(schedule([request("x", "other", 2), request("y", "other2", 5)], [], shares, {G5: 6}, NOW))
    assert out["x"].action == "admit" and out["y"].action == "refuse"


# -- properties ----------------------------------------------------------------------------------------
STRATEGIES = ("RESERVE", "LEND", "LEND_AND_BORROW")


@st.composite
def worlds(draw: st.DrawFn) -> tuple[dict[str, ShareTerms], dict[str, int]]:
    shares: dict[str, ShareTerms] = {}
    for team in ("a", "b", "c")[: draw(st.integers(1, 3))]:
        capacity = {t: draw(st.integers(1, 8)) for t in draw(st.sets(st.sampled_from((G5, P3)), min_size=1))}
        shares[team] = ShareTerms(
            capacity=capacity,
            strategy=draw(st.sampled_from((*STRATEGIES, "LEND_AND_BORROW"))),
            borrow_limit=draw(st.sampled_from((-1, 0, 50, 100, 200))),
            preemptible=draw(st.booleans()),
        )
    quota = {t: sum(s.share(t) for s in shares.values()) + draw(st.sampled_from((0, 0, 1, 3))) for t in (G5, P3)}
    return shares, quota


arrival = st.tuples(
    st.sampled_from(("a", "b", "c", "a", "b", "nobody")),
    st.integers(1, 5),  # MaxParallel
    st.sampled_from(({G5: 1}, {G5: 1}, {G5: 2}, {P3: 1}, {G5: 1, P3: 1})),
    st.integers(0, 2),  # priority
    st.booleans(),  # fit-to-share consent
)
steps = st.lists(st.one_of(arrival, arrival, st.integers(0, 9), st.just("tick")), min_size=1, max_size=40)


@dataclass
class Run:
    shares: dict[str, ShareTerms]
    quota: dict[str, int]
    queued: list[QueuedRequest] = field(default_factory=list)
    held: list[Holding] = field(default_factory=list)
    clock: datetime = NOW
    n: int = 0

    def step(self, event: object) -> list[Decision]:
        if isinstance(event, tuple):
            team, parallel, per_trial, priority, consent = event
            self.n += 1
            self.queued.append(
                QueuedRequest(
                    f"r{self.n}", team, parallel, per_trial, self.clock, priority, consent, timedelta(hours=3)
                )
            )
        elif isinstance(event, int) and self.held:
            self.held.pop(event % len(self.held))
        self.clock += timedelta(minutes=30)
        self.held = [replace(h, completed_trials=h.completed_trials + 1) for h in self.held]
        return schedule(self.queued, self.held, self.shares, self.quota, self.clock)

    def apply(self, decisions: Sequence[Decision]) -> None:
        asked = {r.key: r for r in self.queued}
        for d in decisions:
            if d.action == "admit":
                req = asked[d.key]
                assert d.max_parallel is not None
                self.held.append(Holding(d.key, d.team, req.demand(d.max_parallel), 0, dict(d.borrowed or {})))
            if d.action == "preempt":
                self.held = [h for h in self.held if h.key != d.key]
        done = {d.key for d in decisions if d.action in {"admit", "expire", "refuse"}}
        self.queued = [r for r in self.queued if r.key not in done]


def check_invariants(run: Run) -> None:
    ledger = Ledger.of(run.held, run.shares, run.quota)
    for itype, quota in run.quota.items():
        assert ledger.free(itype) >= 0, f"over the quota of {itype}"
        assert ledger.free(itype) >= ledger.held_idle(itype, lending=False), "a RESERVE share was lent"
        for team, terms in run.shares.items():
            over = ledger.used_by(team, itype) - terms.share(itype)
            if not terms.borrows:
                assert over <= 0, f"{terms.strategy} team {team} borrowed {itype}"
            limit = terms.borrow_ceiling(itype)
            assert over <= (quota if limit >= UNBOUNDED else limit), f"team {team} beyond its borrow limit"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), events=steps)
def test_every_pass_keeps_quota_shares_borrow_limits_and_consent(
    world: tuple[dict[str, ShareTerms], dict[str, int]], events: list[object]
) -> None:
    run = Run(*world)
    for event in events:
        asked = {r.key: r for r in run.queued}
        decisions = run.step(event)
        asked |= {r.key: r for r in run.queued}
        for d in decisions:
            if d.action == "admit":
                assert d.max_parallel is not None and 1 <= d.max_parallel <= asked[d.key].max_parallel
                assert d.fitted == (d.max_parallel < asked[d.key].max_parallel)
                assert asked[d.key].fit_to_share or not d.fitted, "fitted without consent"
        run.apply(decisions)
        check_invariants(run)
        reclaimed = {key for d in decisions if (key := d.for_key) is not None}
        if reclaimed:
            again = by_key(schedule(run.queued, run.held, run.shares, run.quota, run.clock))
            assert all(again[key].action == "admit" for key in reclaimed), "lender not admitted after reclaim"


@settings(max_examples=60, deadline=None)
@given(world=worlds(), events=steps, seed=st.integers(0, 2**16))
def test_deterministic_whatever_the_input_order(
    world: tuple[dict[str, ShareTerms], dict[str, int]], events: list[object], seed: int
) -> None:
    run = Run(*world)
    for event in events:
        decisions = run.step(event)
        queued, held = list(run.queued), list(run.held)
        random.Random(seed).shuffle(queued)
        random.Random(seed + 1).shuffle(held)
        assert schedule(queued, held, run.shares, run.quota, run.clock) == decisions
        run.apply(decisions)


@settings(max_examples=300, deadline=None)
@given(
    lender_share=st.integers(1, 6),
    borrower_share=st.integers(1, 6),
    keeper_share=st.integers(0, 3),
    borrow_limit=st.sampled_from((-1, 50, 100, 200)),
    borrower_jobs=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    lender_parallel=st.integers(1, 6),
    lender_strategy=st.sampled_from(("LEND", "LEND_AND_BORROW")),
)
def test_a_lender_is_admitted_once_its_preemptible_borrowers_are_stopped(
    lender_share: int,
    borrower_share: int,
    keeper_share: int,
    borrow_limit: int,
    borrower_jobs: list[int],
    lender_parallel: int,
    lender_strategy: Strategy,
) -> None:
    # Given a borrower that has filled what it may of the lender's idle share
    shares = {
        "lender": ShareTerms({G5: lender_share}, lender_strategy, -1 if lender_strategy == "LEND" else 100),
        "borrower": ShareTerms({G5: borrower_share}, "LEND_AND_BORROW", borrow_limit, preemptible=True),
        "keeper": ShareTerms({G5: keeper_share}, "RESERVE"),
    }
    run = Run(shares, {G5: lender_share + borrower_share + keeper_share})
    for parallel in borrower_jobs:
        run.apply(run.step(("borrower", parallel, {G5: 1}, 0, False)))
    # When the lender asks for what fits its share
    decisions = run.step(("lender", min(lender_parallel, lender_share), {G5: 1}, 0, False))
    run.apply(decisions)
    lender_key = f"r{run.n}"
    if by_key(decisions)[lender_key].action == "admit":
        return
    # Then borrowers are stopped for it, and the next pass admits it
    assert {d.for_key for d in decisions if d.action == "preempt"} == {lender_key}
    assert by_key(schedule(run.queued, run.held, run.shares, run.quota, run.clock))[lender_key].action == "admit"
