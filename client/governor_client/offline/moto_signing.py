"""botocore's Signature Version 4 written without its hashes while moto answers the requests.

moto reads one thing of a request's signature: the access key in the ``Authorization`` header's
``Credential`` (the account it answers as; an assumed role's key is another account). The signature
itself is never checked unless moto's IAM authorisation is turned on (``INITIAL_NO_AUTH_ACTION_COUNT``).
botocore still works it out for every request: the canonical request, a SHA-256 of the payload and five
HMACs, about 4 % of the integration tests' CPU. Here, while moto's mock is active and its authorisation
off, a plain ``SigV4Auth`` request gets the same headers (``X-Amz-Date``, the session token, an
``Authorization`` with the same credential scope and signed header names) and a signature of zeros.
Any other signer (S3's, presigned URLs, SigV4a), a request with moto's authorisation on, or one made
while no mock is active is signed by botocore as before.

With ``TUNING_GOVERNOR_MOTO_SPEED_CHECK=1`` botocore also signs each such request and the two
``Authorization`` headers are compared up to the signature (:class:`SigningMismatch`); the request then
goes with botocore's own header.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.compat import get_current_datetime
from botocore.exceptions import NoCredentialsError
from moto import settings
from moto.core.models import botocore_stubber

UNCHECKED_SIGNATURE = "0" * 64
_installed: dict[str, Callable[..., Any]] = {}


class SigningMismatch(AssertionError):
    """The header written here and botocore's differ in more than the signature (check mode)."""


def unsigned_part(header: str) -> str:
    """An ``Authorization`` header without its signature and the date in its credential scope."""
    credential, signed, _signature = header.split(", ")
    key, _date, *scope = credential.split("/")
    return ", ".join(["/".join([key, *scope]), signed])


def _moto_answers() -> bool:
    return bool(botocore_stubber.enabled) and math.isinf(settings.INITIAL_NO_AUTH_ACTION_COUNT)


def add_auth(self: Any, request: Any) -> Any:
    """``SigV4Auth.add_auth``: botocore's headers with a signature of zeros while moto answers unchecked."""
    if type(self) is not SigV4Auth or not _moto_answers():
        return _installed["add_auth"](self, request)
    signer: Any = self  # botocore's private steps, which its type stubs leave out
    if signer.credentials is None:
        raise NoCredentialsError()
    request.context["timestamp"] = get_current_datetime().strftime(SIGV4_TIMESTAMP)
    signer._modify_request_before_signing(request)  # the date and token headers, any earlier signature gone
    signer._inject_signature_to_request(request, UNCHECKED_SIGNATURE)
    if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
        written = request.headers["Authorization"]
        _installed["add_auth"](self, request)
        if unsigned_part(written) != unsigned_part(request.headers["Authorization"]):
            raise SigningMismatch(f"{written!r} != {request.headers['Authorization']!r}")
    return None


def install() -> None:
    if not _installed:
        _installed["add_auth"] = SigV4Auth.add_auth
        SigV4Auth.add_auth = add_auth  # type: ignore[method-assign]


def uninstall() -> None:
    """Put botocore's signer back."""
    if _installed:
        SigV4Auth.add_auth = _installed.pop("add_auth")  # type: ignore[method-assign]


def installed() -> bool:
    return SigV4Auth.add_auth is add_auth
