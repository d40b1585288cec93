"""The simulator: a governed SageMaker account in one process, on the AMT stand-in (:mod:`governor_client.amt`).

* :mod:`.simulation`: the simulation loop, its scenarios' actions and results;
* :mod:`.scenarios`, :mod:`.requests`, :mod:`.workload`: tuning jobs as data scientists launch them;
* :mod:`.scenario_file` and :mod:`.command`: ``tuning-governor simulate`` (a scenario file to an event log);
* :mod:`.runner`, :mod:`.schedule`, :mod:`.delivery`: events to the real handlers, the deployed schedule on a
  virtual clock, EventBridge's delivery faults;
* :mod:`.metering`: what the governor asks of AWS per event;
* :mod:`.queue_study`: the queue's policies compared on the same arrivals (``python -m`` it).
"""
