"""What ``check`` says about a malformed request is worded for the person who wrote it: the nearest
valid member for a misspelt field (as the policy validator suggests a key), and a type in words."""

from __future__ import annotations

import pytest

from governor_client.check.validation import model_findings
from governor_client.simulator.scenarios import seed_tuning_request


def _finding(path: str, request: dict[str, object]) -> str:
    [message] = [f.message for f in model_findings(request) if f.path == path]
    return message


def test_a_misspelt_field_is_answered_with_the_nearest_member() -> None:
    request = seed_tuning_request()
    config = request["TrainingJobDefinition"]["ResourceConfig"]
    config["InstanceCnt"] = config.pop("InstanceCount")

    message = _finding("TrainingJobDefinition.ResourceConfig.InstanceCnt", request)

    assert message.startswith('unknown field; did you mean "InstanceCount"?')


def test_a_field_like_none_lists_the_valid_members() -> None:
    request = seed_tuning_request()
    request["TrainingJobDefinition"]["ResourceConfig"]["Zzzzzz"] = 1

    message = _finding("TrainingJobDefinition.ResourceConfig.Zzzzzz", request)

    assert "did you mean" not in message
    assert "InstanceType, InstanceCount" in message


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs", "4", 'value "4" is not an integer'),
        ("TrainingJobDefinition.EnableManagedSpotTraining", "yes", 'value "yes" is not true or false'),
        ("TrainingJobDefinition.ResourceConfig", [1], "value [1] is not an object"),
    ],
)
def test_a_wrong_type_is_named_in_words(path: str, value: object, words: str) -> None:
    request = seed_tuning_request()
    *parents, leaf = path.split(".")
    node = request
    for key in parents:
        node = node[key]
    node[leaf] = value

    message = _finding(path, request)

    assert message.startswith(words), message
    assert "<class" not in message
