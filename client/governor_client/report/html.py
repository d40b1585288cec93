"""The pieces every HTML page of the client shares: matplotlib set up off-screen, figures as PNG bytes,
plots embedded as data URIs, and the page shell. Client side only (matplotlib is the ``dev`` extra,
never in the layer).

Pages are Jinja2 templates (``governor_client/report/templates``, autoescaped). A page is one self-contained
file: no network, no external script or style (plotly.js is inlined where a page has charts). Its ``<body>`` carries ``data-plots-expected`` (the ``img.plot`` elements on the page) and, once
the browser has loaded it, ``data-plots-loaded`` (those it decoded, natural width > 0) and
``data-boxes`` (where each picture, chart, chart legend and plot area landed), which the browser tests read.
"""

from __future__ import annotations

import base64
import functools
import io
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

PLOT_CLASS = "plot"


@functools.cache
def environment() -> Any:
    """The Jinja2 environment of the client's pages: templates from ``governor_client/report/templates``,
    every value escaped unless marked safe (``Markup``), PNG bytes as data URIs (``| png_uri``)."""
    import jinja2  # noqa: PLC0415 - client-side extra

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("governor_client.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["png_uri"] = lambda data: "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    env.filters["when"] = when
    env.filters["usd"] = usd_text
    return env


def safe(markup: str) -> Any:
    """HTML the client built itself (a Plotly chart's ``<div>``), passed through the template unescaped."""
    import markupsafe  # noqa: PLC0415 - Jinja2's own dependency

    return markupsafe.Markup(markup)  # noqa: S704 - only HTML this client built (Plotly divs, its own sections)


def render_template(name: str, **context: Any) -> str:
    """Render ``templates/<name>`` with ``context`` (autoescaped). ``interactive=True`` inlines plotly.js."""
    context.setdefault("interactive", False)
    context.setdefault("expected", 0)
    if context["interactive"]:
        context["plotly_script"] = safe(plotly_script())
    return str(environment().get_template(name).render(**context))


def when(at: datetime) -> str:
    """``2026-11-30 09:43:45Z``: a time as every page prints it (UTC)."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def usd_text(value: Any) -> str:
    """Dollars to the cent, or ``unknown (unpriced)`` for None: never $0 for an unknown figure."""
    return "unknown (unpriced)" if value is None else f"${Decimal(str(value)):,.2f}"


def plotly_script() -> str:
    """plotly.js, minified, in one ``<script>`` element (about 4.8 MB; no network needed)."""
    from plotly.offline import get_plotlyjs  # noqa: PLC0415 - client-side extra, only pages with charts

    return f'<script type="text/javascript">{get_plotlyjs()}</script>'


def pyplot() -> Any:
    """matplotlib's pyplot on the off-screen Agg backend (imported here only: a client-side extra)."""
    import matplotlib  # noqa: PLC0415 - client-side extra, imported only to draw

    matplotlib.use("Agg")
    # Labels carry dollar amounts ("$1.11 of $5"): never read them as TeX math.
    matplotlib.rcParams["text.parse_math"] = False
    from matplotlib import pyplot as plt  # noqa: PLC0415

    return plt


def png(figure: Any) -> bytes:
    """The figure as PNG bytes; the figure is closed (pyplot keeps no reference to it)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    pyplot().close(figure)
    return buffer.getvalue()
