"""The large-batch checks' thresholds, as the policy sets them (``large_batch:``). Pure: no AWS, no I/O."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from tuning_governor.model_base import GovernorModel

#: What a hyperparameter means to the checks. Per device: one process's batch (PyTorch DDP, Hugging Face's
#: ``per_device_train_batch_size``); per machine: one instance's batch, split over its devices (the built-in
#: image classification algorithm's ``mini_batch_size``); global: the batch of one optimizer step.
Role = Literal[
    "per_device_batch",
    "per_machine_batch",
    "global_batch",
    "accumulation",
    "learning_rate",
    "warmup",
    "warmup_epochs",
    "warmup_ratio",
    "optimizer",
    "epochs",
    "ignore",
]
HyperparameterName = Annotated[str, Field(min_length=1, max_length=256)]


class LargeBatchSettings(GovernorModel):
    """Thresholds of the large-batch checks (``domain.large_batch``), each with the literature's default.

    ``names`` maps a team's own hyperparameter names to what they mean (``bs: per_device_batch``), for
    every job; ``team_names.<team>`` does so for one team's jobs (it wins over ``names``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    """False: no large-batch finding, before launch or on arrival."""
    on_arrival: Literal["warn", "stop", "skip"] = "warn"
    """What the arrival judgement does with a finding: ``warn`` records one warning decision (never a stop),
    ``stop`` makes it a breach (stopped under ``mode: enforce``), ``skip`` judges nothing on arrival (not ``off``: YAML reads that as false)."""
    range_ratio: Annotated[float, Field(gt=1, le=1_000_000)] = 4.0
    """A global batch range spanning at least this max/min ratio must scale the learning rate with it."""
    warmup_batch: Annotated[int, Field(ge=1)] = 2048
    """A global batch at least this large needs a warmup (Goyal et al. 2017 warm up from 8k on ImageNet)."""
    literature_limits: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(ge=1)]] = {
        "sgd": 8192,
        "lars": 32768,
        "lamb": 65536,
    }
    """Per optimizer (lower case): the largest global batch the literature trained well with it."""
    critical_batch: Annotated[int, Field(ge=1)] | None = None
    """The model's critical batch size (McCandlish et al. 2018's gradient noise scale), when measured."""
    critical_factor: Annotated[float, Field(gt=1, le=1000)] = 4.0
    """A global batch past ``critical_factor`` x ``critical_batch`` buys little speed for many examples."""
    sqrt_optimizers: list[Annotated[str, Field(min_length=1)]] = [
        "adam",
        "adamw",
        "adamax",
        "nadam",
        "radam",
        "adafactor",
        "lamb",
    ]
    """Optimizers whose learning rate scales with the square root of the batch (Malladi et al. 2022)."""
    linear_optimizers: list[Annotated[str, Field(min_length=1)]] = ["sgd", "momentum", "nesterov", "nag", "lars"]
    """Optimizers whose learning rate scales linearly with the batch (Goyal et al. 2017)."""
    names: dict[HyperparameterName, Role] = {}
    """What a hyperparameter name of any team's jobs means to the checks (``bs: per_device_batch``)."""
    team_names: dict[Annotated[str, Field(min_length=1)], dict[HyperparameterName, Role]] = {}
    """Per team: what its own hyperparameter names mean, for its jobs only (over ``names``)."""

    def names_for(self, team: str | None) -> dict[str, Role]:
        """The custom names that apply to ``team``'s jobs: ``names``, then the team's own over them."""
        return {**self.names, **(self.team_names.get(team, {}) if team else {})}
