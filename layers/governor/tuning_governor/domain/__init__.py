"""Pure domain: pricing, cost arithmetic, summaries and reports. Imports no boto3."""
