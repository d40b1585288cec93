"""The application layer: the use cases, one package (or module) each: ``events`` (tuning, training and
tag events), ``queue``, ``sweep``, ``checks`` (the one-time budget check, the preflight) and ``prices``;
the modules several of them share (``envelope``, ``membership``, ``finalise``, ``services``, ...); and
the composition root, ``wiring``, the only module that builds adapters. Handlers call this layer only."""
