"""The DynamoDB adapter of the store port: the table's plumbing (``table``), its items (``keys``,
``items``, ``capacity_items``), one module per area, and the ``GovernorStore`` façade (``store``)."""

from tuning_governor.adapters.dynamodb.keys import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS
from tuning_governor.adapters.dynamodb.store import GovernorStore

__all__ = ["EXPIRY_ATTRIBUTE", "MIN_TRIAL_RETENTION_DAYS", "GovernorStore"]
