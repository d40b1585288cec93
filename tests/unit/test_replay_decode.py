"""The replay's line decoder (``governor_client.replay.lines.decoded``) reads exactly what ``json.loads``
reads: the same value, or the same refusal with json's own message."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governor_client.replay.lines import decoded

TRICKY = [
    '{"a":-0}', '{"a":-0.0}', '{"a":1e400}', '{"a":123456789012345678901234567890}', '{"a":"\\ud800"}',
    '{"a":1,"a":2}', "[" * 300 + "]" * 300, '{"a":NaN}', '{"a":-Infinity}', '{"a":1E2}', '{"a":5e-324}',
    '{"a":1.00000000000000011102230246251565404236316680908203125}', '  {"a":true} \n', '"x"', "1",
]  # fmt: skip
REFUSED = ["{", '{"a":}', "", '{"a":1,}', "{'a':1}", '{"a":1} x', "\ufeff{}"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(text: str | bytes) -> None:
    try:
        expected: object = json.loads(text)
    except json.JSONDecodeError as exc:
        expected = (exc.msg, exc.pos)
    try:
        got: object = decoded(text)
    except json.JSONDecodeError as exc:
        got = (exc.msg, exc.pos)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("text", TRICKY + REFUSED)
def test_tricky_and_refused_lines_read_as_json_reads_them(text: str) -> None:
    _same(text)
    _same(text.encode("utf-8", "surrogatepass"))


@given(json_values)
def test_any_json_value_reads_back_as_json_reads_it(value: object) -> None:
    _same(json.dumps(value))
    _same(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@given(st.text(max_size=40))
def test_any_text_is_read_or_refused_as_json_does(text: str) -> None:
    _same(text)
