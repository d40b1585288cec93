"""The process's one botocore data loader (governor_client.offline.shared_loader): moto worlds after the
first read no service model again, and their clients see the same models as botocore's own loader."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.loaders
import pytest
from moto import mock_aws

from governor_client.offline import shared_loader
from governor_client.offline.environment import build_environment


@pytest.fixture
def files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    original = botocore.loaders.JSONFileLoader._load_file

    def counting(self: Any, full_path: str, open_method: Any) -> Any:
        read.append(full_path)
        return original(self, full_path, open_method)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "_load_file", counting)
    return read


def _environment() -> None:
    with mock_aws():
        build_environment()


def _clients() -> None:
    with mock_aws():
        for service in ("sagemaker", "dynamodb"):
            boto3.client(service, region_name="us-east-1")


def test_a_second_world_reads_no_service_model(aws_credentials: None, files_read: list[str]) -> None:
    assert shared_loader.installed(), "tests/conftest.py installs the shared loader"
    _environment()
    first = len(files_read)
    _environment()
    assert len(files_read) == first, files_read[first:]


def test_without_it_every_world_reads_them_again(aws_credentials: None, files_read: list[str]) -> None:
    _clients()
    shared_loader.uninstall()
    try:
        before = len(files_read)
        _clients()
        again = files_read[before:]
        _clients()
        third = files_read[before + len(again) :]
    finally:
        shared_loader.install()
    assert any("sagemaker" in path for path in again), again
    assert sorted(third) == sorted(again), "each world reads the same files again"


def test_its_clients_see_botocore_s_own_models(aws_credentials: None) -> None:
    shared = boto3.session.Session().client("sagemaker", region_name="us-east-1")
    own = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    model = shared.meta.service_model
    assert sorted(model.operation_names) == sorted(own["operations"])
    assert model.api_version == own["metadata"]["apiVersion"]
