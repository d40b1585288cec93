"""``tuning-governor report``: a self-contained HTML page (and PNGs for chat) of what the governor recorded.

Reads the governor's table through ``GovernorStore`` (a live account through boto3, or the offline
store of the demo) for one job, a team, or a month, and draws per job:

* the objective of each trial in finishing order, with the best so far (in the job's direction);
* the cumulative cost of its finished trials over time, with the job's budget and the stop marked;
* the instances its trials held per instance type over time, against the limit the governor applied
  (from its concurrency decision, when there was one).

matplotlib (client side only, never in the layer) draws PNGs; the page embeds them as data URIs, so
it is one file to attach or open anywhere. A small script on the page counts the plots the browser
decoded (``data-plots-loaded`` on ``<body>``), which the browser test reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from governor_client.report.html import png, render_template, safe
from governor_client.report.job_view import JobView
from governor_client.report.pictures.account import TypeUsage, account_figure, account_usage, window
from governor_client.report.pictures.interactive import account_chart
from governor_client.report.pictures.job import cost_figure, job_note, objective_figure
from tuning_governor.domain.capacity import effective_limit
from tuning_governor.models.place import place_in_key
from tuning_governor.models.queue import JOB_NAME_PREFIX, QueuedRequest
from tuning_governor.policy import Policy
from tuning_governor.ports import Store
from tuning_governor.ports.quotas import Quotas

__all__ = ["Account", "JobView", "collect", "write_report"]


@dataclass(frozen=True)
class Account:
    """One account's jobs: keys ``<account>/<region>/<name>`` elsewhere; a plain key is the hub's own."""

    account: str
    home_account: str

    def owns(self, key: str) -> bool:
        place = place_in_key(key)
        return (place.account if place is not None else self.home_account) == self.account


TERMINAL_AND_RUNNING = ("InProgress", "Stopping", "Completed", "Stopped", "Failed")


def collect(
    store: Store,
    *,
    job: str | None = None,
    team: str | None = None,
    month: str | None = None,
    account: Account | None = None,
) -> list[JobView]:
    """The jobs the table records, narrowed to one job, a team, a month (``YYYY-MM`` of creation) and/or
    one account's jobs (``account``: the account and the hub's own, whose jobs have plain keys)."""
    metas: dict[str, dict[str, Any]] = {}
    if job is not None:
        meta = store.get_job(job.lower())
        if meta is not None:
            metas[job.lower()] = meta
    else:
        for status in TERMINAL_AND_RUNNING:
            for item in store.jobs_with_status(status):
                metas[str(item["pk"]).removeprefix("JOB#")] = item
    views: list[JobView] = []
    for key, listed in sorted(metas.items()):
        meta = store.get_job(key) or listed
        created = meta.get("creation_time")
        if team is not None and meta.get("team") != team:
            continue
        if account is not None and not account.owns(key):
            continue
        if month is not None and not str(created or "").startswith(month):
            continue
        trials = sorted(store.trial_records(key), key=lambda t: (t.end_time or t.event_time, t.training_job_name))
        views.append(
            JobView(
                key=key,
                name=str(meta.get("job_name") or key),
                team=meta.get("team"),
                status=str(meta.get("status") or "Unknown"),
                created=datetime.fromisoformat(created) if isinstance(created, str) and created else None,
                objective_type=meta.get("objective_type"),
                trials=trials,
                decisions=store.decisions(key),
                summary=store.get_summary(key),
                budget_check_at=str(meta["budget_check_at"]) if meta.get("budget_check_at") else None,
                reserved={str(k): int(v) for k, v in (meta.get("demand") or {}).items()},
                client_token=_client_token(store, key),
            )
        )
    return views


def _client_token(store: Store, key: str) -> str | None:
    """The submission's client token, for a job the queue created (its name starts ``q-``)."""
    if not key.startswith(JOB_NAME_PREFIX):
        return None
    request = store.get_request(key)
    return request.client_token if request is not None else None


def applied_limits(policy: Policy, quotas: Quotas | None, types: Iterable[str]) -> dict[str, tuple[int, str]]:
    """The limit per type the governor applies (the lower of the policy's quota and the applied
    Service Quota), with its source as its decisions name it; a type with neither is left out."""
    out: dict[str, tuple[int, str]] = {}
    for itype in sorted(set(types)):
        found = effective_limit(policy.account_limit(itype), quotas.training_quota(itype) if quotas else None)
        if found is not None:
            out[itype] = (found.limit, found.source)
    return out


# -- plots ---------------------------------------------------------------------------------------------
PLOT_NAMES = ("objective", "cost")


def draw(view: JobView) -> dict[str, bytes]:
    """The job's plots as PNG bytes, by name (a plot with nothing to draw is left out)."""
    plots: dict[str, bytes] = {}
    for name, figure in (("objective", objective_figure(view)), ("cost", cost_figure(view))):
        if figure is not None:
            plots[name] = png(figure)
    return plots


