"""The governance policy: validation with exact key paths, query helpers, precedence, and the loader's cache."""

from __future__ import annotations

import json
from decimal import Decimal
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tuning_governor.errors import Disposition, disposition
from tuning_governor.policy import (
    Budget,
    FilePolicySource,
    Policy,
    PolicyError,
    PolicySource,
    PolicyUnavailable,
    bundled_policy_source,
    load_policy,
    parse_policy,
    policy_source,
    render_path,
)
from tuning_governor.policy import (
    Defaults as PolicyDefaults,
)
from tuning_governor.policy import (
    TeamPolicy as Team,
)
from tuning_governor.policy.model import DEPRECATED_KEYS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "policy.example.yaml"


def problems_of(text: str) -> tuple[str, ...]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test")
    return caught.value.problems


# -- documents that parse -------------------------------------------------------------------------------
def test_the_example_policy_parses_and_means_what_its_comments_say() -> None:
    policy = parse_policy(EXAMPLE.read_text(), str(EXAMPLE))

    assert policy.mode == "enforce" and policy.enforcing
    assert policy.quotas["ml.p3.2xlarge"] == 8
    assert policy.teams["vision"].instances == {"ml.p3.2xlarge": 4}
    assert policy.teams["vision"].job_budget_usd == Decimal(500)
    assert policy.teams["vision"].monthly_budget_usd == Decimal(20000)
    assert policy.teams["nlp"].job_budget_usd is None
    assert policy.team_monthly_budget("nlp") is None
    assert policy.teams["vision"].slack_secret == "tuning-governor/teams/vision"
    assert policy.teams["nlp"].sns_topic_arn is None
    assert policy.slack_member("alice@example.com") == "U012AB3CD"
    assert policy.defaults.job_budget_usd == Decimal(1000)
    # the example uses no deprecated key
    assert policy.warnings() == []
    assert policy.defaults.max_runtime_hours == 48
    assert policy.prices == {"ml.p3.2xlarge": Decimal("3.825")}
    # nlp sets no budget, so its jobs get the default
    assert policy.budget_for({"team": "nlp"}) == Budget(usd=Decimal(1000), source="default")


def test_the_bundled_default_is_conservative() -> None:
    loaded = load_policy()

    assert loaded.source == "bundled:default-policy.yaml"
    assert loaded.error is None and not loaded.stale
    policy = loaded.policy
    assert policy.mode == "monitor" and not policy.enforcing
    assert policy.budget_for({"team": "vision"}) == Budget(usd=None, source="none")
    assert policy.defaults == PolicyDefaults(budget_usd=None, max_runtime_hours=0, stagnation_trials=0)
    assert policy.quotas == {} and policy.teams == {} and policy.prices == {}
    assert policy == Policy()  # the file and the model's defaults say the same thing


def test_an_empty_mapping_is_the_harmless_policy() -> None:
    policy = parse_policy("{}", "test")

    assert policy.mode == "monitor"
    assert (policy.exempt_tag, policy.team_tag, policy.budget_tag) == (
        "governance:exempt",
        "team",
        "governance:budget-usd",
    )
    assert policy.defaults.max_runtime_hours == 0
    assert policy.defaults.stagnation_trials == 0 and policy.defaults.max_failed_trials == 0


def test_sections_left_empty_in_yaml_mean_none() -> None:
    # Given sections whose entries were all commented out, which YAML reads as null
    text = "quotas:\n  # ml.p3.2xlarge: 8\nteams:\n  vision:\n  nlp:\n    instances:\ndefaults:\nprices:\n"

    policy = parse_policy(text, "test")

    assert policy.quotas == {} and policy.prices == {}
    assert policy.teams == {"vision": Team(), "nlp": Team()}
    assert policy.defaults == PolicyDefaults()


