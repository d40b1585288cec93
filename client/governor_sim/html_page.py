"""The pieces every HTML page of the client shares: matplotlib set up off-screen, figures as PNG bytes,
plots embedded as data URIs, and the page shell. Client side only (matplotlib is the ``dev`` extra,
never in the layer).

A page built with :func:`render_page` is one self-contained file: no network, no external script or
style. Its ``<body>`` carries ``data-plots-expected`` (the ``img.plot`` elements on the page) and, once
the browser has loaded it, ``data-plots-loaded`` (those it decoded, natural width > 0), which the
browser tests read.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable
from typing import Any

PLOT_CLASS = "plot"
STYLE = (
    "body{font-family:sans-serif;margin:2em} img.plot{max-width:48%;margin:4px}"
    " img.plot.wide{max-width:98%}"
    " table{border-collapse:collapse;margin:0.5em 0} td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
    " td.num{text-align:right} p.note{color:#555}"
)
_LOADED_SCRIPT = """<script>
window.addEventListener("load", function () {
  var loaded = 0;
  document.querySelectorAll("img.plot").forEach(function (img) {
    if (img.complete && img.naturalWidth > 0) { loaded += 1; }
  });
  document.body.setAttribute("data-plots-loaded", String(loaded));
});
</script>"""


def pyplot() -> Any:
    """matplotlib's pyplot on the off-screen Agg backend (imported here only: a client-side extra)."""
    import matplotlib  # noqa: PLC0415 - client-side extra, imported only to draw

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415

    return plt


def png(figure: Any) -> bytes:
    """The figure as PNG bytes; the figure is closed (pyplot keeps no reference to it)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    pyplot().close(figure)
    return buffer.getvalue()


def plot_img(data: bytes, alt: str, *, wide: bool = False) -> str:
    """An ``<img class="plot">`` holding ``data`` (PNG bytes) as a data URI."""
    encoded = base64.b64encode(data).decode("ascii")
    classes = f"{PLOT_CLASS} wide" if wide else PLOT_CLASS
    return f"<img class='{classes}' alt='{html.escape(alt, quote=True)}' src='data:image/png;base64,{encoded}'>"


def table(header: Iterable[str], rows: Iterable[Iterable[str]], *, css_class: str = "") -> str:
    """An HTML table of escaped text cells (header row first)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    attribute = f" class='{html.escape(css_class, quote=True)}'" if css_class else ""
    return f"<table{attribute}><tr>{head}</tr>{body}</table>"


def render_page(title: str, body: str) -> str:
    """The whole page: ``body`` (HTML) under an ``<h1>`` of ``title``, with the plot-counting script."""
    expected = body.count(f"<img class='{PLOT_CLASS}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style>
</head><body data-plots-expected="{expected}" data-plots-loaded="0"><h1>{html.escape(title)}</h1>{body}
{_LOADED_SCRIPT}</body></html>
"""
