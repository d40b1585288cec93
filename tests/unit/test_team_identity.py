"""A job's team: its team tag as people write it, overruled by its execution role where the policy
lists teams' roles (finding 12 of issue 18)."""

from __future__ import annotations

import pytest

from tuning_governor.policy import PolicyError, parse_policy

NLP_ROLE = "arn:aws:iam::123456789012:role/nlp-sagemaker"
CV_ROLE = "arn:aws:iam::123456789012:role/teams/cv-sagemaker"
SHARED_ROLE = "arn:aws:iam::123456789012:role/shared-sagemaker"
POLICY = parse_policy(
    f"""\
teams:
  nlp: {{job_budget_usd: 50, execution_roles: [{NLP_ROLE}]}}
  cv: {{job_budget_usd: 100000, execution_roles: [{CV_ROLE}]}}
  Research: {{job_budget_usd: 500}}
""",
    "test",
)


@pytest.mark.parametrize(
    ("tag", "roles", "team"),
    [
        ("nlp", [NLP_ROLE], "nlp"),
        ("cv", [NLP_ROLE], "nlp"),  # the role decides; the tag is reported
        (None, [CV_ROLE], "cv"),
        ("nlp", [CV_ROLE.upper().replace("ARN:AWS:IAM", "arn:aws:iam")], "cv"),  # IAM role names ignore case
        ("cv", [SHARED_ROLE], None),  # cv is reached only through its roles
        ("cv", [], None),
        (" research ", [SHARED_ROLE], "Research"),  # trimmed, the policy's spelling
        ("RESEARCH", [], "Research"),
        (" unlisted ", [], "unlisted"),
        ("  ", [], None),
    ],
)
def test_the_role_names_the_team_and_the_tag_is_matched_as_tags_are(
    tag: str | None, roles: list[str], team: str | None
) -> None:
    tags = {"team": tag} if tag is not None else {}
    assert POLICY.team_of(tags, roles) == team


def test_a_tag_the_role_overrules_is_reported_and_ignored_and_does_not_move_the_budget() -> None:
    tags = {"team": "cv"}
    [warning] = POLICY.tag_warnings(tags, [NLP_ROLE])
    assert warning.message == (
        "tag team=\"cv\" ignored: the job runs as team nlp's execution role, so it is team nlp's"
    )
    budget = POLICY.budget_for(tags, [NLP_ROLE])
    assert (budget.usd, budget.source) == (50, "team")


def test_a_tag_naming_a_role_bound_team_from_another_role_is_reported_and_ignored() -> None:
    [warning] = POLICY.tag_warnings({"team": "cv"}, [SHARED_ROLE])
    assert "ignored: team cv is identified by its execution roles" in warning.message
    assert POLICY.budget_for({"team": "cv"}, [SHARED_ROLE]).source == "none"


def test_without_roles_in_the_policy_the_tag_decides_as_before() -> None:
    policy = parse_policy("teams: {nlp: {job_budget_usd: 50}}\n", "test")
    assert policy.team_of({"team": "nlp"}, [NLP_ROLE]) == "nlp"
    assert policy.tag_warnings({"team": "nlp"}, [NLP_ROLE]) == []


def test_a_role_listed_by_two_teams_is_refused() -> None:
    with pytest.raises(PolicyError, match="listed by teams a and b"):
        parse_policy(f"teams: {{a: {{execution_roles: [{NLP_ROLE}]}}, b: {{execution_roles: [{NLP_ROLE}]}}}}\n", "t")


@pytest.mark.parametrize("role", ["nlp-sagemaker", "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::1:role/x"])
def test_an_execution_role_must_be_a_role_arn(role: str) -> None:
    with pytest.raises(PolicyError, match="execution_roles"):
        parse_policy(f"teams: {{a: {{execution_roles: ['{role}']}}}}\n", "t")


def test_a_team_key_in_another_case_is_reported_and_never_read_as_the_team_tag() -> None:
    # As for the budget and exemption keys: AWS tag keys are case-sensitive.
    assert POLICY.team_of({"Team": "cv"}) is None
    assert [w.message for w in POLICY.tag_warnings({"Team": "cv", "team": "Research"})] == [
        'tag Team="cv" ignored: tag keys are case-sensitive and the policy\'s tag is team'
    ]


def test_a_long_role_arn_as_sagemaker_allows_is_read() -> None:
    from tuning_governor.models.tuning_job import TrainingJobDefinition

    # SageMaker's RoleArn: 20-2048 characters (botocore); a role path makes it long.
    role = "arn:aws:iam::123456789012:role/" + "team/" * 60 + "nlp-sagemaker"
    assert TrainingJobDefinition.model_validate({"RoleArn": role}).role_arn == role


def test_a_team_spelled_exactly_wins_over_one_matching_ignoring_case() -> None:
    policy = parse_policy("teams: {NLP: {job_budget_usd: 1}, nlp: {job_budget_usd: 2}}\n", "test")
    assert [policy.team_of({"team": t}) for t in ("nlp", "NLP", " Nlp ")] == ["nlp", "NLP", "NLP"]
