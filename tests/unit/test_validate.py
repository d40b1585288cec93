"""``tuning-governor validate``: exit 0 good, 1 warnings, 2 broken; text for people, JSON for CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest

from governor_client import validate
from governor_client.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "validate-result.schema.json"

GOOD = """\
mode: enforce
quotas: {ml.p3.2xlarge: 8}
teams:
  vision:
    instances: {ml.p3.2xlarge: 4}
    job_budget_usd: 500
    monthly_budget_usd: 20000
defaults: {job_budget_usd: 1000, max_runtime_hours: 48}
"""

WARNED = """\
quotas: {ml.p3.2xlarge: 8, ml.g5.xlarg: 4}
teams:
  vision:
    instances: {ml.p3.2xlarge: 12}
    job_budget_usd: 10
    monthly_budget_usd: 5
  nlp:
    budget_usd: 300
defaults: {job_budget_usd: 2}
"""

BROKEN = """\
mode: enforce
teams:
  vision:
    instance: {ml.p3.2xlarge: 4}
defaults: {job_budget_usd: -5}
"""


def _run(tmp_path: Path, text: str, *extra: str, name: str = "policy.yaml") -> int:
    path = tmp_path / name
    path.write_text(text)
    return main(["validate", str(path), *extra])


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return dict(json.loads(capsys.readouterr().out))


def _codes(result: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(f["severity"], f["code"], f["path"]) for f in result["findings"]]


def test_a_good_policy_exits_0_with_only_a_note_that_quotas_were_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, GOOD) == 0
    out = capsys.readouterr().out
    assert "[quotas-not-checked]" in out
    assert out.rstrip().endswith("ok (0 errors, 0 warnings, 1 notes)")


def test_a_warned_policy_exits_1_and_names_each_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, WARNED, "--format", "json") == 1
    result = _json(capsys)
    assert result["status"] == "warnings" and result["exit_code"] == 1
    assert _codes(result) == [
        ("warning", "deprecated-key", "teams.nlp.budget_usd"),
        ("warning", "monitor-mode-stops-nothing", "mode"),
        # 12 x $3.825/h = $45.90 > $10: the team's job budget is gone in 13 minutes at its limit
        ("warning", "budget-below-one-hour", "teams.vision.job_budget_usd"),
        ("warning", "monthly-below-job-budget", "teams.vision.monthly_budget_usd"),
        # $2 < one hour of one ml.p3.2xlarge ($3.825)
        ("warning", "budget-below-one-hour", "defaults.job_budget_usd"),
        ("warning", "team-limit-above-quota", 'teams.vision.instances["ml.p3.2xlarge"]'),
        ("warning", "unpriced-instance-type", 'quotas["ml.g5.xlarg"]'),
        ("note", "quotas-not-checked", "quotas"),
    ]
    messages = {f["code"]: f["message"] for f in reversed(result["findings"])}  # the first of each code
    assert "no job will be stopped" in messages["monitor-mode-stops-nothing"]
    assert "(the default: mode is not set)" in messages["monitor-mode-stops-nothing"]
    assert "12 x $3.825/h = $45.90 in us-east-1" in messages["budget-below-one-hour"]
    assert "13 minutes" in messages["budget-below-one-hour"]
    assert "did you mean ml.g5.xlarge?" in messages["unpriced-instance-type"]
    assert "rename it to teams.nlp.job_budget_usd" in messages["deprecated-key"]


def test_a_broken_policy_exits_2_with_the_path_and_the_nearest_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, BROKEN, "--format", "json") == 2
    result = _json(capsys)
    assert result["status"] == "broken"
    paths = {f["path"]: f["message"] for f in result["findings"]}
    assert set(paths) == {"teams.vision.instance", "defaults.job_budget_usd"}
    assert 'did you mean "instances"?' in paths["teams.vision.instance"]
    assert "expected a number >= 0, got -5" in paths["defaults.job_budget_usd"]
    assert all(f["severity"] == "error" for f in result["findings"])


@pytest.mark.parametrize(
    "text",
    ["mode: enforce\n  teams: [\n", "", "- a list\n", '{"mode": "enforce", "mode": "monitor"}'],
    ids=["syntax", "empty", "not-a-mapping", "duplicate-json-key"],
)
def test_unparseable_policies_are_broken(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    assert _run(tmp_path, text) == 2
    assert "broken (" in capsys.readouterr().out


def test_an_unreadable_file_exits_2_with_one_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1


def test_policy_prices_fill_the_catalog_gaps_before_judging_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A type the catalog lacks, priced by the policy: judged at the policy's price, not reported unpriced.
    text = "mode: enforce\nprices: {ml.zz9.huge: 100}\nteams: {a: {instances: {ml.zz9.huge: 1}, job_budget_usd: 50}}\n"
    assert _run(tmp_path, text, "--format", "json") == 1
    assert [f[1] for f in _codes(_json(capsys))] == ["budget-below-one-hour", "quotas-not-checked"]


def test_the_region_changes_the_price_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "mode: enforce\nteams: {a: {instances: {ml.g6.xlarge: 1}, job_budget_usd: 1.5}}\n"
    assert _run(tmp_path, text, "--format", "json") == 0  # $1.127/h in us-east-1 (bundled catalog)
    assert _json(capsys)["region"] == "us-east-1"
    assert _run(tmp_path, text, "--format", "json", "--region", "ap-northeast-1") == 1  # $1.634/h there
    assert _codes(_json(capsys))[0] == ("warning", "budget-below-one-hour", "teams.a.job_budget_usd")


def test_the_json_output_follows_the_published_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema == json.loads(json.dumps(validate.json_schema(), sort_keys=True)), (
        "docs/validate-result.schema.json is stale: run"
        " `.venv/bin/python -m governor_client.validate > docs/validate-result.schema.json`"
    )
    for text in (GOOD, WARNED, BROKEN):
        _run(tmp_path, text, "--format", "json")
        result = _json(capsys)
        jsonschema.validate(result, schema)
        assert result["schema_id"] == "tuning-governor/validate-result/v1"
        assert set(result) == {"schema_id", "policy", "status", "exit_code", "region", "account_checked", "findings"}


def test_the_bundled_and_example_policies_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    bundled = ROOT / "layers" / "governor" / "tuning_governor" / "data" / "default-policy.yaml"
    assert main(["validate", str(bundled)]) == 0
    assert main(["validate", str(ROOT / "policy.example.yaml")]) in (0, 1)
    assert "broken" not in capsys.readouterr().out


def test_a_grace_period_for_a_rule_that_is_off_is_warned_and_a_concurrency_grace_is_broken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graced = (
        "mode: enforce\ndefaults: {max_failed_trials: 3, grace_minutes: {budget: 30, runtime: 15, failed-trials: 5}}\n"
    )
    assert _run(tmp_path, graced, "--format", "json") == 1
    result = _json(capsys)
    # budget: a tag can always set one; failed-trials is on; runtime is off
    assert _codes(result) == [("warning", "grace-for-a-rule-that-is-off", "defaults.grace_minutes.runtime")]
    assert _run(tmp_path, "defaults: {grace_minutes: {concurrency: 5}}\n", "--format", "json") == 2
    broken = _json(capsys)
    [finding] = broken["findings"]
    assert finding["path"] == "defaults.grace_minutes"
    assert finding["message"].startswith("concurrency: concurrency is judged once, when the job arrives")


TEAM_CHANNELS = """\
mode: enforce
teams:
  vision:
    slack_secret: elsewhere/vision
    sns_topic_arn: arn:aws:sns:us-east-1:123456789012:tg-team-vision
  nlp:
    slack_secret: tuning-governor/teams/nlp
    sns_topic_arn: arn:aws:sns:eu-west-1:123456789012:tg-team-nlp
