"""The envelope's account and region travel with the job: its key, its trials' key, its SageMaker."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import load_event
from tuning_governor.app.envelope import placed
from tuning_governor.app.services import Services
from tuning_governor.errors import RejectedEvent
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.place import Place, name_in_key, place_in_key
from tuning_governor.ports.sessions import CannotAssume
from tuning_governor.settings import Settings

HOME = Place("123456789012", "us-east-1")
MEMBER = Place("111111111111", "eu-west-1")


def _moved(name: str, place: Place) -> dict[str, Any]:
    event = load_event(name)
    return event | {"account": place.account, "region": place.region}


def test_a_home_event_keeps_the_plain_key_and_another_place_qualifies_it() -> None:
    home = TuningJobStateChange.model_validate(_moved("tuning-inprogress", HOME))
    away = TuningJobStateChange.model_validate(_moved("tuning-inprogress", MEMBER))
    name = home.detail.name.lower()

    assert placed(home, HOME).key == name
    assert placed(home, HOME).place is None
    assert placed(away, HOME).key == f"111111111111/eu-west-1/{name}"
    assert placed(away, HOME).place == MEMBER
    # The key alone says where the job lives, and which name it holds
    assert place_in_key(placed(away, HOME).key) == MEMBER
    assert place_in_key(name) is None
    assert name_in_key(placed(away, HOME).key) == name
    # A stack that does not know its own account keeps every event at home, as before
    assert placed(away, None).key == name


def test_a_trial_of_a_job_in_another_place_is_keyed_to_that_job() -> None:
    away = TrainingJobStateChange.model_validate(_moved("training-completed", MEMBER))
    home = TrainingJobStateChange.model_validate(_moved("training-completed", HOME))

    assert home.detail.tuning_job_key is not None
    assert placed(home, HOME).tuning_job_key == home.detail.tuning_job_key
    assert placed(away, HOME).tuning_job_key == f"111111111111/eu-west-1/{home.detail.tuning_job_key}"


def test_an_envelope_with_a_malformed_account_is_rejected_with_the_reason() -> None:
    event = TuningJobStateChange.model_validate(load_event("tuning-inprogress") | {"account": "12345"})

    with pytest.raises(RejectedEvent, match="12-digit"):
        placed(event, HOME)


def test_a_place_the_stack_has_no_way_into_is_refused_never_served_at_home() -> None:
    settings = Settings.model_validate(
        {"TABLE_NAME": "governor", "AWS_REGION": HOME.region, "TOPIC_ARN": f"arn:aws:sns:us-east-1:{HOME.account}:t"}
    )
    home_gateway: Any = object()
    services = Services(settings=settings, sagemaker=home_gateway, store=object())  # type: ignore[arg-type]

    assert services.home == HOME
    assert services.sagemaker_for(None) is home_gateway
    assert services.sagemaker_for(HOME) is home_gateway
    with pytest.raises(CannotAssume):
        services.sagemaker_for(MEMBER)


class _NoJobs:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_job(self, key: str) -> None:
        self.asked.append(key)


@pytest.mark.parametrize(("place", "key"), [(HOME, "j-1"), (MEMBER, "111111111111/eu-west-1/j-1")])
def test_a_tag_change_is_looked_up_under_the_key_of_the_place_its_arn_names(place: Place, key: str) -> None:
    from tuning_governor.app.events.tags import process_tag_event

    arn = f"arn:aws:sagemaker:{place.region}:{place.account}:hyper-parameter-tuning-job/J-1"
    event = load_event("tags/tag-change-on-resource") | {"resources": [arn]}
    settings = Settings.model_validate(
        {"TABLE_NAME": "governor", "AWS_REGION": HOME.region, "TOPIC_ARN": f"arn:aws:sns:us-east-1:{HOME.account}:t"}
    )
    store = _NoJobs()
    services = Services(settings=settings, sagemaker=object(), store=store)  # type: ignore[arg-type]

    outcome = process_tag_event(event, services)

    assert (outcome["outcome"], outcome["job"], store.asked) == ("ignored", key, [key])


def test_the_queue_consumer_releases_a_member_jobs_reservation_in_its_own_ledger() -> None:
    from governor_client.memory import MemoryStore
    from tests.contract.conftest import reservation
    from tuning_governor.app.queue.admission import QueueServices
    from tuning_governor.app.queue.consumer import process_queue_event

    settings = Settings.model_validate(
        {"TABLE_NAME": "governor", "AWS_REGION": HOME.region, "TOPIC_ARN": f"arn:aws:sns:us-east-1:{HOME.account}:t"}
    )
    store = MemoryStore()
    away_ledger = store.ledger_at("CAPACITY#111111111111#eu-west-1")
    name = TuningJobStateChange.model_validate(load_event("tuning-stopped")).detail.name.lower()
    away_key = f"111111111111/eu-west-1/{name}"
    assert store.commit_admission(0, name, reservation(name)) == "committed"
    assert away_ledger.commit_admission(0, away_key, reservation(away_key)) == "committed"
    services = Services(settings=settings, sagemaker=object(), store=store, sagemaker_at=lambda _p: object())  # type: ignore[arg-type]

    process_queue_event(_moved("tuning-stopped", MEMBER), services, QueueServices(object(), object()))  # type: ignore[arg-type]

    # The member job's reservation is released in the member's ledger; the home namesake's still holds
    assert set(away_ledger.read_ledger().ended) == {away_key}
    assert set(store.read_ledger().reservations) == {name}
