"""``tuning-governor validate POLICY``: check a policy before it goes live, like a linter.

    tuning-governor validate policy.yaml                     # offline: schema + semantic checks
    tuning-governor validate policy.yaml --format json       # for CI pipelines (docs/validate-result.schema.json)
    tuning-governor validate policy.yaml --account --region eu-west-1   # also compare quotas with Service Quotas
    tuning-governor validate policy.yaml --members --hub-bus-arn ARN   # each accounts.<id>: role, calls, rules
    tuning-governor validate policy.yaml --account 111111111111        # one member (validate.members)
    tuning-governor validate policy.yaml --slack-secret-prefix tuning-governor/teams/ --team-topic-prefix tg-team-

Exit status: 0 the policy is good (notes only), 1 it is valid but has warnings, 2 it is broken (the
governor would refuse it: a syntax error, an unknown key, a wrong value) or unreadable.

The schema checks are the governor's own (``parse_policy``: the same messages it logs when it rejects
an update). The semantic checks, all warnings, find what is valid but will not do what it says:

- ``deprecated-key``: a key still read under an old name (``Policy.warnings()``);
- ``monitor-mode-stops-nothing``: stop guards or limits set while ``mode`` is monitor (or absent);
- ``budget-below-one-hour``: a per-job budget a single hour at a team's instance limit (or one
  instance of an account-limited type) already exceeds, at the bundled catalog's price in ``--region``
  (the policy's ``prices`` fill gaps, as in the governor);
- ``monthly-below-job-budget``: a team's monthly budget below its per-job budget;
- ``team-limit-above-quota``: a team limit above the policy's account quota for the type (never reached);
- ``shares-above-quota``: the teams' quota shares (``teams.<team>.share``) of a type add up above the policy's quota;
- ``unpriced-instance-type``: a type the bundled catalog and the policy's ``prices`` price nowhere
  (often a typo: the governor cannot cost its trials);
- ``quota-above-account`` (``--account`` only): a policy quota or team limit above the account's
  Service Quota for the type (the lower figure governs). Offline this check is skipped with a note;
- ``team-channel-not-granted``: a team's ``slack_secret`` not named under the stack's
  ``SlackSecretPrefix``, or its ``sns_topic_arn`` outside ``--region`` or not named under
  ``TeamTopicPrefix`` (the governor would not use it; the team's reports go to the default channels
  only). The prefixes come from ``--slack-secret-prefix`` / ``--team-topic-prefix`` or the
  ``SLACK_SECRET_PREFIX`` / ``TEAM_TOPIC_PREFIX`` environment variables (the functions' own); unknown,
  the check is skipped with a note.

The package: ``findings`` (what is reported and how), ``checks`` (the policy alone), ``account`` (the
account's quotas, the stack's grants), ``validation`` (text to result) and ``command`` (the CLI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from governor_client.validate.command import add_arguments, run_command
    from governor_client.validate.findings import Finding, ValidationResult, json_schema, render_text
    from governor_client.validate.validation import CheckOptions, check_policy, validate_text

#: Each public name and the module that defines it, imported on first use (PEP 562): importing one
#: submodule (or this package for one name) does not load the others' dependencies.
_EXPORTS: dict[str, str] = {
    "CheckOptions": "governor_client.validate.validation",
    "Finding": "governor_client.validate.findings",
    "ValidationResult": "governor_client.validate.findings",
    "add_arguments": "governor_client.validate.command",
    "check_policy": "governor_client.validate.validation",
    "json_schema": "governor_client.validate.findings",
    "render_text": "governor_client.validate.findings",
    "run_command": "governor_client.validate.command",
    "validate_text": "governor_client.validate.validation",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CheckOptions",
    "Finding",
    "ValidationResult",
    "add_arguments",
    "check_policy",
    "json_schema",
    "render_text",
    "run_command",
    "validate_text",
]
