"""``tuning-governor report --account``: one account's jobs (organisation mode, issue 29).

A member's job has the key ``<account>/<region>/<name>``; a job of the hub's own account keeps its
plain key. On moto, a home job and a member job of the same name run through the real handlers; the
report of each account shows its own job only, and its page is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from governor_client.report.command import add_arguments
from governor_client.report.page import Account, collect, write_report
from tests.integration.conftest import World
from tests.integration.test_jobs_per_place import HOME, MEMBER, NAME, _member_world, _request, _run


@pytest.mark.usefixtures("roomy_quota")
def test_the_report_of_one_account_holds_its_jobs_only(world: World, tmp_path: Path) -> None:
    member, _ = _member_world(world, "mode: monitor\n")
    # Given a job named NAME at home and one of the same name in a member account's region
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request(None, max_jobs=2))
    member.create_hyper_parameter_tuning_job(**_request(None, max_jobs=2))
    _run(world)
    store = world.env.services.store
    away_key = f"{MEMBER.account}/{MEMBER.region}/{NAME}"
    assert {v.key for v in collect(store)} == {NAME, away_key}

    # When the report is narrowed to the member's account, then to the hub's own
    theirs = collect(store, account=Account(MEMBER.account, HOME.account))
    ours = collect(store, account=Account(HOME.account, HOME.account))
    nobody = collect(store, account=Account("333333333333", HOME.account))

    # Then each holds its own account's job only (a plain key is the hub's)
    assert [v.key for v in theirs] == [away_key]
    assert [v.key for v in ours] == [NAME]
    assert nobody == []
    assert theirs[0].trials and all(t.job_key == away_key for t in theirs[0].trials)
    # And the member's page is written with its job, its PNGs beside it (a key's "/" is no folder)
    page = write_report(store, tmp_path / "member", title="t", account=Account(MEMBER.account, HOME.account))
    assert NAME in page.read_text()
    assert sorted(p.name for p in page.parent.glob("*-cost.png")) == [
        f"{MEMBER.account}_{MEMBER.region}_{NAME}-cost.png"
    ]


def test_report_takes_an_account_id_and_refuses_anything_else() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--table", "t", "--account", MEMBER.account, "--home-account", HOME.account])
    assert (args.account, args.home_account) == (MEMBER.account, HOME.account)
    with pytest.raises(SystemExit):
        parser.parse_args(["--table", "t", "--account", "not-an-account"])
