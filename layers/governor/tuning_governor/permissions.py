"""What each function may call, derived from the adapters and rules it uses.

template.yaml must grant each function exactly these IAM actions (plus what SAM adds for the
function's own plumbing: logs, X-Ray, the failure destination); a template test checks both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuning_governor.adapters.notifiers import SlackNotifier, SnsNotifier
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.store import GovernorStore
from tuning_governor.governance.facts import Trigger
from tuning_governor.governance.rules import registry
from tuning_governor.policy import SsmPolicySource

_SAGEMAKER = SageMakerGateway.permissions
_STORE = GovernorStore.permissions


@dataclass(frozen=True)
class FunctionNeeds:
    sagemaker: tuple[str, ...]
    store: tuple[str, ...]
    trigger: Trigger
    quotas: bool = False
    reports: bool = True

    def actions(self) -> frozenset[str]:
        needed = {_SAGEMAKER[call] for call in self.sagemaker} | {_STORE[call] for call in self.store}
        needed |= registry.permissions(self.trigger)
        if self.quotas:
            needed |= set(QuotaGateway.permissions.values())
        if self.reports:
            needed |= SnsNotifier.permissions | SlackNotifier.permissions
        needed |= SsmPolicySource.permissions
        return frozenset(needed)


# Store calls: GetItem, PutItem, UpdateItem (TransactWriteItems needs the per-item actions), Query,
# DeleteItem (claims given back, warm pools released).
_ALL_STORE = ("read", "query", "put", "update", "delete")

FUNCTIONS: dict[str, FunctionNeeds] = {
    "TuningEventsFunction": FunctionNeeds(
        sagemaker=("describe_tuning_job", "list_trials", "stop_tuning_job"),
        store=_ALL_STORE,
        trigger="arrival",
        quotas=True,
    ),
    "TrainingEventsFunction": FunctionNeeds(
        sagemaker=("describe_training_job", "describe_tuning_job", "stop_tuning_job"),
        store=_ALL_STORE,
        trigger="trial",
    ),
    "SweepFunction": FunctionNeeds(
        sagemaker=(
            "list_tuning_jobs",
            "describe_tuning_job",
            "list_trials",
            "list_tags",
            "list_warm_pools",
            "describe_training_job",
            "stop_tuning_job",
        ),
        store=_ALL_STORE,
        trigger="sweep",
    ),
}


def required_actions(function_logical_id: str) -> frozenset[str]:
    return FUNCTIONS[function_logical_id].actions()
