"""Client-side tools for Tuning Governor: the AMT stand-in on moto, the offline demo and the CLI.

Never shipped to Lambda.
"""
