"""Warm pools that later training jobs can reuse: which pools match a job, and who gets which pool.

A job that ends ``Completed`` with ``ResourceConfig.KeepAlivePeriodInSeconds`` > 0 offers its cluster as
a warm pool until the keep-alive runs out. A new job (a trial or a standalone ``CreateTrainingJob``) with a
keep-alive > 0 and the same cluster shape takes over the oldest matching pool: the donor's
``WarmPoolStatus`` becomes ``Reused`` (``ReusedByJob``, ``ResourceRetainedBillableTimeInSeconds`` = the
seconds the pool waited), and the new job starts on it (``InUse``).

Matching follows AWS's "matching specifications such as instance count or instance type" [doc]; the
exact key used here (account, region, role, instance type and count, volume size and KMS key, VPC,
network isolation, inter-container encryption) is [inferred]. Heterogeneous clusters (InstanceGroups)
never match. This module only keeps the book; the engine applies the transitions.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .training_job import SimTrainingJob

PoolKey = tuple[str, ...]


def pool_key(account_id: str, region: str, request: Mapping[str, Any]) -> PoolKey | None:
    """The key a job's cluster is matched on, or ``None`` when the job can neither keep nor reuse a pool
    (no ``KeepAlivePeriodInSeconds`` > 0, or an InstanceGroups cluster)."""
    resource = request.get("ResourceConfig") or {}
    if int(resource.get("KeepAlivePeriodInSeconds") or 0) <= 0 or resource.get("InstanceGroups"):
        return None
    if not resource.get("InstanceType"):
        return None
    return (
        account_id,
        region,
        str(request.get("RoleArn", "")),
        str(resource["InstanceType"]),
        str(resource.get("InstanceCount", 1)),
        str(resource.get("VolumeSizeInGB", "")),
        str(resource.get("VolumeKmsKeyId", "")),
        json.dumps(request.get("VpcConfig") or {}, sort_keys=True),
        str(bool(request.get("EnableNetworkIsolation"))),
        str(bool(request.get("EnableInterContainerTrafficEncryption"))),
    )


@dataclass
class WarmPool:
    """One ``Available`` pool: the job it belongs to, since when, and until when (keep-alive)."""

    key: PoolKey
    owner: SimTrainingJob
    available_since: datetime
    expires_at: datetime
    seq: int

    def retained_seconds(self, at: datetime) -> int:
        """``ResourceRetainedBillableTimeInSeconds`` if the pool is released (reused) at ``at``."""
        return max(0, math.ceil((min(at, self.expires_at) - self.available_since).total_seconds()))


class WarmPoolRegistry:
    """The ``Available`` pools, by key, oldest first.

    Callers may rely on: :meth:`claim` returns the pool that became available first among those that
    match and have not expired at ``at`` (ties: the one offered first), and removes it; a pool is
    offered at most once per ``Available`` period.
    """

    def __init__(self) -> None:
        self._pools: defaultdict[PoolKey, list[WarmPool]] = defaultdict(list)
        self._by_owner: dict[int, WarmPool] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._by_owner)

    def offer(self, key: PoolKey, owner: SimTrainingJob, at: datetime, keep_alive_s: float) -> WarmPool:
        """Make ``owner``'s cluster available from ``at`` for ``keep_alive_s`` seconds."""
        self.withdraw(owner)
        self._seq += 1
        pool = WarmPool(key, owner, at, at + timedelta(seconds=keep_alive_s), self._seq)
        self._pools[key].append(pool)
        self._by_owner[id(owner)] = pool
        return pool

    def claim(self, key: PoolKey, at: datetime) -> WarmPool | None:
        """Take the oldest unexpired pool matching ``key`` at ``at`` (None: no pool to reuse)."""
        pools = self._pools.get(key)
        if not pools:
            return None
        for pool in pools:
            if pool.available_since <= at < pool.expires_at:
                self._remove(pool)
                return pool
        return None

    def withdraw(self, owner: SimTrainingJob) -> None:
        """Forget ``owner``'s pool (terminated); nothing happens if it has none."""
        pool = self._by_owner.get(id(owner))
        if pool is not None:
            self._remove(pool)

    def _remove(self, pool: WarmPool) -> None:
        self._by_owner.pop(id(pool.owner), None)
        pools = self._pools[pool.key]
        pools.remove(pool)
        if not pools:
            del self._pools[pool.key]
