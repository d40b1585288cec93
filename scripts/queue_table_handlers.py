"""Print issue 20's Must-show table through the real handlers: stop-on-arrival against the queue modes
on the same arrivals (docs/explanation/queue.md, "The Must-show table, through the handlers").

    python scripts/queue_table_handlers.py [SEED ...] [--reserve] [--sweep-minutes N] [--plot FILE.html]

Seeds 1 to 5 by default. ``--reserve`` adds the mode with RESERVE shares and no consent (the core-only
table's plain queue); ``--plot`` writes the per-team use against share as a Plotly page (the cli extra).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import warnings
from datetime import timedelta
from pathlib import Path

from governor_client.simulator.queue_study.handlers import HANDLER_MODES, HandlerMode, measure_handlers, render_handlers
from governor_client.simulator.queue_study.usage import plot_usage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="*", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--reserve", action="store_true", help="add the queue with RESERVE shares, no consent")
    parser.add_argument("--sweep-minutes", type=float, default=5.0, help="the sweep's schedule (template: 5)")
    parser.add_argument("--plot", type=Path, help="write use against share per 3-hour block as Plotly HTML")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    extra: tuple[HandlerMode, ...] = ("queue + reserve",) if args.reserve else ()
    # The handlers' metrics (EMF lines) go to stdout as in Lambda; the table is what this prints.
    with contextlib.redirect_stdout(io.StringIO()):
        rows = measure_handlers(args.seeds, (*HANDLER_MODES, *extra), timedelta(minutes=args.sweep_minutes))
    print(render_handlers(rows, args.seeds))
    if args.plot and not plot_usage({mode: row["usage"] for mode, row in rows.items()}, args.plot):
        print("plotly is not installed (pip install '.[cli]'): no picture")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
