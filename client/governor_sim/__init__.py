"""Client-side tools for Tuning Governor: the AMT stand-in on moto, the offline demo and the CLI.

Never shipped to Lambda.
"""

#: The distribution's version (pyproject.toml's; tests/unit/test_cli_fast.py keeps the two equal). Read
#: here rather than from the installed metadata, whose lookup scans every path entry (~0.2 s).
__version__ = "0.1.0"
