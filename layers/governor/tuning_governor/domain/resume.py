"""Resume by warm start: the CreateHyperParameterTuningJob request that continues a stopped tuning job.

A job the governor stopped for capacity (preempted, or stopped on arrival under
``defaults.on_over_capacity: requeue``) is queued again as a new tuning job that warm-starts from it
(``WarmStartType`` ``IdenticalDataAndAlgorithm``), so no finished trial is wasted. The rule, with its
sources, is in docs/explanation/queue.md ("Resume by warm start"); in short:

- **Budget.** A resumed job may launch ``MaxNumberOfTrainingJobs`` of the stopped job minus every
  training job the stopped job launched, whatever their status (AWS counts launched training jobs). By
  induction the whole chain launches at most the first job's ``MaxNumberOfTrainingJobs``, and each
  child's limit plus its parents' training jobs stays within what AWS accepted for the stopped job,
  so AWS's count of the parents' training jobs against the per-tuning-job maximum cannot refuse it.
- **Parents.** The stopped job (when one of its trials completed with an objective), then its own
  parents when it was itself an ``IdenticalDataAndAlgorithm`` warm start (warm start is not recursive:
  ancestors help only when listed), most recent first, at most 5 (``MAX_PARENTS``).
- **Name.** ``q-<root>-r<N>-<hmac>``, at most 32 characters (SageMaker's pattern), under the queue's
  reserved prefix, the same for the same root, N and the stack's secret name key, and not computable
  without the key; the chain is on the tags (``RESUMED_FROM_TAG`` ...).

Nothing here calls AWS: the caller passes the stopped job's DescribeHyperParameterTuningJob response
and tags, and sends the request.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.queue import JOB_NAME_PREFIX, QUEUE_TOKEN_TAG, job_name_for

MAX_PARENTS = 5
"""``ParentHyperParameterTuningJobs``: "Maximum number of 5 items" (API reference)."""
MAX_NAME = 32
MAX_TAGS = 50
IDENTICAL = "IdenticalDataAndAlgorithm"
RESUMED_FROM_TAG = "governance:resumed-from"
RESUME_ROOT_TAG = "governance:resume-root"
RESUME_N_TAG = "governance:resume-n"
TRIALS_USED_TAG = "governance:trials-used"
#: The tags that carry a resume chain (written by the governor only: a submission's are dropped).
RESUME_TAGS = (RESUMED_FROM_TAG, RESUME_ROOT_TAG, RESUME_N_TAG, TRIALS_USED_TAG)
#: Not copied from the stopped job: the chain is written anew, and the queue sets the resumed request's own token.
_CHAIN_TAGS = (RESUMED_FROM_TAG, RESUME_ROOT_TAG, RESUME_N_TAG, TRIALS_USED_TAG, QUEUE_TOKEN_TAG)
_COPIED = ("HyperParameterTuningJobConfig", "TrainingJobDefinition", "TrainingJobDefinitions")


class StoppedJob(GovernorModel):
    """The stopped tuning job: its Describe response (as boto3 returns it) and its tags (a flat map)."""

    model_config = ConfigDict(frozen=True)

    describe: dict[str, Any]
    tags: dict[str, str] = {}

    @property
    def name(self) -> str:
        return str(self.describe["HyperParameterTuningJobName"])

    @property
    def launched(self) -> int:
        """Every training job the job launched: AWS's counters by status, summed."""
        counters = self.describe.get("TrainingJobStatusCounters") or {}
        return sum(int(v) for v in counters.values())

    @property
    def completed(self) -> int:
        """Trials whose objective was reported (what a warm start learns from)."""
        counters = self.describe.get("ObjectiveStatusCounters") or {}
        return int(counters.get("Succeeded", 0))

    @property
    def max_jobs(self) -> int:
        limits = self.describe["HyperParameterTuningJobConfig"].get("ResourceLimits") or {}
        return int(limits.get("MaxNumberOfTrainingJobs") or 0)

    @property
    def own_parents(self) -> list[str]:
        """Its own warm-start parents, when they are of the same data and algorithm."""
        warm = self.describe.get("WarmStartConfig") or {}
        if warm.get("WarmStartType") != IDENTICAL:
            return []
        return [str(p["HyperParameterTuningJobName"]) for p in warm.get("ParentHyperParameterTuningJobs") or []]


class ResumePlan(GovernorModel):
    """The resumed job: ``request`` is the CreateHyperParameterTuningJob kwargs, ready to send."""

    model_config = ConfigDict(frozen=True)

    name: str
    request: dict[str, Any]
    parents: list[str]
    remaining_trials: int
    trials_used: int
    resume_number: int


