"""The table's TTL: the attribute the template enables is the one the store writes, and the trial
retention the stack sets reaches every function."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.template.cfn import resources_of_type
from tuning_governor.adapters.dynamodb import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS
from tuning_governor.settings import Settings


def test_table_ttl_is_enabled_on_the_attribute_the_store_writes(sam_template: dict[str, Any]) -> None:
    table = sam_template["Resources"]["GovernorTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": EXPIRY_ATTRIBUTE, "Enabled": True}


@pytest.mark.parametrize(
    ("value", "allowed"),
    [("0", True), ("200", True), ("365", True), ("3650", True), ("1", False), ("90", False), ("199", False),
     ("-1", False), ("", False), ("200.5", False)],
)  # fmt: skip
def test_trial_retention_is_0_to_keep_or_at_least_200_days(
    sam_template: dict[str, Any], value: str, allowed: bool
) -> None:
    parameter = sam_template["Parameters"]["TrialRetentionDays"]
    assert parameter["Default"] in (0, "0")
    assert (re.fullmatch(parameter["AllowedPattern"], value) is not None) is allowed
    # The store refuses exactly what the template refuses (for whole numbers).
    if value.lstrip("-").isdigit():
        assert (int(value) == 0 or int(value) >= MIN_TRIAL_RETENTION_DAYS) is allowed


def test_every_function_gets_the_trial_retention(cfn_template: dict[str, Any]) -> None:
    functions = resources_of_type(cfn_template, "AWS::Lambda::Function")
    assert functions
    for function in functions.values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["TRIAL_RETENTION_DAYS"] == {"Ref": "TrialRetentionDays"}


def test_settings_read_the_trial_retention() -> None:
    base = {"TABLE_NAME": "governor", "AWS_REGION": "us-east-1"}
    assert Settings.model_validate(base).trial_retention_days == 0
    assert Settings.model_validate(base | {"TRIAL_RETENTION_DAYS": "400"}).trial_retention_days == 400
