"""Per-team use against share over time (issue 20, Must-show): the instances each team's training jobs
held, averaged over blocks of the arrival day, rendered as "vision 6.1/8" and, optionally, as a Plotly
picture (the ``cli`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

from governor_client.simulator.queue_study.chains import Interval
from governor_client.simulator.queue_study.workload import HOURS, START, TEAMS


def usage_by_block(
    intervals: Mapping[str, Sequence[Interval]], *, block_hours: int = 3, hours: int = HOURS
) -> dict[str, list[float]]:
    """Team -> mean instances held in each ``block_hours`` block of the first ``hours`` after START
    (every team of the workload, 0 where it held nothing)."""
    blocks = range(0, hours, block_hours)
    out: dict[str, list[float]] = {}
    for team in TEAMS:
        means = []
        for first in blocks:
            lo, hi = START + timedelta(hours=first), START + timedelta(hours=first + block_hours)
            held = sum(
                max(timedelta(0), min(end, hi) - max(begin, lo)) / timedelta(hours=1) * n
                for begin, end, n in intervals.get(team, ())
            )
            means.append(held / block_hours)
        out[team] = means
    return out


def _label(first: int, block_hours: int) -> str:
    return f"{first:02d}-{first + block_hours:02d}"


def render_usage(blocks: Mapping[str, Sequence[float]], *, block_hours: int = 3) -> str:
    """A Markdown table: teams x blocks, each cell "mean held/share"."""
    width = max((len(v) for v in blocks.values()), default=0)
    labels = [_label(i * block_hours, block_hours) for i in range(width)]
    lines = ["| team | " + " | ".join(labels) + " |", "|---|" + "---:|" * width]
    lines += [
        f"| {team} | " + " | ".join(f"{v:.1f}/{TEAMS[team][0]}" for v in values) + " |"
        for team, values in blocks.items()
    ]
    return "\n".join(lines)


def plot_usage(by_mode: Mapping[str, Mapping[str, Sequence[float]]], path: Path, *, block_hours: int = 3) -> bool:
    """A Plotly HTML picture of use over share per mode and team; False when plotly is not installed."""
    try:
        import plotly.graph_objects as go  # noqa: PLC0415  (optional: the cli extra)
        from plotly.subplots import make_subplots  # noqa: PLC0415
    except ImportError:
        return False
    figure = make_subplots(rows=len(by_mode), cols=1, subplot_titles=list(by_mode), shared_xaxes=True)
    for row, (mode, blocks) in enumerate(by_mode.items(), start=1):
        for team, values in blocks.items():
            x = [_label(i * block_hours, block_hours) for i in range(len(values))]
            y = [v / TEAMS[team][0] for v in values]
            figure.add_trace(go.Scatter(x=x, y=y, name=f"{mode}: {team}", mode="lines+markers"), row=row, col=1)
    figure.update_yaxes(title_text="held / share")
    figure.update_layout(height=300 * len(by_mode), title="Instances held over share, per 3-hour block")
    figure.write_html(path, include_plotlyjs="cdn")
    return True
