"""Plugging the simulation into moto's SageMaker, and unplugging it.

The backend (:mod:`.governed_backend`) runs jobs on the engine; the response handlers
(:mod:`.moto_responses`) answer the calls moto lacks. Installation swaps the backend class that ``moto.sagemaker.models.sagemaker_backends`` instantiates and
adds handlers for StopHyperParameterTuningJob, StopTrainingJob and
ListTrainingJobsForHyperParameterTuningJob to ``SageMakerResponse``, and replaces its ListTrainingJobs
handler with one that filters as AWS does — so plain ``boto3.client("sagemaker")``
calls under ``mock_aws()`` reach the simulation. Everything is undone by the returned callable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from moto.sagemaker.models import SageMakerModelBackend, sagemaker_backends
from moto.sagemaker.responses import SageMakerResponse

from ._patching import Patches
from .engine import SimulationEngine
from .governed_backend import GovernedSageMakerBackend
from .moto_responses import HANDLERS


def install(engine: SimulationEngine) -> Callable[[], None]:
    """Route moto's SageMaker through ``engine``; returns the function that undoes it.

    Backends that already exist (someone called SageMaker before installing) are converted in place, so
    their data stays visible.
    """
    if GovernedSageMakerBackend.engine is not None:
        raise RuntimeError("an AMT stand-in is already installed; uninstall it first")
    patches = Patches()
    patches.set(GovernedSageMakerBackend, "engine", engine)
    patches.set(sagemaker_backends, "backend", GovernedSageMakerBackend)
    for account_backends in sagemaker_backends.values():
        patches.set(account_backends, "backend", GovernedSageMakerBackend)
        for backend in account_backends.values():
            if type(backend) is SageMakerModelBackend:
                patches.set(backend, "__class__", GovernedSageMakerBackend)
    for name, handler in HANDLERS.items():
        patches.set(SageMakerResponse, name, handler)

    def undo() -> None:
        patches.undo()
        # Backends created while installed go back to moto's class too; their jobs keep their last state.
        for account_backends in sagemaker_backends.values():
            for backend in account_backends.values():
                if type(backend) is GovernedSageMakerBackend:
                    cast(Any, backend).__class__ = SageMakerModelBackend

    return undo
