"""template.yaml, member/template.yaml and the boundary pass cfn-lint (all rules, informational included);
template.yaml passes `sam validate --lint`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.template.cfn import REGION, ROOT, TEMPLATE, sam_env


@pytest.mark.parametrize(
    "template",
    [TEMPLATE, ROOT / "docs" / "iam" / "permissions-boundary.yaml", ROOT / "member" / "template.yaml"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_cfn_lint_reports_nothing(template: Path) -> None:
    from cfnlint.api import ManualArgs, lint_file

    # Given the template (and the boundary's), linted with informational checks too (I3011: explicit deletion policies)
    matches = lint_file(template, config=ManualArgs(regions=[REGION], include_checks=["I"]))

    # Then nothing is reported; a suppression belongs in the template, with its reason beside it
    assert not matches, "cfn-lint findings:\n" + "\n".join(
        f"{m.rule.id} {m.message} ({m.filename}:{m.linenumber})" for m in matches
    )


@pytest.mark.sam
def test_sam_validate_lint_passes(sam_cli: str) -> None:
    result = subprocess.run(  # noqa: S603 - fixed argv, sam path from our own lookup
        [sam_cli, "validate", "--lint", "--template-file", str(TEMPLATE), "--region", REGION],
        cwd=ROOT,
        env=sam_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert result.returncode == 0, f"sam validate --lint failed:\n{result.stdout}\n{result.stderr}"
    assert "is a valid SAM Template" in result.stdout + result.stderr
