"""Free text in Slack reports is shown, never acted on: a tag value or hyperparameter cannot ping a channel
or hide a link behind our message (Slack's control characters are &, < and >)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tuning_governor.adapters.channels.slack import render_blocks
from tuning_governor.adapters.channels.slack_text import escape_mrkdwn
from tuning_governor.adapters.channels.slack_text import mrkdwn_field as _mrkdwn
from tuning_governor.domain.reports import decision_report

HOSTILE = "budget tag value '<!channel> <https://evil.example|click> & more'"


def _mrkdwn_texts(blocks: list[dict[str, object]]) -> list[str]:
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                texts.append(str(node["text"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(blocks)
    return texts


def test_a_hostile_tag_value_in_a_decision_is_escaped_in_every_mrkdwn_text() -> None:
    report = decision_report(
        rule="tags",
        verdict="warning",
        job_key="job",
        job_name="job",
        team="<!here>",
        message=HOSTILE,
        numbers={"tag": "governance:budget-usd", "value": "<!channel>"},
        at="2026-11-30T09:00:00+00:00",
        mode="monitor",
        action="warned",
        detail="reported only",
    )
    texts = _mrkdwn_texts(render_blocks(report))
    assert texts
    joined = "\n".join(texts)
    assert "<!channel>" not in joined and "<!here>" not in joined and "<https://" not in joined
    assert "&lt;!channel&gt;" in joined
    assert "&amp; more" in joined
    # our own markup stays markup
    assert "*tags* (warning)" in joined
    # the plain-text body (SNS, email) is left as written
    assert HOSTILE in report.text
    assert "<!channel>" not in json.dumps(render_blocks(report))


@given(st.text(max_size=200), st.integers(min_value=5, max_value=50))
def test_escaped_text_cut_to_a_limit_never_ends_in_half_an_entity(text: str, limit: int) -> None:
    out = _mrkdwn("{v}", limit, v=text)
    assert len(out) <= limit
    assert "<" not in out and ">" not in out
    tail = out[out.rfind("&") :] if "&" in out else ""
    assert not tail or tail.startswith(("&amp;", "&lt;", "&gt;"))


def test_escaping_is_slacks_three_entities_only() -> None:
    assert escape_mrkdwn("a & b < c > d *e* _f_") == "a &amp; b &lt; c &gt; d *e* _f_"
