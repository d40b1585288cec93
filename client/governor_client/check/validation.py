"""The request against SageMaker's own API model: botocore's service model and its ParamValidator
(types, required members, unknown keys, minimums), plus the model's enums, which ParamValidator does
not check. Nothing here is a copy of the model: the shapes are read from the installed botocore."""

from __future__ import annotations

import datetime
import decimal
import difflib
import json
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from botocore.loaders import create_loader
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StringShape, StructureShape
from botocore.validate import ParamValidator

from governor_client.validate.findings import Finding
from tuning_governor.policy.errors import did_you_mean

OPERATION = "CreateHyperParameterTuningJob"
MAX_LISTED = 12


@cache
def input_shape() -> StructureShape:
    """The operation's input shape, from botocore's bundled ``sagemaker`` service-2 model (read with
    botocore's loader alone: a session would load the client machinery too, for nothing)."""
    model = ServiceModel(create_loader().load_service_model("sagemaker", "service-2"), "sagemaker")
    shape = model.operation_model(OPERATION).input_shape
    assert isinstance(shape, StructureShape)
    return shape


def _path(name: str, extra: Mapping[str, Any]) -> str:
    base = name.lstrip(".")
    if "unknown_param" in extra:
        return f"{base}.{extra['unknown_param']}".lstrip(".")
    if "required_name" in extra:
        return f"{base}.{extra['required_name']}".lstrip(".")
    return base


#: The Python types botocore's ParamValidator accepts for a shape (it names them as ``str(type)``,
#: ``<class 'int'>``), in the words of a JSON request.
_TYPE_WORDS: dict[str, str] = {
    str(t): words
    for t, words in {
        str: "a string",
        int: "an integer",
        bool: "true or false",
        float: "a number",
        decimal.Decimal: "a number",
        dict: "an object",
        list: "a list",
        tuple: "a list",
        datetime.datetime: "a timestamp",
        bytes: "bytes",
        bytearray: "bytes",
    }.items()
}


def _value(value: Any) -> str:
    """The value as the request's JSON writes it (a repr for what JSON cannot hold)."""
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


def _types(valid: list[str]) -> str:
    """``an integer``; ``a number``; ``a timestamp or a string`` (each kind once, in the model's order)."""
    words = list(dict.fromkeys(_TYPE_WORDS.get(t, t.removeprefix("<class '").removesuffix("'>")) for t in valid))
    if "a number" in words and "an integer" in words:
        words.remove("an integer")
    return " or ".join(words)


def _describe(kind: str, extra: Mapping[str, Any]) -> str:
    if kind == "unknown field":
        valid = list(extra.get("valid_names", []))
        return f"unknown field; {did_you_mean(str(extra.get('unknown_param')), valid)}valid here: {', '.join(valid)}"
    if kind == "missing required field":
        return "required by SageMaker's API model"
    if kind == "invalid type":
        return f"value {_value(extra.get('param'))} is not {_types(list(extra.get('valid_types', [])))}"
    if kind in ("invalid range", "invalid length"):
        return f"value {_value(extra.get('param'))} is below the model's minimum {extra.get('min_allowed')}"
    return f"{kind}: {dict(extra)}"


def _enum_errors(value: Any, shape: Shape, path: str) -> Iterator[Finding]:
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for member, sub in shape.members.items():
            if member in value:
                yield from _enum_errors(value[member], sub, f"{path}.{member}".lstrip("."))
    elif isinstance(shape, ListShape) and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _enum_errors(item, shape.member, f"{path}[{index}]")
    elif isinstance(shape, MapShape) and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _enum_errors(item, shape.value, f"{path}.{key}")
    elif isinstance(shape, StringShape) and shape.enum and isinstance(value, str) and value not in shape.enum:
        yield Finding(severity="error", code="invalid-enum", path=path, message=_enum_message(value, shape.enum))


def _enum_message(value: str, allowed: list[str]) -> str:
    """Short enums are listed whole; a long one (instance types) by its nearest values."""
    if len(allowed) <= MAX_LISTED:
        return f"{value!r} is not one of {', '.join(allowed)} (SageMaker's API model)"
    near = difflib.get_close_matches(value, allowed, n=3) or allowed[:3]
    return f"{value!r} is not one of the {len(allowed)} values of SageMaker's API model; nearest: {', '.join(near)}"


def model_findings(request: Mapping[str, Any]) -> list[Finding]:
    """Every way ``request`` breaks CreateHyperParameterTuningJob's input shape, each with its path
    (``A.B[0].C``) and a stable code: unknown-field, invalid-missing, invalid-type, invalid-range,
    invalid-enum. Empty when botocore would send it."""
    report = ParamValidator().validate(dict(request), input_shape())
    codes = {
        "unknown field": "unknown-field",
        "missing required field": "invalid-missing",
        "invalid type": "invalid-type",
    }
    found = [
        Finding(
            severity="error",
            code=codes.get(kind, "invalid-range"),
            path=_path(name, extra),
            message=_describe(kind, extra),
        )
        # botocore keeps the structured errors in ``_errors`` (what generate_report formats); it is
        # the only structured form it offers.
        for kind, name, extra in report._errors
    ]
    return found + list(_enum_errors(request, input_shape(), ""))