OLD_PLOT_NAMES = ("instances",)
"""Per-job PNGs earlier versions wrote; removed from a reused folder with the others."""


def png_stem(key: str) -> str:
    """A job key as a file name: a member's ``<account>/<region>/<name>`` with ``_`` for ``/`` (no
    SageMaker name, account id or region holds one), a plain key as it is."""
    return key.replace("/", "_")


def draw_all(views: Iterable[JobView], out_dir: Path) -> None:
    """Fill each view's ``plots`` and write them beside the page as ``<job key>-<plot>.png`` (``png_stem``);
    a PNG of the job left from an earlier run in the same folder (a plot not drawn this time) is removed."""
    for view in views:
        view.plots = draw(view)
        stem = png_stem(view.key)
        for name in (*PLOT_NAMES, *OLD_PLOT_NAMES):
            if name not in view.plots:
                (out_dir / f"{stem}-{name}.png").unlink(missing_ok=True)
        for name, data in view.plots.items():
            (out_dir / f"{stem}-{name}.png").write_bytes(data)


def draw_accounts(usages: dict[str, TypeUsage], out_dir: Path) -> list[dict[str, Any]]:
    """Per instance type: the account view as a PNG beside the page (``account-<type>.png``) and as
    an interactive chart for the page; what the page's ``account_section`` macro takes. Account PNGs
    left from an earlier run in the same folder are removed first."""
    for old in out_dir.glob("account-*.png"):
        old.unlink()
    out = []
    for itype, usage in usages.items():
        figure = account_figure(usage)
        data = png(figure) if figure is not None else None
        if data is not None:
            (out_dir / f"account-{itype}.png").write_bytes(data)
        out.append({"usage": usage, "png": data, "chart": safe(account_chart(usage))})
    return out


def _account_views(store: Store, views: list[JobView], *, narrowed: bool, account: Account | None) -> list[JobView]:
    if not narrowed:
        return views
    months = sorted({view.created.strftime("%Y-%m") for view in views if view.created is not None})
    everyone = {view.key: view for month in months for view in collect(store, month=month, account=account)}
    return list((everyone | {view.key: view for view in views}).values())


# -- the page --------------------------------------------------------------------------------------------
def _figures(view: JobView) -> list[tuple[str, str]]:
    summary = view.summary
    figures = [("status", view.status), ("team", view.team or "-"), ("trials recorded", str(len(view.trials)))]
    if summary is not None:
        cost = summary.cost.cost_usd
        figures.append(
            ("cost", f"${cost:,.2f}" if cost is not None else f"unpriced (${summary.cost.priced_cost_usd:,.2f} priced)")
        )
    if summary is not None and summary.objective is not None and summary.objective.value is not None:
        figures.append(("best objective", f"{summary.objective.name} = {summary.objective.value}"))
    elif summary is not None:
        why = "stopped before any trial reported one" if view.status == "Stopped" else "no trial reported one"
        figures.append(("best objective", f"no objective ({why})"))
    return figures


def job_context(view: JobView) -> dict[str, Any]:
    """What the ``job_section`` macro takes for one job (``draw`` must have filled ``plots``)."""
    notes = [note for note in (job_note(view),) if note is not None]
    if "objective" not in view.plots:
        notes.append("Not drawn: objective (no finished trial reported one).")
    return {"view": view, "figures": _figures(view), "notes": notes}


def render(views: list[JobView], title: str, accounts: list[dict[str, Any]]) -> str:
    """One HTML page, every PNG embedded and the charts inline (``draw`` must have filled ``plots``)."""
    jobs = [job_context(view) for view in views]
    expected = sum(len(view.plots) for view in views)
    return render_template(
        "report.html.j2", title=title, jobs=jobs, accounts=accounts, expected=expected, interactive=bool(accounts)
    )


def write_report(  # noqa: PLR0913 - what to narrow the page to, keyword-only with defaults
    store: Store,
    out_dir: Path,
    *,
    title: str,
    job: str | None = None,
    team: str | None = None,
    month: str | None = None,
    account: Account | None = None,
    limits: Mapping[str, tuple[int, str]] | None = None,
    queue: Sequence[QueuedRequest] = (),
) -> Path:
    """Write ``index.html`` and one PNG per plot into ``out_dir``; the page's path. ``limits``: the
    applied limit per type (``applied_limits``), drawn for the whole window; ``queue``: the
    submissions the queue held, drawn as their waits; ``account``: one account's jobs only (its
    pictures too).

    The account pictures are account-wide even for one job or team: every job created in the months of
    the jobs shown, cut to the time those jobs span (the other teams' instances are what a breach is about)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    views = collect(store, job=job, team=team, month=month, account=account)
    draw_all(views, out_dir)
    usage = account_usage(
        _account_views(store, views, narrowed=bool(job or team), account=account),
        window(views),
        applied=limits,
        queue=queue,
    )
    accounts = draw_accounts(usage, out_dir)
    page = out_dir / "index.html"
    page.write_text(render(views, title, accounts), encoding="utf-8")
    return page
