"""The submission queue's use cases: a submission recorded, waiting requests admitted, a stopped job queued again."""
