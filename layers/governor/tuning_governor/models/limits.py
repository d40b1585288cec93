"""What the governor accepts from SageMaker: bounded by what DynamoDB can store and what AWS can send.

Everything an event, a Describe or a List response carries may end up in DynamoDB (numbers, map
keys, key attributes) or in a governance decision (tags). The limits are checked where input enters,
in the models, so an impossible value is a clean rejection (``RejectedEvent``: the ``rejected``
outcome, the ``RejectedEvents`` metric, a log line with the reason) and never a serializer or
DynamoDB error that EventBridge would retry until the dead-letter queue.

**Numbers.** A DynamoDB number holds 38 significant digits, magnitude 1E-130 to
9.9999999999999999999999999999999999999E+125, and no NaN or Infinity (boto3's serializer raises
``decimal.Overflow`` / ``Inexact`` / ``Rounded`` / ``Underflow`` outside that). SageMaker's integers
are bounded more tightly than that, so that every figure the governor derives from them (instances x
seconds x price, MaxParallel x InstanceCount, sums over trials) is exact and storable too:

| what                                                     | accepted            |
|----------------------------------------------------------|---------------------|
| instance counts, MaxParallel/MaxNumberOfTrainingJobs, counters, Hyperband resources | 0 .. 1,000,000 |
| durations in seconds (billable, training, warm pool, limits)                        | 0 .. 10,000,000,000 (317 years) |
| metric and objective values (floats)                     | finite, 0 or 1E-130 <= abs <= 9.99...E+125 |
| timestamps                                               | what ``datetime`` holds (years 1 to 9999) |

No quota AWS grants comes near these bounds, so no real event is refused by them.

**Strings used as keys.** Job names follow SageMaker's patterns (tuning job 1-32, training job 1-63
characters, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``), statuses are 1-64 characters, instance types 1-64
characters of ``[A-Za-z0-9._-]``: they become DynamoDB key attributes (at most 2048/1024 bytes) or map
keys (never empty). Other stored strings (ARNs, strategy, objective and metric names) are bounded
to 256 characters, and every stored string must be valid Unicode: a lone surrogate (a JSON
``\\ud800`` escape) is a Python string but not the UTF-8 DynamoDB stores.

**Tags** (AWS tagging rules, botocore ``TagKey`` / ``TagValue``): key 1-128 characters, value 0-256,
made of Unicode letters, numbers and spaces and ``_ . : / = + - @``; at most 50 per resource besides
those under ``aws:``. A tag that breaks them is
*dropped* with a warning and the ``InvalidTags`` metric, and the event is kept: losing governance of
a whole job because of one junk tag would be worse, and a dropped tag can never name a team, a
budget or an exemption (a job whose exemption tag is invalid is governed). Tags under the reserved
``aws:`` prefix are kept: users cannot create them, AWS itself does (``aws:cloudformation:*``), so
they are true facts about the job; the prefix rule restricts who writes a tag, not what may be read.

**Hyperparameter maps** (HyperParameters, StaticHyperParameters, TunedHyperParameters) are records,
not inputs to a decision: entries AWS's limits exclude (empty or non-string key, key over 256 or
value over 2500 characters, non-string value, beyond 100 entries) are dropped with a warning
(``InvalidHyperParameters`` metric) rather than rejecting a trial whose cost must still be counted.
Free text (FailureReason) is cut at AWS's 1024 characters.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError

from tuning_governor.observability import logger, metrics

DYNAMODB_MAX_DIGITS = 38
DYNAMODB_MAX_MAGNITUDE = Decimal("9.9999999999999999999999999999999999999E+125")
DYNAMODB_MIN_MAGNITUDE = Decimal("1E-130")

MAX_COUNT = 1_000_000
MAX_SECONDS = 10_000_000_000

TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
TAG_EXTRA_CHARACTERS = frozenset("_.:/=+-@")
TAGS_MAX = 50  # user tags per resource; tags under the aws: prefix do not count
AWS_PREFIX = "aws:"
HYPERPARAMETER_KEY_MAX = 256
HYPERPARAMETER_VALUE_MAX = 2500
HYPERPARAMETERS_MAX = 100
FAILURE_REASON_MAX = 1024
_SHOWN = 60  # characters of a bad key or value quoted in a warning


# -- numbers -----------------------------------------------------------------------------------------
def dynamodb_number_problem(value: int | float | Decimal) -> str | None:
    """Why ``value`` cannot be stored as a DynamoDB number, or None when it can (exactly)."""
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(value) if isinstance(value, int) else Decimal(str(value))
    except (InvalidOperation, ValueError):
        return f"{_show(value)} is not a number"
    if not number.is_finite():
        return f"{number} is not a finite number"
    return None if number.is_zero() else _nonzero_number_problem(value, number)


def _nonzero_number_problem(value: int | float | Decimal, number: Decimal) -> str | None:
    magnitude = number.copy_abs()  # exact: abs() would round to the context's 28 digits
    if magnitude > DYNAMODB_MAX_MAGNITUDE or magnitude < DYNAMODB_MIN_MAGNITUDE:
        return f"{_show(value)} is outside DynamoDB's number range (1E-130 to 9.99E+125)"
    # Counted as boto3's serializer counts them: an int keeps every digit, trailing zeros included.
    if len(number.as_tuple().digits) > DYNAMODB_MAX_DIGITS:
        return f"{_show(value)} has more than {DYNAMODB_MAX_DIGITS} significant digits"
    return None


def _storable_float(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    problem = dynamodb_number_problem(value)
    if problem:
        raise ValueError(problem)
    return value


Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
"""A number of instances, trials or resources (0 .. 1,000,000)."""
PositiveCount = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Seconds = Annotated[int, Field(ge=0, le=MAX_SECONDS)]
"""A duration in seconds (0 .. 10^10)."""
MetricValue = Annotated[float, Field(allow_inf_nan=False), AfterValidator(_storable_float)]
"""A metric or objective value DynamoDB can store."""


# -- strings used as keys ------------------------------------------------------------------------------
_NAME = r"[a-zA-Z0-9](-*[a-zA-Z0-9])*"
TuningJobName = Annotated[str, Field(min_length=1, max_length=32, pattern=rf"^{_NAME}$")]
TrainingJobName = Annotated[str, Field(min_length=1, max_length=63, pattern=rf"^{_NAME}$")]


def utf8_text(value: str) -> str:
    """``value`` unchanged, or ValueError when it cannot be encoded as UTF-8 (DynamoDB strings are UTF-8)."""
    # A lone surrogate (the JSON escape \ud800 alone) is a Python string but not UTF-8: DynamoDB would refuse it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid Unicode text (a lone surrogate)") from None
    return value


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


Text = AfterValidator(utf8_text)
Status = Annotated[str, Field(min_length=1, max_length=64), Text]
"""A SageMaker status: unknown values are kept verbatim, within a size a key attribute can hold."""
InstanceType = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")]
Arn = Annotated[str, Field(max_length=256), Text]
RoleArn = Annotated[str, Field(max_length=2048), Text]
"""An IAM role ARN as SageMaker takes it (RoleArn: up to 2048 characters, a role path included)."""
Label = Annotated[str, Field(max_length=256), Text]
"""A short string kept verbatim (strategy, objective type, definition name): bounded so items stay small."""
MetricName = Annotated[str, Field(min_length=1, max_length=255), Text]


_NAME_RE = re.compile(_NAME)


def _tuning_job_arn(value: str) -> str:
    # The tuning job's key is the ARN's last segment: it must be a name SageMaker could have given.
    name = value.rsplit("/", 1)[-1]
    if "/" not in value or len(name) > 32 or not _NAME_RE.fullmatch(name):
        raise ValueError("TuningJobArn does not end in /<tuning job name>")
    return value


TuningJobArn = Annotated[str, Field(max_length=256), AfterValidator(_tuning_job_arn)]


def _utf8_or_none(value: str | None) -> str | None:
    return None if value is None else utf8_text(value)


def _truncate(limit: int) -> Callable[[Any], Any]:
    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            return value[: limit - 3] + "..."
        return value

    return cut


FailureReason = Annotated[str | None, BeforeValidator(_truncate(FAILURE_REASON_MAX)), AfterValidator(_utf8_or_none)]


# -- tags ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8192)  # the same few tag keys and values come with every event of a job
def _tag_text_ok(text: str) -> bool:
    return all(c in TAG_EXTRA_CHARACTERS or unicodedata.category(c)[0] in "LNZ" for c in text)


def tag_problem(key: Any, value: Any) -> str | None:
    """Why (key, value) breaks AWS's tagging rules, or None for a valid tag."""
    if not isinstance(key, str):
        return f"key is a {type(key).__name__}, not a string"
    if not isinstance(value, str):
        return f"value of {_show(key)} is a {type(value).__name__}, not a string"
    return _tag_text_problem(key, value)


