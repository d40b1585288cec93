"""``python -m governor_sim.check > docs/check-result.schema.json``: regenerates the schema file."""

import json

from governor_sim.check.result import json_schema

if __name__ == "__main__":  # pragma: no cover - regenerates the schema file
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