def test_json_and_yaml_give_the_same_policy() -> None:
    yaml_text = EXAMPLE.read_text()
    as_json = json.dumps(
        {
            "mode": "enforce",
            "exempt_tag": "governance:exempt",
            "team_tag": "team",
            "budget_tag": "governance:budget-usd",
            "quotas": {"ml.p3.2xlarge": 8, "ml.g5.xlarge": 16},
            "spot_quotas": {"ml.g5.xlarge": 8},
            "teams": {
                "vision": {
                    "instances": {"ml.p3.2xlarge": 4},
                    "job_budget_usd": 500,
                    "monthly_budget_usd": 20000,
                    "slack_secret": "tuning-governor/teams/vision",
                    "sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:tg-team-vision",
                },
                "nlp": {"instances": {"ml.g5.xlarge": 8}},
            },
            "slack_users": {"alice@example.com": "U012AB3CD"},
            "defaults": {
                "job_budget_usd": 1000,
                "max_runtime_hours": 48,
                "stagnation_trials": 0,
                "max_failed_trials": 0,
                "grace_minutes": {"budget": 0},
            },
            "prices": {"ml.p3.2xlarge": 3.825},
        },
        indent=2,
    )

    assert parse_policy(as_json, "json") == parse_policy(yaml_text, "yaml")


def test_money_keeps_the_figures_as_written() -> None:
    policy = parse_policy('{"prices": {"ml.g5.xlarge": 1.408}, "defaults": {"budget_usd": "99.99"}}', "json")

    assert policy.prices["ml.g5.xlarge"] == Decimal("1.408")
    assert policy.defaults.budget_usd == Decimal("99.99")


def test_every_type_of_the_bundled_price_catalog_is_a_valid_policy_key() -> None:
    raw = json.loads(resources.files("tuning_governor.data").joinpath("prices.json").read_text())
    types = sorted({itype for region in raw["regions"].values() for itype in region})

    policy = Policy.model_validate({"quotas": dict.fromkeys(types, 1)})

    assert sorted(policy.quotas) == types


