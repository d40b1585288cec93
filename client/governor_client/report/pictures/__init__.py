"""The pictures of the client's HTML pages, drawn to answer an operator's questions (client side only).

* :mod:`.job`: per job, the objective by trial (early-stopped trials apart) and the cost against its
  budget with the earliest stop and the scheduled budget check;
* :mod:`.account`: per instance type, the account's usage stacked by team and job against the quota
  the governor applied, with each arrival that breached it;
* :mod:`.spend`: each team's spend in the month against its monthly budget, one panel per team;
* :mod:`.interactive`: the account and team views again as Plotly charts (hover, zoom) for the page.

matplotlib figures are returned unsaved so tests can read what is drawn where; the pages save them
as PNGs (for chat) with :func:`governor_client.report.html.png`.
"""
