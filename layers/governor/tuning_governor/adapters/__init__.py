"""Adapters: the only modules that talk to AWS (or Slack). Each takes its client in the constructor."""