# -- validation: one bad key each, reported at its exact path ----------------------------------------------
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("mode: enforse", "mode: expected 'enforce' or 'monitor', got \"enforse\""),
        ("mode:", "mode: expected 'enforce' or 'monitor', got null"),
        ("exempt_tag: ''", 'exempt_tag: expected a non-empty string, got ""'),
        ("team_tag: 3", "team_tag: expected a string, got 3"),
        ("budget_tag: true", "budget_tag: expected a string, got true"),
        (
            "quota: {}",
            'quota: unknown key; did you mean "quotas"? expected one of: accounts, budget_tag, defaults, exempt_tag, '
            "large_batch, mode, prices, quotas, slack_users, spot_quotas, team_tag, teams",
        ),
        (
            "quotas: {ML.P3.2XLARGE: 8}",
            'quotas["ML.P3.2XLARGE"]: bad key: expected a SageMaker instance type ml.<family>.<size> in lower case, '
            "e.g. ml.p3.2xlarge",
        ),
        (
            "quotas: {p3.2xlarge: 8}",
            'quotas["p3.2xlarge"]: bad key: expected a SageMaker instance type ml.<family>.<size> in lower case, '
            "e.g. ml.p3.2xlarge",
        ),
        ("quotas: {ml.p3.2xlarge: -1}", 'quotas["ml.p3.2xlarge"]: expected a number >= 0, got -1'),
        ("quotas: {ml.p3.2xlarge: 2.5}", 'quotas["ml.p3.2xlarge"]: expected a whole number, got 2.5'),
        ("quotas: {ml.p3.2xlarge: yes}", 'quotas["ml.p3.2xlarge"]: expected a whole number, got true'),
        ('quotas: {ml.p3.2xlarge: "8"}', 'quotas["ml.p3.2xlarge"]: expected a whole number, got "8"'),
        ("quotas: [ml.p3.2xlarge]", "quotas: expected a mapping, got a list"),
        ("teams: {vision: [a]}", "teams.vision: expected a mapping, got a list"),
        ("teams: {1: {}}", "teams[1]: bad key: expected a string"),
        ('teams: {"": {}}', 'teams[""]: bad key: expected a non-empty string'),
        ("teams: {équipe: {budget_usd: -1}}", 'teams["équipe"].budget_usd: expected a number >= 0, got -1'),
        (
            "teams: {vision: {instances: {ml.p3.2xlarge: -4}}}",
            'teams.vision.instances["ml.p3.2xlarge"]: expected a number >= 0, got -4',
        ),
        (
            "teams: {vision: {instances: {ml.p3: 4}}}",
            'teams.vision.instances["ml.p3"]: bad key: expected a SageMaker instance type ml.<family>.<size> in '
            "lower case, e.g. ml.p3.2xlarge",
        ),
        ("teams: {vision: {budget_usd: -1}}", "teams.vision.budget_usd: expected a number >= 0, got -1"),
        ("teams: {vision: {budget_usd: lots}}", 'teams.vision.budget_usd: expected a number, got "lots"'),
        ("teams: {vision: {budget_usd: true}}", "teams.vision.budget_usd: expected a number, got true"),
        (
            "teams: {vision: {budgets: 1}}",
            # the deprecated budget_usd is still read, but never suggested
            'teams.vision.budgets: unknown key; did you mean "job_budget_usd"? expected one of: channels, execution_roles, instances, '
            "job_budget_usd, max_wait_minutes, monthly_budget_usd, queue_priority, share, slack_secret, sns_topic_arn,"
            " submitters",
        ),
        ('teams: {"ml team": {budget_usd: -1}}', 'teams["ml team"].budget_usd: expected a number >= 0, got -1'),
        ("teams: {ml.vision: {budget_usd: -1}}", 'teams["ml.vision"].budget_usd: expected a number >= 0, got -1'),
        ("defaults: {budget_usd: -0.01}", "defaults.budget_usd: expected a number >= 0, got -0.01"),
        ("defaults: {budget_usd: .nan}", "defaults.budget_usd: expected a finite number, got nan"),
        ("defaults: {max_runtime_hours: -1}", "defaults.max_runtime_hours: expected a number >= 0, got -1"),
        ("defaults: {max_runtime_hours: .inf}", "defaults.max_runtime_hours: expected a finite number, got inf"),
        ('defaults: {max_runtime_hours: "48"}', 'defaults.max_runtime_hours: expected a number, got "48"'),
        ("defaults: {max_runtime_hours: on}", "defaults.max_runtime_hours: expected a number, got true"),
        ("defaults: {stagnation_trials: -1}", "defaults.stagnation_trials: expected a number >= 0, got -1"),
        ("defaults: {max_failed_trials: 1.5}", "defaults.max_failed_trials: expected a whole number, got 1.5"),
        (
            "defaults: {max_runtime: 48}",
            'defaults.max_runtime: unknown key; did you mean "max_runtime_hours"? expected one of: '
            # Every key of the defaults model but the deprecated one (a new rule's key joins the list).
            + ", ".join(sorted(set(PolicyDefaults.model_fields) - DEPRECATED_KEYS)),
        ),
        ("defaults: 48", "defaults: expected a mapping, got 48"),
        ("prices: {ml.p3.2xlarge: 0}", 'prices["ml.p3.2xlarge"]: expected a number > 0, got 0'),
        ("prices: {ml.p3.2xlarge: free}", 'prices["ml.p3.2xlarge"]: expected a number, got "free"'),
        (
            "prices: {ML.P3.2xlarge: 3}",
            # A prices key may also be a region (per-region prices), and the message says so.
            'prices["ML.P3.2xlarge"]: bad key: expected an instance type ml.<family>.<size> in lower case (a price'
            " for every region) or a region such as eu-west-1 (a mapping of prices for that region)",
        ),
    ],
)
def test_a_bad_key_is_reported_with_its_path_what_was_expected_and_what_was_given(text: str, problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "ssm:/governor/policy")

    assert caught.value.problems == (problem,)
    assert str(caught.value) == f"policy ssm:/governor/policy is invalid:\n  - {problem}"


def test_a_too_long_tag_key_is_refused() -> None:
    (problem,) = problems_of(f"budget_tag: {'b' * 129}")

    assert problem.startswith('budget_tag: expected at most 128 characters, got "bbb')
    assert problem.endswith('..."')


def test_every_problem_is_listed_but_the_message_stays_short() -> None:
    # Given twenty bad quotas with long keys
    text = "quotas:\n" + "".join(f"  ml.p{i}.{'x' * 150}: -1\n" for i in range(20))

    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test")

    assert len(caught.value.problems) == 20
    message = str(caught.value)
    assert len(message) <= 1000
    listed = message.count("\n  - ")
    assert 1 <= listed <= 8
    assert message.endswith(f"\n  ... and {20 - listed} more")


def test_at_most_eight_problems_are_spelt_out() -> None:
    text = "quotas:\n" + "".join(f"  ml.p{i}.xlarge: -1\n" for i in range(20))

    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "test")

    assert str(caught.value).count("\n  - ") == 8
    assert str(caught.value).endswith("\n  ... and 12 more")


