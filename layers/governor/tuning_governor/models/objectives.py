"""What a trial is judged on: its objective metric and direction, per training job definition."""

from __future__ import annotations

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel


class _Frozen(GovernorModel):
    model_config = ConfigDict(frozen=True)


class ObjectiveSpec(_Frozen):
    """The metric a trial is judged on and its direction (``Minimize`` or ``Maximize``)."""

    metric: str
    type: str

    @property
    def minimize(self) -> bool:
        return self.type == "Minimize"


class DefinitionObjective(ObjectiveSpec):
    """The objective of one training job definition (``definition`` None: the job's single definition)."""

    definition: str | None = None
