"""The per-team and per-rule metrics the dashboard plots: EMF lines with the dimension the widget searches on."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tuning_governor.breakdowns import UNTAGGED_TEAM, rule_decided, rule_stopped, team_spent
from tuning_governor.observability import NAMESPACE, SERVICE


def _emf(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def _metric(blob: dict[str, Any]) -> tuple[str, list[str]]:
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == NAMESPACE
    (metric,) = directive["Metrics"]
    (dimensions,) = directive["Dimensions"]
    return metric["Name"], sorted(dimensions)


def test_team_spend_is_one_metric_with_service_and_team_dimensions(capsys: pytest.CaptureFixture[str]) -> None:
    team_spent("vision", Decimal("12.345678"))
    team_spent(None, Decimal("1.5"))

    first, second = _emf(capsys)
    assert _metric(first) == ("TeamSpendUSD", ["service", "team"])
    assert (first["service"], first["team"], first["TeamSpendUSD"]) == (SERVICE, "vision", [12.345678])
    assert (second["team"], second["TeamSpendUSD"]) == (UNTAGGED_TEAM, [1.5])


def test_decisions_and_stops_are_counted_per_rule(capsys: pytest.CaptureFixture[str]) -> None:
    rule_decided("budget")
    rule_stopped("concurrency")

    decided, stopped = _emf(capsys)
    assert _metric(decided) == ("DecisionsByRule", ["rule", "service"])
    assert (decided["rule"], decided["DecisionsByRule"]) == ("budget", [1.0])
    assert _metric(stopped) == ("StopsByRule", ["rule", "service"])
    assert (stopped["service"], stopped["rule"], stopped["StopsByRule"]) == (SERVICE, "concurrency", [1.0])


def test_a_team_tag_longer_than_cloudwatch_allows_is_cut(capsys: pytest.CaptureFixture[str]) -> None:
    team_spent("t" * 2000, Decimal(1))

    (blob,) = _emf(capsys)
    assert blob["team"] == "t" * 1024


def test_spend_and_stops_are_counted_per_account_and_region(capsys: pytest.CaptureFixture[str]) -> None:
    from tuning_governor.breakdowns import account_spent, account_stopped

    account_spent("111111111111", "eu-west-1", Decimal("7.25"))
    account_stopped("222222222222", "us-east-1")

    spent, stopped = _emf(capsys)
    assert _metric(spent) == ("AccountSpendUSD", ["account", "region", "service"])
    assert (spent["account"], spent["region"], spent["AccountSpendUSD"]) == ("111111111111", "eu-west-1", [7.25])
    assert _metric(stopped) == ("StopsByAccount", ["account", "region", "service"])
    assert (stopped["service"], stopped["account"], stopped["region"]) == (SERVICE, "222222222222", "us-east-1")
