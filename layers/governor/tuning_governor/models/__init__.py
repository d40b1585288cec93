"""Pydantic models: SageMaker shapes as AWS sends them, and the records the governor writes."""