slack_users: {alice@example.com: U012AB3CD}
"""


@pytest.fixture
def no_stack_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_SECRET_PREFIX", raising=False)
    monkeypatch.delenv("TEAM_TOPIC_PREFIX", raising=False)


def test_team_channels_outside_the_stacks_prefixes_are_warned_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_stack_prefixes: None
) -> None:
    # Given the stack's prefixes on the command line
    prefixes = ("--slack-secret-prefix", "tuning-governor/teams/", "--team-topic-prefix", "tg-team-")
    assert _run(tmp_path, TEAM_CHANNELS, "--format", "json", *prefixes) == 1
    result = _json(capsys)
    # Then each channel the governor would not use is a warning at its path, saying why
    assert _codes(result) == [
        ("warning", "team-channel-not-granted", "teams.nlp.sns_topic_arn"),
        ("warning", "team-channel-not-granted", "teams.vision.slack_secret"),
    ]
    messages = [f["message"] for f in result["findings"]]
    assert "not the stack's region us-east-1" in messages[0]
    assert 'not under the stack\'s SlackSecretPrefix "tuning-governor/teams/"' in messages[1]


def test_the_prefixes_may_come_from_the_functions_environment_variables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, no_stack_prefixes: None
) -> None:
    # Given only SLACK_SECRET_PREFIX known (as the functions have it), the topics unknown
    monkeypatch.setenv("SLACK_SECRET_PREFIX", "tuning-governor/teams/")
    assert _run(tmp_path, TEAM_CHANNELS, "--format", "json") == 1
    # Then the secrets are checked and the topics are noted as not checked
    assert _codes(_json(capsys)) == [
        ("warning", "team-channel-not-granted", "teams.vision.slack_secret"),
        ("note", "team-channels-not-checked", None),
    ]


def test_team_channels_within_the_prefixes_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_stack_prefixes: None
) -> None:
    text = TEAM_CHANNELS.replace("elsewhere/", "tuning-governor/teams/").replace("eu-west-1", "us-east-1")
    prefixes = ("--slack-secret-prefix", "tuning-governor/teams/", "--team-topic-prefix", "tg-team-")
    assert _run(tmp_path, text, *prefixes) == 0
    assert capsys.readouterr().out.rstrip().endswith("ok (0 errors, 0 warnings, 0 notes)")
    # and without the prefixes they are noted, not warned
    assert _run(tmp_path, text, "--format", "json") == 0
    assert _codes(_json(capsys)) == [("note", "team-channels-not-checked", None)]


def test_budgets_quotas_and_times_past_their_documented_range_are_broken_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given numbers past the policy's documented ranges (issue 18, finding 6: a budget of 1e30 used to be
    # accepted, then failed every judgement with OverflowError)
    text = """\