def test_ml_typed_and_dotted_team_names_are_quoted_in_paths() -> None:
    assert render_path(("teams", "vision", "instances", "ml.p3.2xlarge")) == 'teams.vision.instances["ml.p3.2xlarge"]'
    assert render_path(("teams", "a team", "budget_usd")) == 'teams["a team"].budget_usd'
    assert render_path(("teams", 'say "hi"')) == 'teams["say \\"hi\\""]'
    assert render_path(()) == "<document>"


# -- documents that are not policies ----------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", "   \n", "# nothing but a comment\n", "---\n", "\ufeff"])
def test_an_empty_document_is_refused(text: str) -> None:
    with pytest.raises(PolicyError, match=r"^policy test is empty \(an empty policy must be written as \{\}\)$"):
        parse_policy(text, "test")


@pytest.mark.parametrize(
    ("text", "kind"),
    [("- mode: enforce\n", "a list"), ("enforce\n", "a string"), ("42\n", "a number"), ("true\n", "a boolean")],
)
def test_a_document_that_is_not_a_mapping_is_refused(text: str, kind: str) -> None:
    assert problems_of(text) == (f"the document is {kind}, expected a mapping of keys",)


def test_a_yaml_syntax_error_names_its_line() -> None:
    text = "mode: enforce\nquotas:\n  ml.p3.2xlarge: 8\n   ml.g5.xlarge: 4\n"

    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "file:policy.yaml")

    assert str(caught.value).startswith("policy file:policy.yaml is not valid YAML:\n  - line 4, column ")
    assert "mapping values are not allowed here" in caught.value.problems[0]


def test_a_duplicate_yaml_key_is_refused_with_its_line() -> None:
    # PyYAML alone would keep the second team silently
    text = "teams:\n  vision: {budget_usd: 500}\n  vision: {budget_usd: 5000}\n"

    assert problems_of(text) == ('line 3, column 3: duplicate key "vision"',)


def test_a_json_syntax_error_names_its_line_and_column() -> None:
    text = '{\n  "mode": "enforce",\n  "quotas": {"ml.p3.2xlarge": 8,}\n'

    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "ssm:/p")

    assert str(caught.value).startswith("policy ssm:/p is not valid JSON:")
    assert caught.value.problems[0].startswith("line 3, column ")


def test_a_duplicate_json_key_is_refused() -> None:
    assert problems_of('{"mode": "enforce", "mode": "monitor"}') == ('JSON: duplicate key "mode"',)


def test_a_yaml_flow_mapping_is_still_read_as_yaml() -> None:
    assert parse_policy("{mode: enforce, quotas: {ml.p3.2xlarge: 8}}", "test").quotas == {"ml.p3.2xlarge": 8}


def test_a_policy_error_is_a_value_error_retried_like_a_transient_one() -> None:
    error = PolicyError("test", ["mode: bad"])

    assert isinstance(error, ValueError)
    assert disposition(error) is Disposition.RETRY
    assert disposition(PolicyUnavailable("test", "gone")) is Disposition.RETRY


def test_a_policy_cannot_be_changed_in_place() -> None:
    policy = parse_policy(EXAMPLE.read_text(), "example")

    with pytest.raises(ValidationError):
        policy.mode = "monitor"  # type: ignore[misc]
    overrides = policy.price_overrides()
    overrides["ml.p3.2xlarge"] = Decimal(0)
    assert policy.price_overrides() == {"ml.p3.2xlarge": Decimal("3.825")}


# -- query helpers ----------------------------------------------------------------------------------------
@pytest.fixture
def policy() -> Policy:
    return parse_policy(EXAMPLE.read_text(), "example")


@pytest.mark.parametrize(
    ("tags", "team"),
    [({"team": "vision"}, "vision"), ({"team": "  nlp "}, "nlp"), ({"team": "  "}, None), ({}, None),
     ({"Team": "vision"}, None), ({"team": "unlisted"}, "unlisted")],
)  # fmt: skip
def test_the_team_is_the_trimmed_value_of_the_team_tag(policy: Policy, tags: dict[str, str], team: str | None) -> None:
    assert policy.team_of(tags) == team


def test_the_team_tag_key_comes_from_the_policy() -> None:
    policy = parse_policy("team_tag: cost-centre", "test")

    assert policy.team_of({"cost-centre": "vision", "team": "nlp"}) == "vision"


