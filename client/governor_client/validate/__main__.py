"""``python -m governor_client.validate > docs/validate-result.schema.json``: regenerates the schema file."""

import json

from governor_client.validate.findings import json_schema

if __name__ == "__main__":  # pragma: no cover - regenerates the schema file
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
