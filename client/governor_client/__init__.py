"""Client-side tools for Tuning Governor (never shipped to Lambda), one room per thing they do:

* ``__main__``: the ``tuning-governor`` command (``python -m governor_client``); ``cli/``: what its commands share;
* ``check/``, ``submit/``, ``validate/``, ``replay/``, ``report/``, ``prices/``: the operator's commands;
* ``simulator/`` (on the AMT stand-in, ``amt/``), ``demo/``, ``offline/`` (moto), ``memory/`` (the table in memory).
"""

#: The distribution's version (pyproject.toml's; tests/unit/test_cli_fast.py keeps the two equal). Read
#: here rather than from the installed metadata, whose lookup scans every path entry (~0.2 s).
__version__ = "0.1.0"
