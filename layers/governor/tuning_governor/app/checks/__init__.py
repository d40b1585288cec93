"""Judgements no SageMaker event brings: the one-time budget check at a projected crossing, and the preflight of a job before it exists (``tuning-governor check``)."""
