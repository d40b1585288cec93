"""A governed SageMaker account in one process: the AMT stand-in, EventBridge's delivery, the real handlers.

    with mock_aws(), Simulation(scenario, seed=7, faults=DeliveryFaults(max_delay_s=5, seed=1)) as sim:
        result = sim.run()
        sim.env.services.store.get_summary("xgb-churn-hb")

A :class:`Scenario` (:mod:`.scenario`) lists what data scientists do ("at virtual second T, create this
tuning job / this training job") and how trials behave. :class:`Simulation` (:mod:`.loop`) steps a
virtual clock through it, delivering every event to the real handlers; :mod:`.results` holds what a run
produced. The deployed schedule runs on the same clock: the sweep every ``sweep_every`` (5 minutes unless
told) and the one-time budget checks at their time (:mod:`governor_client.simulator.schedule`).

**Event log** (``event_log=``) and **delivery log** (``delivery_log=``): see :mod:`.logs`;
:func:`read_event_log` and :func:`read_delivery_log` read them back.
"""

from .logs import LoggedDelivery, read_delivery_log, read_event_log
from .loop import DEFAULT_MAX_VIRTUAL_S, DEFAULT_START, Simulation
from .results import DeliveryOutcome, Progress, ScheduledRun, SimulationResult
from .scenario import (
    CreateTrainingJob,
    CreateTuningJob,
    RetryPolicy,
    Scenario,
    ScenarioAction,
    SubmitTuningJob,
    TagTuningJob,
)

__all__ = [
    "DEFAULT_MAX_VIRTUAL_S",
    "DEFAULT_START",
    "CreateTrainingJob",
    "CreateTuningJob",
    "DeliveryOutcome",
    "LoggedDelivery",
    "Progress",
    "RetryPolicy",
    "Scenario",
    "ScenarioAction",
    "ScheduledRun",
    "Simulation",
    "SimulationResult",
    "SubmitTuningJob",
    "TagTuningJob",
    "read_delivery_log",
    "read_event_log",
]
