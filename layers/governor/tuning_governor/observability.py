"""Powertools singletons shared by handlers and the service layer (cheap to create at import).

Names are fixed here so metrics land in the same namespace wherever the code runs (Lambda, the
offline demo, replays); template.yaml sets the same values in the Powertools environment variables.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "tuning-governor"
NAMESPACE = "TuningGovernor"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)
