"""Every AWS client the governor uses is made by the one factory (adapters/sessions.py), never by hand."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "governor" / "tuning_governor"
# The factory, and the organisation provider it is handed (member sessions on assumed-role credentials).
FACTORY = {PACKAGE / "adapters" / "sessions.py", PACKAGE / "adapters" / "assumed_roles.py"}
MADE_BY_HAND = re.compile(r"\bboto3\.(client|resource|session\.Session|Session)\(")


def test_no_client_is_made_outside_the_factory() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50, "the package was not found"
    by_hand = [str(m.relative_to(PACKAGE)) for m in modules if m not in FACTORY and MADE_BY_HAND.search(m.read_text())]
    assert by_hand == []


def test_the_factory_makes_its_clients_from_a_session() -> None:
    text = (PACKAGE / "adapters" / "sessions.py").read_text()
    assert "session.client(service, region_name=region" in text
