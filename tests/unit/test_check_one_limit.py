"""A refusal names one limit, the same in the verdict and in ``never-fits``: the lowest limit the
request exceeds even on an idle account (the one any smaller request must meet)."""

from __future__ import annotations

import pytest

from governor_client.check import SubmissionQueue, check_request
from governor_client.simulator.scenarios import seed_tuning_request
from tuning_governor.policy import parse_policy

POLICY = "mode: enforce\nquotas: {ml.p3.2xlarge: 8}\nteams:\n  churn:\n    instances: {ml.p3.2xlarge: 4}\n"


def _request(parallel: int) -> dict[str, object]:
    request = seed_tuning_request("churn")
    request["TrainingJobDefinition"]["ResourceConfig"] |= {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 1}
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = parallel
    return request


@pytest.mark.parametrize("submitted", [False, True], ids=["created directly", "submitted to the queue"])
def test_the_verdict_and_never_fits_name_the_same_one_limit(submitted: bool) -> None:
    # Given a request of 10 x ml.p3.2xlarge: above the account's quota 8 and the team's limit 4
    policy = parse_policy(POLICY, "policy.yaml")
    queue = SubmissionQueue(policy, [], [], None, False) if submitted else None

    result = check_request(_request(10), policy, queue=queue)

    # Then both outputs cite the team's limit 4 (the lower), and neither the account's 8
    [never] = [f.message for f in result.findings if f.code == "never-fits"]
    verdict = result.admission.message or ""
    for said in (verdict, never):
        assert "team churn's limit 4" in said, said
        assert " 8" not in said, said
