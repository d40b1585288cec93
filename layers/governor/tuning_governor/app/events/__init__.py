"""The event use cases: a tuning job's state change or tag change, a training job's state change."""
