"""The client factory: one client per (account, region, service), the home account on the default session."""

from __future__ import annotations

from typing import Any

import pytest

from tuning_governor.adapters.sessions import Clients, HomeOnly
from tuning_governor.models.place import Place
from tuning_governor.ports.sessions import CannotAssume

HOME = Place("123456789012", "us-east-1")
OTHER = Place("111111111111", "eu-west-1")


class _Session:
    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.made: list[tuple[str, str]] = []

    def client(self, service: str, region_name: str, config: Any) -> dict[str, str]:
        self.made.append((service, region_name))
        return {"service": service, "region": region_name, "session": self.tag}


class _Provider:
    def __init__(self) -> None:
        self.asked: list[Place] = []
        self.sessions: dict[str, _Session] = {}

    def session_for(self, place: Place) -> _Session:
        self.asked.append(place)
        return self.sessions.setdefault(place.account, _Session(place.account))


def test_place_rejects_malformed_account_and_region() -> None:
    with pytest.raises(ValueError, match="12-digit"):
        Place("12345", "us-east-1")
    with pytest.raises(ValueError, match="region"):
        Place("123456789012", "not a region")


def test_place_of_a_tuning_job_arn() -> None:
    arn = "arn:aws:sagemaker:eu-west-1:111111111111:hyper-parameter-tuning-job/fit"
    assert Place.of_arn(arn) == OTHER


def test_clients_are_cached_per_account_region_and_service() -> None:
    provider = _Provider()
    clients = Clients(HOME.region, HOME.account, provider)
    first = clients.for_place(HOME).sagemaker
    assert first is clients.for_place(HOME).sagemaker
    assert first.get("region") == "us-east-1"
    other = clients.for_place(OTHER).sagemaker
    assert other.get("session") == "111111111111" and other.get("region") == "eu-west-1"
    elsewhere = clients.for_place(Place("123456789012", "eu-west-1")).sagemaker
    assert elsewhere.get("region") == "eu-west-1"
    assert provider.sessions["123456789012"].made == [("sagemaker", "us-east-1"), ("sagemaker", "eu-west-1")]


def test_no_session_is_made_before_a_client_is_used() -> None:
    provider = _Provider()
    client = Clients(HOME.region, HOME.account, provider).for_place(OTHER).service_quotas
    assert provider.asked == []
    assert client.get("service") == "service-quotas"
    assert provider.asked == [OTHER]


def test_home_only_uses_the_default_session_and_refuses_other_accounts() -> None:
    made: list[int] = []

    def session() -> _Session:
        made.append(1)
        return _Session("default")

    home = HomeOnly(HOME.account, session)
    assert home.session_for(HOME) is home.session_for(Place(HOME.account, "eu-west-1"))
    assert made == [1]
    with pytest.raises(CannotAssume, match="111111111111"):
        home.session_for(OTHER)


def test_an_unknown_home_account_refuses_every_place_but_the_default_session_works() -> None:
    home = HomeOnly("", lambda: _Session("default"))
    with pytest.raises(CannotAssume):
        home.session_for(HOME)
    assert home.default_session().tag == "default"


def test_job_keys_keep_the_home_place_plain_and_qualify_every_other() -> None:
    from tuning_governor.models.place import job_key, ledger_pk, place_of_key

    assert job_key("Fit-1", HOME, HOME) == "fit-1"
    assert job_key("Fit-1", None, HOME) == "fit-1"
    other = job_key("Fit-1", OTHER, HOME)
    assert other == "111111111111/eu-west-1/fit-1"
    same_account_other_region = job_key("Fit-1", Place(HOME.account, "eu-west-1"), HOME)
    assert len({job_key("Fit-1", HOME, HOME), other, same_account_other_region}) == 3
    assert place_of_key(other, HOME) == OTHER and place_of_key("fit-1", HOME) == HOME
    assert ledger_pk(HOME, HOME) == "CAPACITY" and ledger_pk(OTHER, HOME) == "CAPACITY#111111111111#eu-west-1"