@pytest.mark.parametrize("value", ["true", "TRUE", "True", "  true ", "true\n"])
def test_true_in_any_case_exempts_a_job(policy: Policy, value: str) -> None:
    assert policy.is_exempt({"governance:exempt": value})


@pytest.mark.parametrize("value", ["yes", "1", "", "false", "truee", "t rue"])
def test_anything_but_true_does_not_exempt_a_job(policy: Policy, value: str) -> None:
    assert not policy.is_exempt({"governance:exempt": value})


def test_the_exempt_tag_key_is_exact(policy: Policy) -> None:
    assert not policy.is_exempt({})
    assert not policy.is_exempt({"Governance:Exempt": "true"})
    assert parse_policy("exempt_tag: finops/skip", "test").is_exempt({"finops/skip": "True"})


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        # the tag beats the team and the default
        ({"team": "vision", "governance:budget-usd": "250"}, Budget(usd=Decimal(250), source="tag")),
        ({"governance:budget-usd": " 99.50 "}, Budget(usd=Decimal("99.50"), source="tag")),
        # a tag of 0 means no budget for this job
        ({"team": "vision", "governance:budget-usd": "0"}, Budget(usd=None, source="tag")),
        # the team beats the default
        ({"team": "vision"}, Budget(usd=Decimal(500), source="team")),
        # a team without a budget, or no team, falls back to the default
        ({"team": "nlp"}, Budget(usd=Decimal(1000), source="default")),
        ({"team": "unlisted"}, Budget(usd=Decimal(1000), source="default")),
        ({}, Budget(usd=Decimal(1000), source="default")),
    ],
)
def test_budget_precedence_is_tag_then_team_then_default(
    policy: Policy, tags: dict[str, str], expected: Budget
) -> None:
    assert policy.budget_for(tags) == expected


# "$250", "250 USD" and "1,000" are budgets now (see test_tags.py); these are not.
@pytest.mark.parametrize("value", ["-5", "$-250", "lots", "", "1e3", "250 EUR", "nan", "Infinity", "1,00"])
def test_an_invalid_budget_tag_is_ignored_with_a_warning(policy: Policy, value: str) -> None:
    budget = policy.budget_for({"team": "vision", "governance:budget-usd": value})

    assert (budget.usd, budget.source) == (Decimal(500), "team")
    assert budget.warning == (
        f"tag governance:budget-usd={json.dumps(value)} ignored: not an amount of USD"
        " (e.g. 250, 99.50, 250 USD or USD 1,000); the next budget source applies"
    )


def test_a_team_budget_of_zero_opts_the_team_out_of_the_default() -> None:
    policy = parse_policy("teams: {research: {budget_usd: 0}}\ndefaults: {budget_usd: 1000}", "test")

    assert policy.budget_for({"team": "research"}) == Budget(usd=None, source="team")
    assert policy.budget_for({"team": "other"}) == Budget(usd=Decimal(1000), source="default")


def test_a_default_budget_of_zero_or_null_is_no_budget() -> None:
    assert parse_policy("defaults: {budget_usd: 0}", "t").budget_for({}) == Budget(usd=None, source="default")
    assert parse_policy("defaults: {budget_usd: null}", "t").budget_for({}) == Budget(usd=None, source="none")


def test_the_budget_tag_key_comes_from_the_policy() -> None:
    policy = parse_policy("budget_tag: finops/budget\ndefaults: {budget_usd: 10}", "test")

    assert policy.budget_for({"finops/budget": "20", "governance:budget-usd": "30"}) == Budget(
        usd=Decimal(20), source="tag"
    )


money = st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False)


@given(
    tag=st.one_of(st.none(), money.map(str), st.sampled_from(["-1", "abc", "", "1e3", "5 EUR"])),
    team_budget=st.one_of(st.none(), money),
    team_listed=st.booleans(),
    default_budget=st.one_of(st.none(), money),
)
def test_budget_precedence_holds_for_every_combination(
    tag: str | None, team_budget: Decimal | None, team_listed: bool, default_budget: Decimal | None
) -> None:
    # Given a policy with a default budget and possibly a team budget, and a job of that team
    teams = {"vision": Team(budget_usd=team_budget)} if team_listed else {}
    policy = Policy(teams=teams, defaults=PolicyDefaults(budget_usd=default_budget))
    tags = {"team": "vision"} | ({"governance:budget-usd": tag} if tag is not None else {})

    budget = policy.budget_for(tags)

    # Then the first level that is set decides, 0 meaning "no budget", and only a bad tag warns
    tag_ok = tag is not None and tag.replace(".", "", 1).isdigit()
    levels: list[tuple[str, Decimal | None]] = [
        ("tag", Decimal(tag) if tag_ok and tag is not None else None),
        ("team", team_budget if team_listed else None),
        ("default", default_budget),
    ]
    source, amount = next(((name, value) for name, value in levels if value is not None), ("none", None))
    assert budget.source == source
    assert budget.usd == (amount or None)
    assert budget.usd != 0
    assert (budget.warning is not None) == (tag is not None and not tag_ok)


