"""Slack text the way Slack's own rules read it ("Formatting text for app surfaces", the text object
reference): ``&``, ``<`` and ``>`` are control characters and must be escaped in free text; a
``mrkdwn`` text object with ``verbatim: false`` (the default) is preprocessed (URLs linked, channel
names linked, some mentions parsed), so every mrkdwn object the governor builds is ``verbatim``; the
fields that cannot be (``plain_text``, a message's top-level ``text``) get their mentions defused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slack_sdk.models.blocks import MarkdownTextObject


def escape_mrkdwn(text: str) -> str:
    """Free text (hyperparameter values, tag values, FailureReason, messages quoting them) made inert in
    Slack mrkdwn: Slack's control characters ``&``, ``<`` and ``>`` become entities, so a value like
    ``<!channel>`` or ``<https://x|click>`` is shown, never acted on (Slack API, "Formatting text")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn_field(template: str, limit: int, **free: Any) -> str:
    """``template`` (our own markup) filled with the escaped ``free`` values, cut at ``limit`` without
    leaving half an entity."""
    text = template.format(**{name: escape_mrkdwn(str(value)) for name, value in free.items()})
    if len(text) <= limit:
        return text
    cut = text[:limit]
    amp = cut.rfind("&")
    return cut[:amp] if amp != -1 and ";" not in cut[amp:] else cut


#: A ``@`` before a word: what Slack's automatic parsing may turn into a mention (``@here``,
#: ``@channel``, ``@everyone``, a user name) in text it preprocesses.
_AT_WORD = re.compile(r"@(?=\w)")
#: U+2060 WORD JOINER: invisible, and not a word character, so ``@\u2060here`` is never a mention.
_WORD_JOINER = "\u2060"


def defuse_mentions(text: str) -> str:
    """Text for a Slack field that cannot be ``verbatim`` (``plain_text``, a message's top-level
    ``text``): every ``@`` before a word is followed by an invisible word joiner, so automatic parsing
    finds no ``@here``/``@channel``/``@everyone`` or user name to turn into a mention."""
    return _AT_WORD.sub("@" + _WORD_JOINER, text)


def slack_fallback(subject: str) -> str:
    """A report's subject as a Slack message's top-level ``text`` (mrkdwn, shown in notifications):
    Slack's control characters escaped and mentions defused; no field here can be ``verbatim``."""
    return defuse_mentions(escape_mrkdwn(subject))


def verbatim_mrkdwn(text: str) -> MarkdownTextObject:
    """A mrkdwn text object Slack shows as given: ``verbatim`` (no automatic parsing of URLs, channel
    names or mentions); only our own markup and ``<@member>`` mentions are parsed."""
    from slack_sdk.models.blocks import MarkdownTextObject  # noqa: PLC0415

    return MarkdownTextObject(text=text, verbatim=True)
