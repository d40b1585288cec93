"""SageMaker's prices on the operator's machine: ``tuning-governor prices`` (:mod:`.command`: ``fetch``
from AWS's public offer files, :mod:`.fetch`; ``export`` from the deployed governor's table, :mod:`.export`),
where the catalogue lives (:mod:`.paths`), which prices a command judged with are approximate
(:mod:`.approximate`), and what running the governor itself costs (:mod:`.running_cost`)."""
