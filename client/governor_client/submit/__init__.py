"""``tuning-governor submit``: a tuning request sent to the governor's submission queue (:mod:`.command`),
and submitting from Python or for the offline stand-in (:mod:`.submissions`)."""
