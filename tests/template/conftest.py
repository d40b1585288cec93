"""Fixtures for the template tests: the parsed SAM template, its translation, and the SAM CLI."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.template.cfn import find_sam_cli, load_template, translate


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="session")
def cfn_template(sam_template: dict[str, Any]) -> dict[str, Any]:
    return translate(sam_template)


@pytest.fixture(scope="session")
def sam_cli() -> str:
    """Path of the SAM CLI; without one the test fails in CI (env CI set) and is skipped locally."""
    sam = find_sam_cli()
    if sam is None:
        message = (
            "SAM CLI not found: set SAM_CLI, install it into .venv-tools or .venv "
            "(pip install aws-sam-cli), or put `sam` on PATH"
        )
        if os.environ.get("CI", "").lower() not in {"", "0", "false"}:
            pytest.fail(message)
        pytest.skip(message)
    return sam
