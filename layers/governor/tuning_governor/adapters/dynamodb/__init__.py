"""The DynamoDB adapter of the store port: the item table (``table``) under the shared store logic
(``tuning_governor.adapters.store``), and the ``GovernorStore`` façade (``store``)."""

from tuning_governor.adapters.dynamodb.store import GovernorStore
from tuning_governor.adapters.store.keys import EXPIRY_ATTRIBUTE, MIN_TRIAL_RETENTION_DAYS

__all__ = ["EXPIRY_ATTRIBUTE", "MIN_TRIAL_RETENTION_DAYS", "GovernorStore"]