def test_limits_per_team_and_account(policy: Policy) -> None:
    assert policy.team_limit("vision", "ml.p3.2xlarge") == 4
    assert policy.team_limit("vision", "ml.g5.xlarge") is None  # vision has no g5 limit
    assert policy.team_limit("unlisted", "ml.p3.2xlarge") is None
    assert policy.team_limit(None, "ml.p3.2xlarge") is None
    assert policy.account_limit("ml.p3.2xlarge") == 8
    assert policy.account_limit("ml.m5.xlarge") is None


@pytest.mark.parametrize(
    ("instance_type", "applied", "expected"),
    [
        ("ml.p3.2xlarge", 20, 8),  # the policy tightens the quota
        ("ml.p3.2xlarge", 4, 4),  # but never raises it
        ("ml.p3.2xlarge", None, 8),  # quota unknown: the policy's figure
        ("ml.m5.xlarge", 12, 12),  # not in the policy: the quota alone
        ("ml.m5.xlarge", None, None),
    ],
)
def test_the_effective_account_limit_is_the_lower_of_policy_and_service_quota(
    policy: Policy, instance_type: str, applied: int | None, expected: int | None
) -> None:
    assert policy.effective_account_limit(instance_type, applied) == expected


# -- loading ----------------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class MemorySource(PolicySource):
    """A source whose text the test edits, counting reads."""

    def __init__(self, text: str, clock: Clock, max_age_seconds: float = 60) -> None:
        super().__init__("memory:test", max_age_seconds=max_age_seconds, clock=clock)
        self.text: str | None = text
        self.reads = 0

    def read_text(self) -> str:
        self.reads += 1
        if self.text is None:
            raise PolicyUnavailable(self.name, "gone")
        return self.text


def test_the_source_is_read_again_only_after_max_age() -> None:
    clock = Clock()
    source = MemorySource("mode: monitor", clock)
    assert load_policy(source).policy.mode == "monitor"

    source.text = "mode: enforce"
    clock.now += 59
    assert load_policy(source).policy.mode == "monitor"
    assert source.reads == 1

    clock.now += 1
    assert load_policy(source).policy.mode == "enforce"
    assert source.reads == 2


def test_unchanged_text_is_not_parsed_again() -> None:
    clock = Clock()
    source = MemorySource("mode: enforce", clock)
    first = source.load()

    clock.now += 3600
    second = source.load()

    assert source.reads == 2
    assert second.policy is first.policy
    assert second.digest == first.digest


def test_an_invalid_update_keeps_the_last_good_policy_and_is_reported_once() -> None:
    clock = Clock()
    source = MemorySource("mode: enforce\nquotas: {ml.p3.2xlarge: 8}", clock)
    good = source.load()

    # When the text becomes invalid
    source.text = "mode: enforce\nquotas: {ml.p3.2xlarge: -8}"
    clock.now += 60
    first = source.load()
    clock.now += 60
    second = source.load()

    # Then the last good policy stays in force, and the problem is returned once
    assert first.policy is good.policy and second.policy is good.policy
    assert isinstance(first.error, PolicyError)
    assert first.error.problems == ('quotas["ml.p3.2xlarge"]: expected a number >= 0, got -8',)
    assert first.stale and second.stale
    assert second.error is None

    # When it is fixed, the new policy applies
    source.text = "mode: monitor"
    clock.now += 60
    fixed = source.load()
    assert (fixed.policy.mode, fixed.stale, fixed.error) == ("monitor", False, None)


def test_a_second_different_invalid_update_is_reported_too() -> None:
    clock = Clock()
    source = MemorySource("{}", clock)
    source.load()

    source.text = "mode: x"
    clock.now += 60
    assert source.load().error is not None
    source.text = "mode: y"
    clock.now += 60
    assert source.load().error is not None


