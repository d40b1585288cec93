"""Governance: the rules that decide (pure) and the facts they decide on.

Rules never call AWS. The service layer gathers facts, asks the registry's rules, then acts on the
decisions (stop, record, report) according to the policy's mode and the job's exemption.
"""
