"""docs/iam/scp-protect-governance-tags.json, judged request by request the way IAM documents its
conditions (finding 12 of issue 18): only the platform role sets the exemption and budget tags; a job
carries its creator's team (the principal's ``team`` tag) and keeps it; the owner tag is set once.

The evaluator covers the operators the SCP uses, as "IAM JSON policy elements: Condition operators"
states them: a key absent from the request makes a condition false, except a negated one
(StringNotEquals, ArnNotLike), which is then true, and Null, which tests presence; condition key
names ignore case; a policy variable that cannot be resolved makes the statement invalid (here: it
denies nothing, the worst case for a Deny, so the SCP must not rely on it)."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuning_governor.models.queue import JOB_NAME_PREFIX, QUEUE_TOKEN_TAG

ROOT = Path(__file__).resolve().parents[2]
SCP = json.loads((ROOT / "docs" / "iam" / "scp-protect-governance-tags.json").read_text())
DEFAULT_POLICY = yaml.safe_load(
    (ROOT / "layers" / "governor" / "tuning_governor" / "data" / "default-policy.yaml").read_text()
)
ADMIN = "arn:aws:iam::123456789012:role/platform-ml-admin"
NLP_SCIENTIST = "arn:aws:iam::123456789012:role/nlp-scientist"
CREATE = "sagemaker:CreateHyperParameterTuningJob"
VARIABLE = re.compile(r"\$\{([^}]+)\}")


class Unresolved(Exception):
    pass


def _values(context: dict[str, Any], key: str) -> list[str] | None:
    found = context.get(key.lower())
    return None if found is None else (found if isinstance(found, list) else [found])


def _resolve(value: str, context: dict[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        got = _values(context, match[1])
        if got is None:
            raise Unresolved(match[1])
        return got[0]

    return VARIABLE.sub(one, value)


def _holds(operator: str, key: str, wanted: list[str], context: dict[str, Any]) -> bool:
    got = _values(context, key)
    if operator == "Null":
        return (got is None) == (wanted == ["true"])
    if operator == "ForAnyValue:StringEqualsIgnoreCase":
        return got is not None and any(g.casefold() in {w.casefold() for w in wanted} for g in got)
    if operator == "ForAnyValue:StringEquals":
        return got is not None and any(g in wanted for g in got)
    if operator == "StringNotEquals":
        return got is None or got[0] not in wanted
    if operator == "ArnNotLike":
        return got is None or not any(fnmatch.fnmatchcase(got[0], w) for w in wanted)
    if operator == "StringEquals":
        return got is not None and got[0] in wanted
    raise AssertionError(f"the evaluator does not know {operator}")


def _denies(statement: dict[str, Any], action: str, context: dict[str, Any]) -> bool:
    actions = statement["Action"]
    if action not in ([actions] if isinstance(actions, str) else actions):
        return False
    wanted_resources = statement["Resource"]
    wanted_resources = [wanted_resources] if isinstance(wanted_resources, str) else wanted_resources
    if not any(fnmatch.fnmatchcase(context["resource"], w) for w in wanted_resources):
        return False
    try:
        for operator, keys in statement["Condition"].items():
            for key, raw in keys.items():
                wanted = [_resolve(v, context) for v in ([raw] if isinstance(raw, str) else raw)]
                if not _holds(operator, key, wanted, context):
                    return False
    except Unresolved:
        return False
    return True


def denied(
    action: str,
    principal: str,
    principal_team: str | None,
    request_tags: dict[str, str],
    resource_tags: dict[str, str] | None = None,
    job: str = "xgb-churn",
) -> list[str]:
    """The Sids of the statements that deny the request (empty: the SCP allows it) on the tuning job ``job``."""
    context: dict[str, Any] = {"aws:principalarn": principal, "aws:tagkeys": list(request_tags) or None}
    context["resource"] = f"arn:aws:sagemaker:eu-west-1:123456789012:hyper-parameter-tuning-job/{job}"
    if principal_team is not None:
        context["aws:principaltag/team"] = principal_team
    context |= {f"aws:requesttag/{k}".lower(): v for k, v in request_tags.items()}
    context |= {f"aws:resourcetag/{k}".lower(): v for k, v in (resource_tags or {}).items()}
    context = {k: v for k, v in context.items() if v is not None}
    return [s["Sid"] for s in SCP["Statement"] if _denies(s, action, context)]


NLP_JOB = {"team": "nlp", "owner": "alice"}


@pytest.mark.parametrize(
    ("what", "action", "principal", "team", "tags", "resource"),
    [
        ("create a job of one's own team", CREATE, NLP_SCIENTIST, "nlp", NLP_JOB, None),
        ("create a training job of one's own team", "sagemaker:CreateTrainingJob", NLP_SCIENTIST, "nlp", NLP_JOB, None),
        # SageMaker may authorize the tags of a create as AddTags on the new (untagged) resource
        ("tag a new job with one's own team", "sagemaker:AddTags", NLP_SCIENTIST, "nlp", NLP_JOB, {}),
        ("add an ordinary tag", "sagemaker:AddTags", NLP_SCIENTIST, "nlp", {"project": "churn"}, NLP_JOB),
        ("remove an ordinary tag", "sagemaker:DeleteTags", NLP_SCIENTIST, "nlp", {"project": ""}, NLP_JOB),
        ("the platform role retags", "sagemaker:AddTags", ADMIN, None, {"team": "cv", "owner": "bob"}, NLP_JOB),
        ("the platform role sets a budget", CREATE, ADMIN, None, {"governance:budget-usd": "900"}, None),
    ],
)
def test_the_scp_allows(
    what: str, action: str, principal: str, team: str | None, tags: dict[str, str], resource: dict[str, str] | None
) -> None:
    assert denied(action, principal, team, tags, resource) == [], what


@pytest.mark.parametrize(
    ("what", "action", "team", "tags", "resource"),
    [
        ("create a job tagged with another team", CREATE, "nlp", {"team": "cv"}, None),
        ("create a job without a team tag", CREATE, "nlp", {"owner": "alice"}, None),
        ("create a job with no team of one's own", CREATE, None, {"team": "nlp"}, None),
        ("retag one's job to another team", "sagemaker:AddTags", "nlp", {"team": "cv"}, NLP_JOB),
        ("retag it in another case", "sagemaker:AddTags", "nlp", {"Team": "cv"}, NLP_JOB),
        ("claim another team's job", "sagemaker:AddTags", "nlp", {"team": "nlp"}, {"team": "cv"}),
        ("tag a team with no team of one's own", "sagemaker:AddTags", None, {"team": "nlp"}, {}),
        ("remove the team tag", "sagemaker:DeleteTags", "nlp", {"team": ""}, NLP_JOB),
        ("change the owner tag", "sagemaker:AddTags", "nlp", {"owner": "bob"}, NLP_JOB),
        ("remove the owner tag", "sagemaker:DeleteTags", "nlp", {"owner": ""}, NLP_JOB),
        ("exempt one's job", "sagemaker:AddTags", "nlp", {"governance:exempt": "true"}, NLP_JOB),
        ("raise one's budget at creation", CREATE, "nlp", {"team": "nlp", "governance:budget-usd": "9000"}, None),
    ],
)
def test_the_scp_denies_a_data_scientist_who_tries_to(
    what: str, action: str, team: str | None, tags: dict[str, str], resource: dict[str, str] | None
) -> None:
    assert denied(action, NLP_SCIENTIST, team, tags, resource), what


CONSUMER = "arn:aws:iam::123456789012:role/tuning-governor-prod-QueueSubmissionsFunctionRole-AbC123XyZ9"
QUEUED = "q-0123456789abcdef01234567"


def test_only_the_queue_consumer_creates_jobs_under_the_queues_prefix() -> None:
    tags = NLP_JOB | {QUEUE_TOKEN_TAG: "0" * 32}
    # Given the consumer's role creates a queued job under q-, with its token tag
    # (the team statements bind it too unless the deployer exempts it, docs/explanation/security.md; these two do not)
    assert not {"QueuedJobNamesAreTheQueueConsumers", "OnlyTheQueueConsumerSetsTheQueueToken"} & set(
        denied(CREATE, CONSUMER, None, tags, job=QUEUED)
    )
    # Then a data scientist may not: neither the name, nor the token tag on a name of their own
    assert denied(CREATE, NLP_SCIENTIST, "nlp", NLP_JOB, job=QUEUED) == ["QueuedJobNamesAreTheQueueConsumers"]
    assert denied(CREATE, NLP_SCIENTIST, "nlp", tags) == ["OnlyTheQueueConsumerSetsTheQueueToken"]
    assert denied("sagemaker:AddTags", NLP_SCIENTIST, "nlp", {QUEUE_TOKEN_TAG: "1" * 32}, NLP_JOB)
    # Nor the platform role, and their own names stay theirs
    assert denied(CREATE, ADMIN, None, {}, job=QUEUED) == ["QueuedJobNamesAreTheQueueConsumers"]
    assert denied(CREATE, NLP_SCIENTIST, "nlp", NLP_JOB, job="nlp-q-1") == []
    # The prefix the SCP reserves is the one the queue names its jobs (and resumed jobs) under
    assert f"hyper-parameter-tuning-job/{JOB_NAME_PREFIX}*" in json.dumps(SCP)


def test_the_scp_names_the_default_policys_tag_keys() -> None:
    text = json.dumps(SCP)
    for key in (DEFAULT_POLICY["exempt_tag"], DEFAULT_POLICY["budget_tag"], DEFAULT_POLICY["team_tag"], "owner"):
        assert f'"{key}"' in text
    assert len(json.dumps(SCP, separators=(",", ":"))) <= 5120, "an SCP holds at most 5,120 characters"