mode: enforce
quotas: {ml.p3.2xlarge: 10000000}
teams:
  vision: {monthly_budget_usd: 2000000000}
defaults:
  job_budget_usd: 1e30
  max_runtime_hours: 1.0e+300
  stagnation_usd: "0.12345678901234567890123456789012345678901"
"""
    # When validated, Then it is broken, each number named by its path with the range it must be in
    assert _run(tmp_path, text, "--format", "json") == 2
    paths = {f["path"]: f["message"] for f in _json(capsys)["findings"]}
    assert set(paths) == {
        'quotas["ml.p3.2xlarge"]',
        "teams.vision.monthly_budget_usd",
        "defaults.job_budget_usd",
        "defaults.max_runtime_hours",
        "defaults.stagnation_usd",
    }, paths
    assert "1000000" in paths['quotas["ml.p3.2xlarge"]']
    assert "1000000000" in paths["defaults.job_budget_usd"]
    assert "1000000000" in paths["teams.vision.monthly_budget_usd"]
    assert "87600" in paths["defaults.max_runtime_hours"]
    assert "38 significant digits" in paths["defaults.stagnation_usd"]


@pytest.mark.parametrize("prices", ["{ml.p3.2xlarge: 1.0e+300}", "{eu-west-1: {ml.p3.2xlarge: 20000}}"])
def test_a_price_past_its_range_is_broken_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str
) -> None:
    # Given a policy price no instance costs (issue 18, finding 6: 1e300 $/h made every accrual raise
    # decimal.InvalidOperation when rounded to the micro-dollar)
    text = f"mode: enforce\ndefaults: {{job_budget_usd: 100}}\nquotas: {{ml.p3.2xlarge: 8}}\nprices: {prices}\n"
    # When validated, Then it is broken at the price's path, naming the largest price
    assert _run(tmp_path, text, "--format", "json") == 2
    findings = _json(capsys)["findings"]
    errors = [f["path"] for f in findings if f["severity"] == "error"]
    assert errors and all(path.startswith("prices") for path in errors), errors
    assert any("10000" in f["message"] for f in findings)