class ResumeRefused(GovernorModel):
    """The job cannot be resumed, and why (for the owner's report)."""

    model_config = ConfigDict(frozen=True)

    job: str
    reason: str


def resume_name(root: str, number: int, key: str = "") -> str:
    """``q-<root>-r<number>-<8 hex>`` cut to 32 characters: under the queue's reserved prefix
    (``models.queue.JOB_NAME_PREFIX``, once: a queued job's root already has it), the root as far as
    it fits, and an HMAC of (root, number) under the stack's secret name key, so nobody without the key
    can create the name first and two long roots that share a prefix stay apart. The same for the same
    root, number and key (a retried resume finds its job)."""
    digest = job_name_for(root, str(number), key)[len(JOB_NAME_PREFIX) :][:8]
    suffix = f"-r{number}-{digest}"
    stem = root[len(JOB_NAME_PREFIX) :] if root.startswith(JOB_NAME_PREFIX) else root
    base = f"{JOB_NAME_PREFIX}{stem}"[: MAX_NAME - len(suffix)].rstrip("-")
    return f"{base}{suffix}"


def plan_resume(
    stopped: StoppedJob, *, max_parallel: int | None = None, name_key: str = ""
) -> ResumePlan | ResumeRefused:
    """The request that resumes ``stopped``, or why it cannot be resumed.

    The same input always gives the same request (name included), so a retried resume creates the
    job once: a second CreateHyperParameterTuningJob with the name fails with ResourceInUse.
    ``max_parallel`` lowers ``MaxParallelTrainingJobs`` further (e.g. to what fits a team's share);
    ``name_key`` is the stack's secret name key (``resume_name``).
    """
    status = stopped.describe.get("HyperParameterTuningJobStatus")
    if status != "Stopped":
        return ResumeRefused(
            job=stopped.name, reason=f"{stopped.name} is {status}, not Stopped: only a stopped job resumes"
        )
    remaining = stopped.max_jobs - stopped.launched
    if remaining <= 0:
        return ResumeRefused(
            job=stopped.name,
            reason=f"no trial budget remains: {stopped.name} launched {stopped.launched} of {stopped.max_jobs} trials",
        )
    number = int(stopped.tags.get(RESUME_N_TAG, "0")) + 1
    root = stopped.tags.get(RESUME_ROOT_TAG, stopped.name)
    used = int(stopped.tags.get(TRIALS_USED_TAG, "0")) + stopped.launched
    tags = _tags(stopped, root=root, number=number, used=used)
    if len(tags) > MAX_TAGS:
        return ResumeRefused(job=stopped.name, reason=f"the resumed job would carry {len(tags)} tags (AWS allows 50)")
    name = resume_name(root, number, name_key)
    parents = _parents(stopped)
    request = _request(stopped, name=name, remaining=remaining, max_parallel=max_parallel, parents=parents)
    request["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    return ResumePlan(
        name=name, request=request, parents=parents, remaining_trials=remaining, trials_used=used, resume_number=number
    )


def _parents(stopped: StoppedJob) -> list[str]:
    candidates = ([stopped.name] if stopped.completed > 0 else []) + stopped.own_parents
    return list(dict.fromkeys(candidates))[:MAX_PARENTS]


def _request(
    stopped: StoppedJob, *, name: str, remaining: int, max_parallel: int | None, parents: list[str]
) -> dict[str, Any]:
    request: dict[str, Any] = {"HyperParameterTuningJobName": name}
    request.update({key: copy.deepcopy(stopped.describe[key]) for key in _COPIED if stopped.describe.get(key)})
    limits = request["HyperParameterTuningJobConfig"].setdefault("ResourceLimits", {})
    parallel = min(int(limits.get("MaxParallelTrainingJobs", 1)), remaining, max_parallel or remaining)
    limits["MaxNumberOfTrainingJobs"] = remaining
    limits["MaxParallelTrainingJobs"] = max(1, parallel)
    if parents:
        request["WarmStartConfig"] = {
            "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": p} for p in parents],
            "WarmStartType": IDENTICAL,
        }
    return request


def _tags(stopped: StoppedJob, *, root: str, number: int, used: int) -> dict[str, str]:
    kept: Mapping[str, str] = {
        k: v for k, v in stopped.tags.items() if not k.lower().startswith("aws:") and k not in _CHAIN_TAGS
    }
    chain = {
        RESUMED_FROM_TAG: stopped.name,
        RESUME_ROOT_TAG: root,
        RESUME_N_TAG: str(number),
        TRIALS_USED_TAG: str(used),
    }
    return {**kept, **chain}
