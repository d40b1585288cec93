"""``tuning-governor demo`` (``make demo``): the offline demo on the AMT stand-in.

:mod:`.run` runs it (and sets fake AWS credentials when imported: ``tuning-governor`` imports it only when
the demo runs); :mod:`.arguments` holds its arguments, :mod:`.acts` its acts, :mod:`.org` the organisation
act, :mod:`.output` and :mod:`.progress` what it prints."""
