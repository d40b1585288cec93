"""The demo's organisation act (issue 29): three member accounts, one team across two, one broken role.

The act runs on its own moto; what it reports is checked against moto's own per-account, per-region
SageMaker state (``moto.sagemaker.models.sagemaker_backends[account][region]``), read while it lives.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from moto.sagemaker.models import sagemaker_backends

from governor_client.demo import org as demo_org
from governor_client.demo.acts import START
from governor_client.demo.org import BROKEN, JOBS, MEMBERS, VISION_EAST, VISION_WEST


def _moto_jobs() -> dict[str, str]:
    """Every tuning job moto holds in each member account and each of the act's regions, with its status."""
    found = {}
    for account in {p.account for p in MEMBERS}:
        for region in ("us-east-1", "eu-west-1"):
            for name, job in sagemaker_backends[account][region].hyper_parameter_tuning_jobs.items():
                found[f"{account}/{region}/{name}"] = job.hyper_parameter_tuning_job_status
    return found


@pytest.fixture(scope="module")
def act() -> tuple[demo_org.OrgResult, dict[str, str]]:
    seen: dict[str, str] = {}
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(key, "testing")
        result = demo_org.run_organisation_act(START, look=lambda: seen.update(_moto_jobs()))
    return result, seen


def key(place: Any) -> str:
    return f"{place}/{JOBS[place][0]}"


def test_each_job_is_in_its_own_account_and_region_only(act: tuple[demo_org.OrgResult, dict[str, str]]) -> None:
    _, moto_jobs = act
    assert set(moto_jobs) == {key(p) for p in MEMBERS}


def test_the_team_spanning_two_accounts_is_stopped_in_the_account_that_crosses_it(
    act: tuple[demo_org.OrgResult, dict[str, str]],
) -> None:
    result, moto_jobs = act
    assert result.stops == [key(VISION_WEST)]
    assert moto_jobs[key(VISION_WEST)] in {"Stopping", "Stopped"}
    assert moto_jobs[key(VISION_EAST)] == "Completed"
    assert result.team_breach is not None and float(result.team_breach["numbers"]["spent_usd"]) >= 60
    assert result.team_spent_usd >= 60


def test_the_broken_member_is_unmanaged_retried_and_never_acted_on(
    act: tuple[demo_org.OrgResult, dict[str, str]],
) -> None:
    result, moto_jobs = act
    # Its $50 budget is overrun, but the hub cannot reach it: it runs to its end, untouched
    assert moto_jobs[key(BROKEN)] == "Completed"
    assert not any(stop.startswith(BROKEN.account) for stop in result.stops)
    # Its events failed (EventBridge retries them), and the sweeps said it was unreachable; nobody else failed
    assert set(result.retried) == {BROKEN.account} and result.retried[BROKEN.account] > 0
    assert set(result.unreachable) == {str(BROKEN)} and result.unreachable[str(BROKEN)] > 0
    assert result.errors == []


def test_the_acts_section_says_per_account_what_happened(act: tuple[demo_org.OrgResult, dict[str, str]]) -> None:
    result, _ = act
    out = io.StringIO()
    demo_org.print_organisation(result, out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines()[3:6]}
    assert "Completed" in lines[VISION_EAST.account] and "not stopped" in lines[VISION_EAST.account]
    assert "Stopped" in lines[VISION_WEST.account] and "team vision's month crossed" in lines[VISION_WEST.account]
    assert "unmanaged" in lines[BROKEN.account] and "nothing acted on" in lines[BROKEN.account]


def test_each_member_accounts_page_holds_its_own_job_only(tmp_path: Any) -> None:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(name, "testing")
        result = demo_org.run_organisation_act(START, report_dir=tmp_path)
    assert set(result.reports) == {p.account for p in MEMBERS}
    west = result.reports[VISION_WEST.account].read_text()
    assert JOBS[VISION_WEST][0] in west and JOBS[VISION_EAST][0] not in west
    assert JOBS[BROKEN][0] not in result.reports[BROKEN.account].read_text()  # never reached: the hub holds nothing
