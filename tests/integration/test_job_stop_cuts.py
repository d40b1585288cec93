"""A tuning job stopped by its owner: the trials its stop cut are not early-stopping savings (issue 7, 10)."""

from __future__ import annotations

from datetime import datetime

from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World

JOB = "xgb-owner-stop"


def test_an_owner_stop_is_told_apart_from_hyperbands_stops_in_the_dynamodb_summary(world: World) -> None:
    # Given the seed job (Hyperband) running for 40 minutes
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB))
    for _ in range(40):
        world.pump(60)
    running = {
        s["TrainingJobName"]
        for s in world.env.sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=JOB, StatusEquals="InProgress", MaxResults=100
        )["TrainingJobSummaries"]
    }
    assert running, "no trial was running when the owner stopped the job"
    # When its owner stops it (not the governor) and the events run their course
    world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)
    world.run_until_idle()
    # Then the job's Stopping change is kept, and the summary separates the two kinds of Stopped trial
    meta = world.env.services.store.get_job(JOB)
    assert meta is not None and meta.get("stopping_at") and not meta.get("stop_requested_at")
    summary = world.env.services.store.get_summary(JOB)
    assert summary is not None and summary.status == "Stopped"
    es = summary.cost.early_stopping
    assert es.job_stop_source == "stopping-transition"
    assert es.job_stopped_at == datetime.fromisoformat(meta["stopping_at"])
    assert es.trials_cut_by_job_stop == len(running)
    assert es.trials_stopped_early == summary.trials_by_status["Stopped"] - len(running)
    records = {r.training_job_name: r for r in world.env.services.store.trial_records(JOB)}
    assert all(records[name].status == "Stopped" for name in running)
    # The cut trials add nothing to the saving: it is the same without them
    early_names = {n for n, r in records.items() if r.status == "Stopped" and n not in running}
    assert all(
        r.end_time is not None and r.end_time < es.job_stopped_at for n, r in records.items() if n in early_names
    )
