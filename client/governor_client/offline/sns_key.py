"""One RSA key per process for the messages moto's SNS signs, instead of one per subscription.

moto signs every message it delivers to a subscription (the queue the offline environment subscribes
to the report topic gets SNS envelopes: ``Signature``, ``SigningCertURL``) with an RSA key of that
subscription, generated on its first delivery (``Subscription.private_key``: a 2048-bit key, about
40 ms of CPU, cached per subscription object). Each moto world subscribes its own queue, so each world
that published generated a key. The key is random either way, and moto publishes the certificate of
whichever key signed (its public key, under the ``SigningCertURL``), so a message signed with the
process's one key verifies against its certificate exactly as before.

``install()`` is idempotent; ``uninstall()`` restores moto's per-subscription key. moto's SNS and the
cryptography package are imported by ``install()``, not with this module (a replay imports none of them).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

_installed: dict[str, Any] = {}


@functools.cache
def process_key() -> rsa.RSAPrivateKey:
    """The process's key, made as moto makes a subscription's (public exponent 65537, 2048 bits)."""
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415 - on first use

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _private_key(_subscription: Any) -> rsa.RSAPrivateKey:
    return process_key()


def install() -> None:
    """Every subscription signs with the process's key (once)."""
    if _installed:
        return
    from moto.sns.models import Subscription  # noqa: PLC0415 - moto's SNS only where it runs

    _installed["private_key"] = Subscription.__dict__["private_key"]
    Subscription.private_key = _private_key  # type: ignore[method-assign,assignment]


def uninstall() -> None:
    if not _installed:
        return
    from moto.sns.models import Subscription  # noqa: PLC0415

    Subscription.private_key = _installed.pop("private_key")  # type: ignore[method-assign]


def installed() -> bool:
    return bool(_installed)
