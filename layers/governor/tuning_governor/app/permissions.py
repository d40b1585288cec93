"""What each function may call, derived from the adapters and rules it uses.

template.yaml must grant each function exactly these IAM actions (plus what SAM adds for the
function's own plumbing: logs, X-Ray, the failure destination); a template test checks both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuning_governor.adapters import channels
from tuning_governor.adapters.assumed_roles import AssumedRoles
from tuning_governor.adapters.checks import SchedulerChecks
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.adapters.pricing import PriceListGateway
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.adapters.sagemaker import SageMakerGateway
from tuning_governor.adapters.submissions import IamPrincipals, SageMakerLauncher, SecretNameKey
from tuning_governor.governance.facts import Trigger
from tuning_governor.governance.rules import registry
from tuning_governor.policy import SsmPolicySource

_SAGEMAKER = SageMakerGateway.permissions
#: Authorised with CreateHyperParameterTuningJob itself: tags given at creation (sagemaker:AddTags) and
#: the execution roles the request names (iam:PassRole, conditioned on iam:PassedToService); and what
#: Lambda's poller of the submission queue does with the function's role (receive, delete, attributes).
SUBMISSION_EXTRAS = frozenset(
    {"sagemaker:AddTags", "iam:PassRole", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}
)
_STORE = GovernorStore.permissions
#: Every stop is preceded by the job's status and tags as SageMaker has them (governance/fresh.py).
STOP_READS = ("describe_tuning_job", "list_tags")


@dataclass(frozen=True)
class FunctionNeeds:
    sagemaker: tuple[str, ...]
    """SageMakerGateway calls; each one's ``fallbacks`` are granted with it."""
    store: tuple[str, ...]
    trigger: Trigger | None
    """The rules it evaluates (None: it governs no job, e.g. the price refresh)."""
    quotas: bool = False
    reports: bool = True
    """Sends reports: the stack's topic and Slack secret, and the teams' own secrets and topics (granted
    under SlackSecretPrefix / TeamTopicPrefix only when those are set)."""
    policy: bool = True
    """Reads the governance policy (SSM parameter when configured)."""
    pricing: tuple[str, ...] = ()
    """PriceListGateway calls (the AWS Price List Query API)."""
    checks: bool = False
    """Schedules one-time budget checks (EventBridge Scheduler, passing the scheduler's role)."""
    members: bool = False
    """Acts in member accounts (organisation mode): assumes their member role (``adapters.assumed_roles``),
    granted only while template.yaml's OrganizationId is set; its SageMaker and Service Quotas calls are
    then made there too, so the member role grants them (``member_actions``)."""
    submissions: bool = False
    """Creates queued tuning jobs (docs/explanation/queue.md): CreateHyperParameterTuningJob with its tags, the
    tags of a job found under a queued name or named as a warm-start parent (Describe, ListTags), the
    stack's name key (its secret), the submitters' role ids (IAM GetRole) and passing the listed
    execution roles to SageMaker."""

    def actions(self) -> frozenset[str]:
        calls = {*self.sagemaker, *(f for call in self.sagemaker for f in SageMakerGateway.fallbacks.get(call, ()))}
        if "stop_tuning_job" in calls:
            calls |= set(STOP_READS)
        needed = {_SAGEMAKER[call] for call in calls} | {_STORE[call] for call in self.store}
        needed |= {PriceListGateway.permissions[call] for call in self.pricing}
        if self.trigger is not None:
            needed |= registry.permissions(self.trigger)
        if self.quotas:
            needed |= set(QuotaGateway.permissions.values())
        if self.reports:
            needed |= channels.permissions()
        if self.policy:
            needed |= SsmPolicySource.permissions
        if self.checks:
            needed |= SchedulerChecks.permissions
        if self.members:
            needed |= set(AssumedRoles.permissions.values())
        if self.submissions:
            needed |= set(SageMakerLauncher.permissions.values()) | set(IamPrincipals.permissions.values())
            needed |= set(SecretNameKey.permissions.values())
            needed |= SUBMISSION_EXTRAS
        return frozenset(needed)


# Store calls: GetItem, PutItem, UpdateItem (TransactWriteItems needs the per-item actions), Query,
# DeleteItem (claims given back, warm pools released), ConditionCheckItem (an admission's transaction
# checks that its job has not ended).
_ALL_STORE = ("read", "query", "put", "update", "delete", "check")

FUNCTIONS: dict[str, FunctionNeeds] = {
    "TuningEventsFunction": FunctionNeeds(
        # list_tags: an arrival whose event carries no Tags is judged on ListTags; a tag change on a job
        # (app.events.tags, routed here) re-reads its tags. describe_training_job:
        # the finaliser records trials listed as finished whose own event has not come (or was lost).
        # list_tuning_jobs: an admission about to stop a job first releases jobs SageMaker no longer runs.
        sagemaker=(
            "describe_tuning_job",
            "list_trials",
            "list_tags",
            "stop_tuning_job",
            "describe_training_job",
            "list_tuning_jobs",
        ),
        store=_ALL_STORE,
        trigger="arrival",
        quotas=True,
        checks=True,
        members=True,
    ),
    "TrainingEventsFunction": FunctionNeeds(
        # list_trials: a trial recorded after its job ended re-finalises the job's summary.
        sagemaker=("describe_training_job", "describe_tuning_job", "stop_tuning_job", "list_trials"),
        store=_ALL_STORE,
        trigger="trial",
        checks=True,
        members=True,
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
        # The sweep judges the jobs it finds unjudged like arrivals: the concurrency rule's quotas.
        quotas=True,
        checks=True,
        members=True,
    ),
    # Judges one job at its projected budget crossing, from the table, once SageMaker's status says it
    # still runs (describe_tuning_job); it schedules nothing itself (the next event or sweep does), so
    # the template has no function referring to itself.
    "BudgetCheckFunction": FunctionNeeds(
        sagemaker=("describe_tuning_job", "stop_tuning_job"),
        store=_ALL_STORE,
        trigger="sweep",
        members=True,
    ),
    # Reads and writes one catalog item per region (its role may touch only PRICES# items: it merges
    # the Price List's answer into the stored catalog); governs no job, reports nothing, reads no policy.
    "PriceRefreshFunction": FunctionNeeds(
        sagemaker=(),
        store=("read", "put"),
        trigger=None,
        reports=False,
        policy=False,
        pricing=("training_rows",),
    ),
    # The submission queue's consumer (docs/explanation/queue.md): records submissions, reserves through the ledger
    # (quotas as arrivals), creates the job; reports to owners. It judges no rule; it stops a borrower
    # the shares core preempts, and reads a job stopped on arrival to requeue it (Describe, ListTags).
    "QueueSubmissionsFunction": FunctionNeeds(
        sagemaker=("stop_tuning_job", "list_tags"),
        store=_ALL_STORE,
        trigger=None,
        quotas=True,
        submissions=True,
    ),
}


def required_actions(function_logical_id: str) -> frozenset[str]:
    return FUNCTIONS[function_logical_id].actions()


#: The services whose calls a member-acting function makes in the member account (with the member role's
#: credentials); its table, reports, policy, schedules and STS stay in the hub.
MEMBER_SERVICES = ("sagemaker", "servicequotas")


def member_actions() -> frozenset[str]:
    """What member/template.yaml's member role grants: every SageMaker and Service Quotas action of the
    functions that act in member accounts (``FunctionNeeds.members``), as their own roles are derived."""
    return frozenset(
        action
        for needs in FUNCTIONS.values()
        if needs.members
        for action in needs.actions()
        if action.split(":", 1)[0] in MEMBER_SERVICES
    )
