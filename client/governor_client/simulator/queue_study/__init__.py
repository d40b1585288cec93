"""Queue simulation (issue 20): stop-on-arrival against queue, queue + lend/borrow and queue +
fit-to-share on the same arrivals, decided by the scheduling core alone.

    python -m governor_client.simulator.queue_study [--seeds 1 2 3 4 5] [--json]
"""
