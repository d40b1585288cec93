"""botocore's User-Agent components sanitised once per text (governor_client.offline.user_agent): the same
function of its input as botocore's, and the same User-Agent header on the wire."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.useragent
import pytest
from moto import mock_aws

from governor_client.offline import user_agent
from tests.conftest import REGION

TEXTS = ["", "Boto3", "md/arch#x86_64", "ua/2.1 os/linux#6.1", "app id with spaces", "é~!$%&'*+-.^_`|,#/", "a" * 300]


def test_the_cached_function_answers_as_botocores_own() -> None:
    assert user_agent.installed()
    for text in TEXTS:
        for allow_hash in (True, False, 0, 1, None):
            expected = user_agent._ORIGINAL(text, allow_hash)
            assert user_agent.sanitize_user_agent_string_component(text, allow_hash) == expected
            assert user_agent.sanitize_user_agent_string_component(text, allow_hash) == expected  # from the cache
    assert user_agent.sanitize_user_agent_string_component(["a", "#", " "], True) == "a#-"  # not str: botocore's


def _headers() -> list[str]:
    seen: list[str] = []

    def record(request: Any, **_: Any) -> None:
        header = request.headers["User-Agent"]
        seen.append(header.decode() if isinstance(header, bytes) else header)

    with mock_aws():
        client = boto3.client("sqs", region_name=REGION)
        client.meta.events.register("before-send.sqs", record)
        client.create_queue(QueueName="ua")
        client.list_queues()
    return seen


@pytest.mark.usefixtures("aws_credentials")
def test_the_user_agent_header_is_the_same_with_and_without_the_cache() -> None:
    cached = _headers()
    user_agent.uninstall()
    try:
        assert botocore.useragent.sanitize_user_agent_string_component is user_agent._ORIGINAL
        uncached = _headers()
    finally:
        user_agent.install()
    assert len(cached) == 2 and cached == uncached
