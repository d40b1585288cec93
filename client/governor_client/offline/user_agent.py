"""botocore's User-Agent components sanitised once per distinct text, not once per request.

botocore rebuilds the User-Agent header for every request (``UserAgentString.to_string``, on
``request-created``), and each component's prefix, name and value goes through
``sanitize_user_agent_string_component``: a character-by-character join, the same few strings every
time (the SDK, the OS, the language, the client's config, the request's feature ids). Offline runs make
hundreds of thousands of requests against moto, and that join was about 2 % of their CPU. The function
is pure (its result depends on the text and on whether ``#`` is allowed, nothing else), so its results
are cached here for ``str`` input; any other input goes to botocore's function unchanged. The header
botocore sends is the same string.

``install()`` is idempotent; ``uninstall()`` restores botocore's function.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.useragent

_ORIGINAL = botocore.useragent.sanitize_user_agent_string_component


@functools.lru_cache(maxsize=4096)
def _sanitised(raw: str, allow_hash: bool) -> str:
    return str(_ORIGINAL(raw, allow_hash))


def sanitize_user_agent_string_component(raw_str: Any, allow_hash: Any) -> Any:
    """botocore's function, its result cached per (text, whether ``#`` is allowed)."""
    if type(raw_str) is str:
        return _sanitised(raw_str, bool(allow_hash))
    return _ORIGINAL(raw_str, allow_hash)


def install() -> None:
    botocore.useragent.sanitize_user_agent_string_component = sanitize_user_agent_string_component


def uninstall() -> None:
    botocore.useragent.sanitize_user_agent_string_component = _ORIGINAL


def installed() -> bool:
    return botocore.useragent.sanitize_user_agent_string_component is sanitize_user_agent_string_component
