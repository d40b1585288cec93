"""Governance: the rules that decide (pure), the facts they decide on, and the engine that acts.

Rules never call AWS. The engine (``governance.engine``) gathers facts, asks the registry's rules, then
acts on the decisions (stop, record, report) according to the policy's mode and the job's exemption.
It reaches the outside world only through ``governance.ports.EngineServices``; it never imports ``app``.
"""
