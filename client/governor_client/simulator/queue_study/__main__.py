"""``python -m governor_client.simulator.queue_study``: print the table (Markdown, or JSON with --json)."""

from __future__ import annotations

import argparse
import json

from governor_client.simulator.queue_study.table import measure, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m governor_client.simulator.queue_study", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = measure(args.seeds)
    print(json.dumps(rows, indent=2) if args.json else render(rows, args.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
