"""Where the price catalogue ``prices fetch`` writes lives, and the host it reads: the standard library only,
so the ``prices`` command's arguments (``governor_client.prices.command``) name them without loading the prices."""

from __future__ import annotations

import os
from pathlib import Path

OFFERS_HOST = "https://pricing.us-east-1.amazonaws.com"


def user_catalogue_path() -> Path:
    """Where ``prices fetch`` writes by default and ``check``/``replay`` read: $TUNING_GOVERNOR_PRICES, else
    ``$XDG_CACHE_HOME/tuning-governor/prices.json`` (``~/.cache`` without it)."""
    explicit = os.environ.get("TUNING_GOVERNOR_PRICES")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tuning-governor" / "prices.json"
