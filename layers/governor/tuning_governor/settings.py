"""Runtime settings: one pydantic model, read from the environment once per cold start.

A plain model validated from ``os.environ`` rather than pydantic-settings' BaseSettings: the names are
exact (Lambda sets them as the template spells them), and pydantic-settings' import (with asyncio and
its dotenv and cloud sources) cost about 30 ms of every cold start.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Annotated, Any

from pydantic import AliasChoices, BeforeValidator, ConfigDict, Field, model_validator

from tuning_governor.model_base import GovernorModel


def _json_object(value: Any) -> Any:
    """An environment variable holding a JSON object (empty: none)."""
    if isinstance(value, str):
        return json.loads(value) if value.strip() else {}
    return value


class Settings(GovernorModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    table_name: str = Field(validation_alias="TABLE_NAME", min_length=3)
    topic_arn: str = Field(default="", validation_alias="TOPIC_ARN")
    slack_secret_arn: str = Field(default="", validation_alias="SLACK_SECRET_ARN")
    region: str = Field(validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION"))
    channel_secrets: Annotated[dict[str, str], BeforeValidator(_json_object)] = Field(
        default={}, validation_alias="CHANNEL_SECRETS"
    )
    """The stack's own webhook channels besides Slack, ``{"<kind>": "<secret ARN>"}`` as JSON (kinds of
    ``tuning_governor.domain.channels``; an empty ARN: that channel is off)."""
    slack_secret_prefix: str = Field(default="", validation_alias="SLACK_SECRET_PREFIX")
    """Team Slack secrets the stack may read are named under this prefix (empty: no team Slack)."""
    team_topic_prefix: str = Field(default="", validation_alias="TEAM_TOPIC_PREFIX")
    """Team SNS topics the stack may publish to are named under this prefix (empty: no team topics)."""
    owner_tag: str = Field(default="owner", validation_alias="GOVERNOR_OWNER_TAG")
    secret_max_age_seconds: int = Field(default=300, validation_alias="GOVERNOR_SECRET_MAX_AGE")
    policy_parameter: str = Field(default="", validation_alias="POLICY_PARAMETER")
    """SSM parameter holding the policy (YAML or JSON); empty = POLICY_FILE or the bundled default."""
    policy_file: str = Field(default="", validation_alias="POLICY_FILE")
    """Path of a policy file bundled with the deployment; empty = the layer's conservative default."""
    policy_max_age_seconds: int = Field(default=300, validation_alias="POLICY_MAX_AGE")
    quota_cache_seconds: int = Field(default=900, validation_alias="QUOTA_CACHE_SECONDS")
    price_cache_seconds: int = Field(default=3600, validation_alias="PRICE_CACHE_SECONDS")
    """How long a handler reuses the refreshed price catalogs it read from DynamoDB."""
    budget_check_target_arn: str = Field(default="", validation_alias="BUDGET_CHECK_TARGET_ARN")
    """The function a one-time budget check invokes (empty: no checks are scheduled; the sweep judges)."""
    budget_check_role_arn: str = Field(default="", validation_alias="BUDGET_CHECK_ROLE_ARN")
    budget_check_group: str = Field(default="default", validation_alias="BUDGET_CHECK_GROUP")
    trial_retention_days: int = Field(default=0, ge=0, validation_alias="TRIAL_RETENTION_DAYS")
    """Trial rows expire this many days after the trial ended (0: kept); the store refuses 1-199."""
    queue_name_key_secret_arn: str = Field(default="", validation_alias="QUEUE_NAME_KEY_SECRET_ARN")
    """The secret holding the queue's name key (the consumer only; the stack generates it)."""
    budget_check_horizon_seconds: int = Field(default=3600, ge=0, validation_alias="BUDGET_CHECK_HORIZON_SECONDS")
    """A check is scheduled only for a crossing this close; later ones are re-estimated by the sweeps
    (every 5 minutes) until they come this close, as the burn may change before then."""

    organization_id: str = Field(default="", validation_alias="GOVERNOR_ORGANIZATION_ID")
    """The AWS Organizations id the hub admits events from (template.yaml's OrganizationId; empty: a
    single-account deploy). While set, every event's account is checked against the policy's ``accounts``
    (and the home account), even when the policy lists none (``app.membership``)."""
    member_role_name: str = Field(default="", validation_alias="GOVERNOR_MEMBER_ROLE")
    """The member stacks' role name prefix (``<name>-<region>``, ``adapters.assumed_roles``; empty: none)."""
    sweep_parallel_places: int = Field(default=4, ge=1, le=32, validation_alias="SWEEP_PARALLEL_PLACES")
    """How many member places (account x region) one sweep walks at once (``app.sweep.places``)."""
    sweep_reserve_seconds: int = Field(default=60, ge=0, validation_alias="SWEEP_RESERVE_SECONDS")
    """A member place is begun only while more than this much of the sweep's Lambda time is left; the
    rest are carried to the next sweep (stalest first) and counted as ``SweepPlacesDeferred``."""

    @property
    def account_id(self) -> str:
        """The stack's account, from its reports topic's ARN ("" when no topic is configured)."""
        parts = self.topic_arn.split(":")
        return parts[4] if len(parts) > 5 and parts[0] == "arn" else ""

    @model_validator(mode="after")
    def _one_policy_source(self) -> Settings:
        if self.policy_parameter and self.policy_file:
            raise ValueError("set POLICY_PARAMETER or POLICY_FILE, not both: which one governs would be a guess")
        return self


@cache
def get_settings() -> Settings:
    return Settings.model_validate(dict(os.environ))
