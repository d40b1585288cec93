"""``tuning-governor report`` (:mod:`.command`, the page :mod:`.page`) and what every HTML page of the
client shares: the page shell and figures (:mod:`.html`), the Jinja2 templates (``templates/``), the
pictures (:mod:`.pictures`) and a job as the pages need it (:mod:`.job_view`)."""