def test_reverting_to_the_good_text_clears_stale() -> None:
    clock = Clock()
    source = MemorySource("mode: enforce", clock)
    source.load()
    source.text = "mode: x"
    clock.now += 60
    assert source.load().stale

    source.text = "mode: enforce"
    clock.now += 60
    loaded = source.load()
    assert (loaded.stale, loaded.error, loaded.policy.mode) == (False, None, "enforce")


def test_an_unreadable_source_keeps_the_last_good_policy() -> None:
    clock = Clock()
    source = MemorySource("mode: enforce", clock)
    source.load()

    source.text = None
    clock.now += 60
    loaded = source.load()

    assert loaded.policy.mode == "enforce" and loaded.stale
    assert isinstance(loaded.error, PolicyUnavailable)
    # and it is not re-read on every event while unreadable
    reads = source.reads
    source.load()
    assert source.reads == reads


def test_without_a_good_policy_an_invalid_text_raises_every_time() -> None:
    clock = Clock()
    source = MemorySource("mode: x", clock)

    with pytest.raises(PolicyError, match="mode: expected"):
        source.load()
    with pytest.raises(PolicyError, match="mode: expected"):
        source.load()

    source.text = "mode: enforce"
    assert source.load().policy.mode == "enforce"  # a fix applies at once, without waiting for max_age


def test_without_a_good_policy_an_unreadable_source_raises() -> None:
    source = MemorySource("{}", Clock())
    source.text = None

    with pytest.raises(PolicyUnavailable, match="policy memory:test could not be read: gone"):
        source.load()


def test_a_policy_file_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("mode: enforce\n")
    source = FilePolicySource(str(path))

    assert source.load().policy.mode == "enforce"
    path.write_text("mode: monitor\n")
    assert source.load().policy.mode == "enforce"
    assert source.load().source == f"file:{path}"


def test_a_missing_or_invalid_policy_file_raises(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(PolicyUnavailable, match="FileNotFoundError"):
        FilePolicySource(str(missing)).load()

    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults:\n  max_failed_trials: -1\n")
    with pytest.raises(PolicyError, match=r"defaults\.max_failed_trials: expected a number >= 0, got -1"):
        FilePolicySource(str(bad)).load()


def test_policy_source_chooses_from_plain_settings(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("mode: enforce\n")

    assert policy_source() is bundled_policy_source()
    assert load_policy(policy_source(file=str(path))).policy.mode == "enforce"
    with pytest.raises(ValueError, match="not both"):
        policy_source(parameter="/governor/policy", file=str(path))
    with pytest.raises(ValueError, match="needs an SSMProvider"):
        policy_source(parameter="/governor/policy")


# -- queue submitters (issue 20) -------------------------------------------------------------------------------------
_NLP_SUBMIT = "arn:aws:iam::123456789012:role/nlp-submit"
_NLP_EXEC = "arn:aws:iam::123456789012:role/nlp-sagemaker"


def test_a_submitter_role_names_its_team_and_only_listed_execution_roles_may_be_passed() -> None:
    policy = Policy.model_validate(
        {
            "teams": {
                "nlp": {"submitters": [_NLP_SUBMIT], "execution_roles": [_NLP_EXEC], "queue_priority": 5},
                "cv": {"max_wait_minutes": 30},
            }
        }
    )
    assert policy.submitter_team(_NLP_SUBMIT.upper().replace("ARN:AWS:IAM::", "arn:aws:iam::")) == "nlp"
    assert policy.submitter_team("arn:aws:iam::123456789012:role/cv-submit") is None
    assert policy.passes_roles("nlp", [_NLP_EXEC]) == []
    other = "arn:aws:iam::123456789012:role/cv-sagemaker"
    assert policy.passes_roles("nlp", [_NLP_EXEC, other]) == [other]
    assert policy.passes_roles("cv", [other]) == [other]  # a team listing no roles may pass none


def test_a_submitter_role_listed_by_two_teams_is_refused() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(
            f"teams: {{nlp: {{submitters: ['{_NLP_SUBMIT}']}}, cv: {{submitters: ['{_NLP_SUBMIT}']}}}}",
            "ssm:/governor/policy",
        )
    assert "listed by teams cv and nlp" in caught.value.problems[0]
