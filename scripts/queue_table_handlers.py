"""Print issue 20's Must-show table through the real handlers: stop-on-arrival against the queue on the
same arrivals (docs/queue.md, "Measured through the handlers").

    python scripts/queue_table_handlers.py [SEED ...]      (default: seeds 1 to 5)
"""

from __future__ import annotations

import sys
import warnings

from governor_sim.queue_sim.handlers import measure_handlers, render_handlers


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    seeds = [int(a) for a in argv] or [1, 2, 3, 4, 5]
    print(render_handlers(measure_handlers(seeds), seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
