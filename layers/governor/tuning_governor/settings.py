"""Runtime settings: one pydantic-settings model, read from the environment once per cold start."""

from __future__ import annotations

from functools import cache

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(frozen=True, extra="ignore")

    table_name: str = Field(validation_alias="TABLE_NAME", min_length=3)
    topic_arn: str = Field(default="", validation_alias="TOPIC_ARN")
    slack_secret_arn: str = Field(default="", validation_alias="SLACK_SECRET_ARN")
    region: str = Field(validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION"))
    team_tag: str = Field(default="team", validation_alias="GOVERNOR_TEAM_TAG")
    owner_tag: str = Field(default="owner", validation_alias="GOVERNOR_OWNER_TAG")
    secret_max_age_seconds: int = Field(default=300, validation_alias="GOVERNOR_SECRET_MAX_AGE")


@cache
def get_settings() -> Settings:
    return Settings()  # values come from the environment