def _tag_text_problem(key: str, value: str) -> str | None:
    if not key:
        return "empty key"
    if len(key) > TAG_KEY_MAX:
        return f"key {_show(key)} is longer than {TAG_KEY_MAX} characters"
    if len(value) > TAG_VALUE_MAX:
        return f"value of {_show(key)} is longer than {TAG_VALUE_MAX} characters"
    if not _tag_text_ok(key):
        return f"key {_show(key)} has characters AWS tags do not allow"
    if not _tag_text_ok(value):
        return f"value of {_show(key)} has characters AWS tags do not allow"
    return None


def _pairs(value: Any, problems: list[str]) -> Iterable[tuple[Any, Any]]:
    """Tags arrive as a flat map (events) or a Key/Value list (ListTags); anything else has no tags."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        pairs: list[tuple[Any, Any]] = []
        for item in value:
            if isinstance(item, dict) and "Key" in item:
                pairs.append((item["Key"], item.get("Value", "")))
            else:
                problems.append(f"list item {_show(item)} is not an object with Key and Value")
        return pairs
    problems.append(f"Tags is a {type(value).__name__}, not a map or a Key/Value list")
    return []


def _valid_tag_map(value: dict[Any, Any]) -> bool:
    """True when every entry of the map ``value`` is a valid tag and they fit on one resource (then
    :func:`clean_tags` keeps all of them as they are, whatever the ``aws:`` prefix)."""
    return len(value) <= TAGS_MAX and all(
        isinstance(key, str) and isinstance(tag_value, str) and _tag_text_problem(key, tag_value) is None
        for key, tag_value in value.items()
    )


def clean_tags(value: Any, *, source: str = "event") -> dict[str, str]:
    """The valid tags of ``value`` (map, Key/Value list or None); invalid ones are dropped and reported."""
    if value is None:
        return {}
    if isinstance(value, dict) and _valid_tag_map(value):
        return dict(value)  # what the loop below keeps of it: every entry, nothing to report
    problems: list[str] = []
    tags: dict[str, str] = {}
    user_tags = 0
    for key, tag_value in _pairs(value, problems):
        problem = tag_problem(key, tag_value)
        if problem:
            problems.append(problem)
            continue
        if not key.lower().startswith(AWS_PREFIX):
            if user_tags >= TAGS_MAX:
                problems.append(f"tag {_show(key)} is beyond the {TAGS_MAX} a resource can carry")
                continue
            user_tags += 1
        tags[key] = tag_value
    if problems:
        _report("InvalidTags", "invalid tags dropped", source, problems)
    return tags


# -- hyperparameter maps -----------------------------------------------------------------------------------
def _valid_hyperparameter_map(value: dict[Any, Any]) -> bool:
    """True when :func:`clean_hyperparameters` keeps every entry of the map ``value``: within the count,
    each key a non-empty string and each value a string within their lengths, all of it UTF-8 (checked
    at once: a lone surrogate anywhere fails the joined text's encoding)."""
    return (
        len(value) <= HYPERPARAMETERS_MAX
        and all(
            isinstance(key, str)
            and isinstance(item, str)
            and 0 < len(key) <= HYPERPARAMETER_KEY_MAX
            and len(item) <= HYPERPARAMETER_VALUE_MAX
            for key, item in value.items()
        )
        and _is_utf8("".join(value) + "".join(value.values()))
    )


def clean_hyperparameters(value: Any) -> Any:
    """Entries AWS's HyperParameters limits exclude are dropped and reported; None is an empty map."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        return value  # not a map at all: the model rejects it
    if _valid_hyperparameter_map(value):
        return dict(value)  # what the loop below keeps of it: every entry, nothing to report
    problems: list[str] = []
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            problems.append("empty or non-string key")
        elif len(key) > HYPERPARAMETER_KEY_MAX:
            problems.append(f"key {_show(key)} is longer than {HYPERPARAMETER_KEY_MAX} characters")
        elif not isinstance(item, str):
            problems.append(f"value of {_show(key)} is a {type(item).__name__}, not a string")
        elif not _is_utf8(key) or not _is_utf8(item):
            problems.append(f"entry {_show(key)} is not valid Unicode text")
        elif len(item) > HYPERPARAMETER_VALUE_MAX:
            problems.append(f"value of {_show(key)} is longer than {HYPERPARAMETER_VALUE_MAX} characters")
        elif len(out) >= HYPERPARAMETERS_MAX:
            problems.append(f"more than {HYPERPARAMETERS_MAX} entries")
            break
        else:
            out[key] = item
    if problems:
        _report("InvalidHyperParameters", "invalid hyperparameters dropped", "hyperparameters", problems)
    return out


HyperParameters = Annotated[dict[str, str], BeforeValidator(clean_hyperparameters)]


# -- reporting ---------------------------------------------------------------------------------------------
def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _report(metric: str, message: str, source: str, problems: list[str]) -> None:
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=len(problems))
    logger.warning(message, extra={"source": source, "dropped": len(problems), "problems": problems[:10]})


def validation_problems(exc: ValidationError, limit: int = 5) -> str:
    """A pydantic error as one readable line: ``path: message; ...`` (the first ``limit`` problems)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:limit]
    )
