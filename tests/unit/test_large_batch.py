"""The large-batch checks' arithmetic, each against figures worked out by hand in the comments."""

from __future__ import annotations

import math
from typing import Any

import pytest

from governor_client.simulator.scenarios import seed_tuning_request
from tuning_governor.domain.large_batch import (
    BatchFinding,
    LargeBatchSettings,
    devices_per_instance,
    findings,
    rescale_findings,
)
from tuning_governor.policy import parse_policy

PYTORCH = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


def _request(
    *,
    static: dict[str, str] | None = None,
    integers: list[dict[str, str]] | None = None,
    continuous: list[dict[str, str]] | None = None,
    categorical: list[dict[str, Any]] | None = None,
    instance: tuple[str, int] = ("ml.p4d.24xlarge", 4),
    image: str = PYTORCH,
    trials: int = 20,
    strategy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    config: dict[str, Any] = strategy or {"Strategy": "Bayesian", "TrainingJobEarlyStoppingType": "Off"}
    return {
        "HyperParameterTuningJobName": "ddp",
        "HyperParameterTuningJobConfig": config
        | {
            "ResourceLimits": {"MaxNumberOfTrainingJobs": trials, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {
                "IntegerParameterRanges": integers or [],
                "ContinuousParameterRanges": continuous or [],
                "CategoricalParameterRanges": categorical or [],
            },
        },
        "TrainingJobDefinition": {
            "StaticHyperParameters": static or {},
            "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File"},
            "ResourceConfig": {"InstanceType": instance[0], "InstanceCount": instance[1], "VolumeSizeInGB": 50},
        },
    }


def _batch(
    low: str = "32", high: str = "512", scaling: str = "Logarithmic", name: str = "batch_size"
) -> dict[str, str]:
    return {"Name": name, "MinValue": low, "MaxValue": high, "ScalingType": scaling}


def _by_code(found: list[BatchFinding]) -> dict[str, BatchFinding]:
    return {f.code: f for f in found}


def test_the_seed_xgboost_hyperband_job_gets_no_finding() -> None:
    assert findings(seed_tuning_request()) == []


def test_ddp_with_a_fixed_learning_rate_gets_each_finding_with_its_figures() -> None:
    # Given 32-512 per device (log scale) on 4 x ml.p4d.24xlarge (8 A100 each), SGD at a fixed lr, 20 trials
    # at $100 worst case each: global 32*32 = 1,024 to 512*32 = 16,384, r = 16.
    request = _request(static={"lr": "0.1", "optimizer": "sgd"}, integers=[_batch()])
    found = _by_code(findings(request, worst_case_trial_dollars=100.0))
    assert list(found) == ["global-batch-range", "lr-not-scaled", "no-warmup", "batch-beyond-literature"]
    assert found["global-batch-range"].severity == "info" and found["global-batch-range"].dollars is None
    assert "1,024-16,384 (16x)" in found["global-batch-range"].reason
    assert "8 devices per ml.p4d.24xlarge x 4 instances" in found["global-batch-range"].reason
    # lr fixed, SGD scales linearly: needs 16x; every trial at risk: 20 x $100.
    assert "lr = 0.1" in found["lr-not-scaled"].reason and "at least 16x" in found["lr-not-scaled"].reason
    assert found["lr-not-scaled"].dollars == 2000.0
    assert "Goyal" in found["lr-not-scaled"].source
    # >= 2,048 on a log scale: ln(16384/2048) / ln(16) = 3/4 of the trials: ceil(15) x $100.
    assert "75% of the trials" in found["no-warmup"].reason and found["no-warmup"].dollars == 1500.0
    # > 8,192 (SGD's limit): ln(2)/ln(16) = 1/4: 5 trials.
    assert found["batch-beyond-literature"].dollars == 500.0
    assert "8,192" in found["batch-beyond-literature"].reason


def test_a_linear_range_puts_more_trials_past_the_warmup_threshold() -> None:
    # Linear: (16384 - 2048) / (16384 - 1024) = 0.9333 of 20 trials = 18.67: 19 trials x $10.
    request = _request(static={"lr": "0.1", "optimizer": "sgd"}, integers=[_batch(scaling="Linear")])
    warmup = _by_code(findings(request, worst_case_trial_dollars=10.0))["no-warmup"]
    assert "93% of the trials" in warmup.reason and warmup.dollars == 190.0


@pytest.mark.parametrize(
    ("optimizer", "lr_high", "flagged"),
    [
        # SGD: the lr range must span r = 16x.
        ("sgd", "1.6", False),
        ("sgd", "1.5", True),
        # Adam: sqrt(16) = 4x.
        ("adamw", "0.4", False),
        ("adamw", "0.39", True),
        # Unknown: judged by the square-root rule too.
        ("rmsprop", "0.39", True),
        ("rmsprop", "0.4", False),
    ],
)
def test_the_learning_rate_range_must_scale_with_the_batch_range(optimizer: str, lr_high: str, flagged: bool) -> None:
    lr = {"Name": "learning_rate", "MinValue": "0.1", "MaxValue": lr_high, "ScalingType": "Logarithmic"}
    request = _request(static={"optimizer": optimizer, "warmup_steps": "500"}, integers=[_batch()], continuous=[lr])
    found = _by_code(findings(request))
    assert ("lr-not-scaled" in found) is flagged
    if flagged:
        needed = "16x" if optimizer == "sgd" else "4x"
        assert f"at least {needed}" in found["lr-not-scaled"].reason
        assert ("Malladi" in found["lr-not-scaled"].source) is (optimizer != "sgd")


def test_no_learning_rate_hyperparameter_is_a_fixed_one() -> None:
    found = _by_code(findings(_request(static={"warmup_steps": "100"}, integers=[_batch()])))
    assert "no learning-rate hyperparameter" in found["lr-not-scaled"].reason


def test_a_batch_range_below_the_ratio_asks_nothing_of_the_learning_rate() -> None:
    # 32-96 per device: r = 3 < 4.
    found = _by_code(findings(_request(static={"lr": "0.1"}, integers=[_batch("32", "96")])))
    assert "lr-not-scaled" not in found and "(3x)" in found["global-batch-range"].reason


def test_hugging_face_with_gradient_accumulation_multiplies_it_in() -> None:
    # {8, 16, 32} per device x 16 devices (2 x ml.p4d.24xlarge) x 4 accumulation steps = {512, 1,024, 2,048}.
    request = _request(
        static={"gradient_accumulation_steps": "4", "learning_rate": "5e-5"},
        categorical=[{"Name": "per_device_train_batch_size", "Values": ["8", "16", "32"]}],
        instance=("ml.p4d.24xlarge", 2),
        trials=9,
    )
    found = _by_code(findings(request, worst_case_trial_dollars=30.0))
    assert "{512, 1,024, 2,048} (4x)" in found["global-batch-range"].reason
    assert "gradient_accumulation_steps 4" in found["global-batch-range"].reason
    # One value of three reaches 2,048: ceil(9/3) = 3 trials x $30.
    assert "33% of the trials" in found["no-warmup"].reason and found["no-warmup"].dollars == 90.0


def test_image_classification_mini_batch_size_is_per_machine() -> None:
    # The built-in algorithm: global = mini_batch_size x machines (2), not x 8 GPUs: 128-512.
    image = "811284229777.dkr.ecr.us-east-1.amazonaws.com/image-classification:1"
    request = _request(
        static={"learning_rate": "0.1"},
        integers=[_batch("64", "256", name="mini_batch_size")],
        instance=("ml.p3.16xlarge", 2),
        image=image,
    )
    found = _by_code(findings(request))
    assert "global batch 128-512 (4x)" in found["global-batch-range"].reason
    assert "(per machine) x 2 x ml.p3.16xlarge" in found["global-batch-range"].reason


@pytest.mark.parametrize(
    "image",
    [
        "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1",
        "382416733822.dkr.ecr.us-east-1.amazonaws.com/linear-learner:1",
    ],
)
def test_tabular_built_ins_stay_silent_even_with_a_batch_name(image: str) -> None:
    request = _request(static={"learning_rate": "0.1"}, integers=[_batch(name="mini_batch_size")], image=image)
    assert findings(request) == []


def test_a_global_batch_size_is_not_multiplied_by_devices() -> None:
    request = _request(static={"lr": "0.1"}, integers=[_batch("256", "1024", name="global_batch_size")])
    assert "global batch 256-1,024 (4x)" in _by_code(findings(request))["global-batch-range"].reason


def test_an_unknown_accelerated_type_is_counted_as_one_device_and_said_so() -> None:
    found = _by_code(findings(_request(static={"lr": "0.1"}, integers=[_batch()], instance=("ml.p9.96xlarge", 2))))
    assert "global batch 64-1,024" in found["global-batch-range"].reason
    assert "devices per instance unknown: counted as 1" in found["global-batch-range"].reason


def test_past_the_critical_batch_gives_the_extra_examples_factor() -> None:
    # B_crit 1,000, factor 4: past 4,000. B = 16,384: 1 + 16.384 = 17.4x the minimum examples, 17.384/5 =
    # 3.48x a 4,000 batch's. Share > 4,000 on a log scale: ln(4.096)/ln(16) = 0.5085 of 20 = 10.17: 11 trials.
    settings = LargeBatchSettings(critical_batch=1000)
    request = _request(static={"lr": "0.1", "warmup_steps": "1"}, integers=[_batch()])
    critical = _by_code(findings(request, settings=settings, worst_case_trial_dollars=100.0))["past-critical-batch"]
    assert "17.4x the minimum examples" in critical.reason and "3.48x what a batch of 4,000 needs" in critical.reason
    assert math.isclose(critical.dollars or 0, 1100.0) and "McCandlish" in critical.source
    assert "past-critical-batch" not in _by_code(findings(request))


@pytest.mark.parametrize(
    ("static", "min_resource", "flagged"),
    [
        ({"warmup_epochs": "5"}, 1, True),
        ({"warmup_epochs": "5"}, 5, True),  # MinResource <= warmup epochs
        ({"warmup_epochs": "5"}, 6, False),
        # warmup_ratio x MaxResource (30 epochs): 0.1 x 30 = 3 epochs.
        ({"warmup_ratio": "0.1"}, 3, True),
        ({"warmup_ratio": "0.1"}, 4, False),
        ({"warmup_steps": "500"}, 1, False),  # in steps: epochs unknown, not judged
    ],
)
def test_hyperband_judging_before_warmup_ends(static: dict[str, str], min_resource: int, flagged: bool) -> None:
    strategy = {
        "Strategy": "Hyperband",
        "StrategyConfig": {"HyperbandStrategyConfig": {"MinResource": min_resource, "MaxResource": 30}},
    }
    request = _request(static={"lr": "0.1"} | static, integers=[_batch()], strategy=strategy)
    assert ("judged-before-warmup" in _by_code(findings(request))) is flagged


def test_early_stopping_judges_from_the_first_epoch() -> None:
    # warmup_ratio 0.4 x num_train_epochs 3 = 1.2 epochs >= 1: judged inside the warmup; 0.2 x 3 = 0.6: not.
    auto = {"Strategy": "Bayesian", "TrainingJobEarlyStoppingType": "Auto"}
    hyper = {"lr": "0.1", "num_train_epochs": "3"}
    inside = _request(static=hyper | {"warmup_ratio": "0.4"}, integers=[_batch()], strategy=auto)
    judged = _by_code(findings(inside))["judged-before-warmup"]
    assert "1.2 epochs (warmup_ratio 0.4 x num_train_epochs 3)" in judged.reason
    outside = _request(static=hyper | {"warmup_ratio": "0.2"}, integers=[_batch()], strategy=auto)
    assert "judged-before-warmup" not in _by_code(findings(outside))


def test_a_teams_own_names_are_read_through_the_policy() -> None:
    policy = parse_policy(
        "large_batch:\n  names: {bs: per_device_batch}\n  team_names: {nlp: {peak_lr: learning_rate}}\n", "p.yaml"
    )
    request = _request(static={"peak_lr": "0.1"}, integers=[_batch(name="bs")])
    for_all = _by_code(findings(request, settings=policy.large_batch))
    assert "no learning-rate hyperparameter" in for_all["lr-not-scaled"].reason
    for_nlp = _by_code(findings(request, settings=policy.large_batch, team="nlp"))
    assert "lr = 0.1" in for_nlp["lr-not-scaled"].reason


def test_disabled_checks_find_nothing() -> None:
    request = _request(static={"lr": "0.1"}, integers=[_batch()])
    assert findings(request, settings=LargeBatchSettings(enabled=False)) == []


def test_a_changed_instance_count_without_a_rescaled_learning_rate() -> None:
    # 4 -> 8 x ml.p4d.24xlarge: the global batch doubles (16,384 -> 32,768); SGD wants 2x the rate.
    before = _request(static={"lr": "0.1", "optimizer": "sgd"}, integers=[_batch()])
    after = _request(static={"lr": "0.1", "optimizer": "sgd"}, integers=[_batch()], instance=("ml.p4d.24xlarge", 8))
    (found,) = rescale_findings(before, after, worst_case_trial_dollars=5.0)
    assert found.code == "instance-count-not-rescaled" and "changed 2x" in found.reason
    assert "should be 2x" in found.reason and found.dollars == 100.0
    rescaled = _request(static={"lr": "0.2", "optimizer": "sgd"}, integers=[_batch()], instance=("ml.p4d.24xlarge", 8))
    assert rescale_findings(before, rescaled) == []
    assert rescale_findings(before, before) == []


@pytest.mark.parametrize(
    ("instance_type", "devices"),
    [
        ("ml.p4d.24xlarge", 8),
        ("ml.p3.2xlarge", 1),
        ("ml.g5.2xlarge", 1),
        ("ml.g5.12xlarge", 4),
        ("ml.trn1.32xlarge", 32),
        ("ml.m5.xlarge", 1),
        ("ml.p9.96xlarge", None),
    ],
)
def test_devices_per_instance(instance_type: str, devices: int | None) -> None:
    assert devices_per_instance(instance_type) == devices


def test_odd_values_are_not_judged_rather_than_raising() -> None:
    request = _request(static={"lr": "fast", "batch_size": "lots"}, integers=[_batch("0", "0")])
    assert findings(request) == []
