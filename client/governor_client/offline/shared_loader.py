"""One botocore data loader for every session an offline process makes.

A botocore session parses the service models (JSON, about 1 MB for SageMaker) the first time one of
its clients is made, and keeps them in its own loader. ``moto.mock_aws`` drops boto3's default session
each time it starts, and the governor's client factory makes a session per ``Clients``, so a test run
parsed the same files again for every moto world and every wiring (tests/integration/test_shared_loader.py
counts the files read). The files are read-only data, so
one loader per search path, cached for the process, answers every session alike; the deployed
governor already shares one loader between its member sessions (``adapters.assumed_roles``).

``install()`` is idempotent; ``uninstall()`` restores botocore's own ``create_loader``.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session

_ORIGINAL = botocore.loaders.create_loader


@functools.cache
def _loader(search_path_string: str | None = None) -> Any:
    return _ORIGINAL(search_path_string)


def install() -> None:
    """Every new botocore session takes the process's loader for its data path."""
    botocore.session.create_loader = _loader


def uninstall() -> None:
    botocore.session.create_loader = _ORIGINAL


def installed() -> bool:
    return botocore.session.create_loader is _loader
