"""Print the replay result's JSON Schema, as ``docs/replay-result.schema.json`` holds it::

    .venv/bin/python -m governor_client.replay.schema > docs/replay-result.schema.json

(A module of its own: the package imports ``model``, so ``python -m`` could not run ``model`` cleanly.)
"""

from governor_client.replay.model import schema_text

if __name__ == "__main__":
    print(schema_text(), end="")
