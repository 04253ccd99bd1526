"""The audit job's HTML report: one self-contained file (inline CSS and SVG, no script, no external resource).

::

    html = render_report(ReportData(totals=..., denials_by_hour=[(hour, n), ...], top_denied=[(principal, n)],
                                    unused_acls=[{...}], covered_acls=[{...}]))
    write_report(Path("out/report.html"), data)

Sections, in the order an operator acts on them: a header with the window and the totals; the shadowed
ALLOWs (grants that silently never work); denials over time (per hour when the data spans at most
``MAX_HOURLY_BARS`` hours, else per day) and the top denied principals, resources and operations, as SVG bar
charts drawn here; the most-used ACLs with their hits; hits on ACLs no longer in the state and who made
them; the unused ACLs grouped by principal and resource, each marked safe to delete or not (and why); the
redundant ALLOWs. Tables are capped (the Parquet tables have every row) and scroll sideways rather than wrap
every cell: only names wrap.

Every piece of data is escaped (principal and resource names come from clients and are attacker-controlled);
the only markup is the template's own. Pure Python: Spark is not needed to render.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = ["MAX_HOURLY_BARS", "ReportData", "render_report", "write_report"]

MAX_HOURLY_BARS = 96
_MAX_LABEL = 48  # characters of a principal shown on the bar chart (the full name is in the tooltip)
_ACL_FIELDS = (
    "acl_id",
    "resource_type",
    "pattern_type",
    "resource_name",
    "principal",
    "host",
    "operation",
    "permission_type",
)


@dataclass(frozen=True)
class ReportData:
    """What the report shows, already collected from the audit's tables.

    ``totals``: the ``totals`` row (``window_start``, ``window_end``, ``events``, ``granted``, ``denied``,
    ``unattributed``, ``acls``, ``acls_used``, ``acls_unused``, ``acls_safe_to_delete``, ``shadowed``,
    ``redundant``, ``hits_on_acls_not_in_state`` ...); ``denials_by_hour``: (hour, denials) pairs;
    ``top_denied``, ``top_denied_resources``, ``top_denied_operations``: (principal, resource as ``TYPE:name``
    or operation; denials), most denied first; ``most_used_acls`` (``acl_usage`` rows with hits, most first),
    ``hits_not_in_state`` (``acl_hits_not_in_state`` rows), ``unused_acls`` (with ``safe_to_delete`` and
    ``why``) and ``covered_acls`` (``shadowed_acls``): rows as dicts (possibly capped)."""

    totals: Mapping[str, object]
    denials_by_hour: Sequence[tuple[datetime, int]]
    top_denied: Sequence[tuple[str, int]]
    unused_acls: Sequence[Mapping[str, object]]
    covered_acls: Sequence[Mapping[str, object]]
    top_denied_resources: Sequence[tuple[str, int]] = ()
    top_denied_operations: Sequence[tuple[str, int]] = ()
    most_used_acls: Sequence[Mapping[str, object]] = ()
    hits_not_in_state: Sequence[Mapping[str, object]] = ()
    title: str = "ksteward ACL audit"
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def _e(value: object) -> str:
    """Escaped text for element content and quoted attributes."""
    return html.escape("" if value is None else str(value), quote=True)


def _time(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S") + (
            " UTC" if value.tzinfo is None or value.utcoffset() == timedelta(0) else ""
        )
    return "-" if value is None else str(value)


def _num(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else _e(value)


# --- charts -------------------------------------------------------------------------------------


def _nice_step(top: float, ticks: int = 5) -> float:
    """A 1/2/5 x 10^k step that splits ``[0, top]`` into at most about ``ticks`` intervals."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * magnitude:
            return float(max(mult * magnitude, 1))
    return float(10 * magnitude)


def time_buckets(denials_by_hour: Sequence[tuple[datetime, int]]) -> tuple[str, list[tuple[datetime, int]]]:
    """(``hour`` or ``day``, buckets from the first to the last with data, empty ones as 0)."""
    if not denials_by_hour:
        return "hour", []
    counts: dict[datetime, int] = {}
    for hour, n in denials_by_hour:
        counts[hour] = counts.get(hour, 0) + n
    first, last = min(counts), max(counts)
    if (last - first) / timedelta(hours=1) < MAX_HOURLY_BARS:
        unit, step = "hour", timedelta(hours=1)
    else:
        unit, step = "day", timedelta(days=1)
        daily: dict[datetime, int] = {}
        for hour, n in counts.items():
            day = hour.replace(hour=0, minute=0, second=0, microsecond=0)
            daily[day] = daily.get(day, 0) + n
        counts, first, last = daily, min(daily), max(daily)
    buckets = []
    at = first
    while at <= last:
        buckets.append((at, counts.get(at, 0)))
        at += step
    return unit, buckets


def time_chart(denials_by_hour: Sequence[tuple[datetime, int]]) -> str:
    """An SVG column chart of denials per hour (or per day for long windows)."""
    unit, buckets = time_buckets(denials_by_hour)
    if not buckets:
        return '<p class="empty">No denials in the window.</p>'
    width, height, left, bottom, top_pad = 900, 260, 56, 40, 12
    plot_w, plot_h = width - left - 12, height - bottom - top_pad
    peak = max(n for _, n in buckets)
    step = _nice_step(peak)
    y_max = max(step * math.ceil(peak / step), step)
    bar_w = plot_w / len(buckets)
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="denials per {unit}">']
    y = 0.0
    while y <= y_max:
        py = top_pad + plot_h - y / y_max * plot_h
        parts.append(f'<line class="grid" x1="{left}" x2="{width - 12}" y1="{py:.1f}" y2="{py:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 6}" y="{py + 4:.1f}" text-anchor="end">{int(y):,}</text>')
        y += step
    label_every = max(1, math.ceil(len(buckets) / 8))
    fmt = "%m-%d %H:00" if unit == "hour" else "%Y-%m-%d"
    for i, (at, n) in enumerate(buckets):
        h = n / y_max * plot_h
        x = left + i * bar_w
        tip = f"{at.strftime(fmt)}: {n:,} denials"
        parts.append(
            f'<rect class="bar" x="{x + bar_w * 0.1:.1f}" y="{top_pad + plot_h - h:.1f}" '
            f'width="{max(bar_w * 0.8, 0.5):.1f}" height="{h:.1f}"><title>{_e(tip)}</title></rect>'
        )
        if i % label_every == 0:
            parts.append(
                f'<text class="tick" x="{x + bar_w / 2:.1f}" y="{height - bottom + 16}" '
                f'text-anchor="middle">{_e(at.strftime(fmt))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(rows: Sequence[tuple[str, int]], what: str = "top denied principals", *, width: int = 900) -> str:
    """An SVG horizontal bar chart of (label, count), in the given order; ``what`` names it for a screen reader.
    ``width``: of the drawing, in CSS pixels at its natural size (labels take about a third of it)."""
    if not rows:
        return '<p class="empty">No denials in the window.</p>'
    row_h, label_w, pad = 24, min(330, width * 2 // 5), 8
    max_label = min(_MAX_LABEL, label_w // 7)
    height = pad * 2 + row_h * len(rows)
    peak = max(n for _, n in rows) or 1
    plot_w = width - label_w - 90
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(what)}">']
    for i, (label, n) in enumerate(rows):
        y = pad + i * row_h
        shown = label if len(label) <= max_label else label[: max_label - 1] + "\u2026"
        w = n / peak * plot_w
        parts.append(
            f"<g><title>{_e(label)}: {n:,} denials</title>"
            f'<text class="label" x="{label_w - 8}" y="{y + row_h * 0.68:.1f}" text-anchor="end">{_e(shown)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{max(w, 0.5):.1f}" height="{row_h - 6}"/>'
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + row_h * 0.68:.1f}">{n:,}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


# --- tables and page ----------------------------------------------------------------------------

#: Columns whose text may wrap (names from clients, reasons); every other cell stays on one line and a wide
#: table scrolls sideways instead.
_WRAPPING = {"resource_name", "principal", "resource", "covered by", "why", "principals", "resources"}


def _cell(header: str, value: object) -> str:
    text = _time(value) if isinstance(value, datetime) else _num(value) if isinstance(value, int) else _e(value)
    if isinstance(value, bool):
        text = "yes" if value else "no"
    classes = [c for c, on in (("wrap", header in _WRAPPING), ("num", isinstance(value, int))) if on]
    return f'<td class="{" ".join(classes)}">{text}</td>' if classes else f"<td>{text}</td>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], total: object, what: str) -> str:
    if not rows:
        return f'<p class="empty">No {_e(what)}.</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(h, c) for h, c in zip(headers, row, strict=True)) + "</tr>" for row in rows)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'{_capped(len(rows), total, what)}<div class="scroll">{table}</div>'


def _capped(shown: int, total: object, what: str) -> str:
    if isinstance(total, int) and total > shown:
        return f'<p class="note">Showing {shown:,} of {total:,} {_e(what)}; the Parquet table has them all.</p>'
    return ""


def _covering(row: Mapping[str, object]) -> str:
    return (
        f"{row.get('covering_permission_type')} {row.get('covering_operation')} "
        f"{row.get('covering_pattern_type')} {row.get('covering_resource_name')} "
        f"for {row.get('covering_principal')} from {row.get('covering_host')} ({row.get('covering_acl_id')})"
    )


def _resource(row: Mapping[str, object]) -> str:
    return f"{row.get('resource_type')} {row.get('pattern_type')} {row.get('resource_name')}"


_COVERED_HEADERS = ("acl_id", "resource", "principal", "host", "operation", "covered by", "covering ACLs")


def _covered_table(rows: Sequence[Mapping[str, object]], kind: str, total: object) -> str:
    body = [
        [r.get("acl_id"), _resource(r), r.get("principal"), r.get("host"), r.get("operation"), _covering(r),
         r.get("covering_count")]
        for r in rows
        if r.get("kind") == kind
    ]  # fmt: skip
    return _table(_COVERED_HEADERS, body, total, f"{kind} ALLOWs")


def _most_used_table(rows: Sequence[Mapping[str, object]], total: object) -> str:
    headers = ("hits", "acl_id", "resource", "principal", "host", "operation", "permission", "last used")
    body = [
        [r.get("hits"), r.get("acl_id"), _resource(r), r.get("principal"), r.get("host"), r.get("operation"),
         r.get("permission_type"), r.get("last_used")]
        for r in rows
    ]  # fmt: skip
    return _table(headers, body, total, "used ACLs")


def _not_in_state_table(rows: Sequence[Mapping[str, object]]) -> str:
    def listed(row: Mapping[str, object], name: str) -> str:
        seen = row.get(f"{name}_seen") or []
        count = row.get(name)
        more = f" (+{count - len(seen):,} more)" if isinstance(count, int) and count > len(seen) else ""  # type: ignore[arg-type]
        return ", ".join(map(str, seen)) + more  # type: ignore[call-overload]

    headers = ("acl_id", "hits", "last used", "principals", "resources", "operations")
    body = [
        [r.get("acl_id"), r.get("hits"), r.get("last_used"), listed(r, "principals"), listed(r, "resources"),
         listed(r, "operations")]
        for r in rows
    ]  # fmt: skip
    return _table(headers, body, None, "hits on ACLs no longer in the state")


def _unused_table(rows: Sequence[Mapping[str, object]], total: object) -> str:
    """The unused ACLs grouped by principal, then resource: a heading row per principal (how many, how many
    safe to delete), then its ACLs in resource order, each marked."""
    if not rows:
        return '<p class="empty">No unused ACLs.</p>'
    headers = ("resource", "operation", "permission", "host", "acl_id", "safe to delete", "why")
    groups: dict[str, list[Mapping[str, object]]] = {}
    for row in rows:
        groups.setdefault(str(row.get("principal")), []).append(row)
    parts = []
    for principal, acls in groups.items():
        safe = sum(1 for r in acls if r.get("safe_to_delete"))
        parts.append(
            f'<tbody><tr class="group"><th colspan="{len(headers)}">{_e(principal)} '
            f'<span class="count">{len(acls):,} unused, {safe:,} safe to delete</span></th></tr>'
        )
        for r in sorted(acls, key=lambda r: (_resource(r), str(r.get("operation")), str(r.get("acl_id")))):
            mark = '<td class="safe">safe</td>' if r.get("safe_to_delete") else '<td class="keep">keep</td>'
            parts.append(
                f"<tr>{_cell('resource', _resource(r))}{_cell('operation', r.get('operation'))}"
                f"{_cell('permission', r.get('permission_type'))}{_cell('host', r.get('host'))}"
                f"{_cell('acl_id', r.get('acl_id'))}{mark}{_cell('why', r.get('why'))}</tr>"
            )
        parts.append("</tbody>")
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return (
        f'{_capped(len(rows), total, "unused ACLs")}<div class="scroll"><table class="grouped">'
        f"<thead><tr>{head}</tr></thead>{''.join(parts)}</table></div>"
    )


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1200px;
color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
h3{font-size:14px;margin:12px 0 4px;color:#384152}
.window{color:#566074;margin:0 0 14px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #dde2ea;border-radius:6px;padding:8px 12px;min-width:110px}
.card b{display:block;font-size:19px}.card span{color:#566074;font-size:12px}
.card.alert{border-color:#c0392b}.card.alert b{color:#c0392b}
.tops{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:12px}
.chart{width:100%;height:auto;background:#fbfcfe;border:1px solid #eef1f5}
.bar{fill:#c0392b}.grid{stroke:#e3e7ee}.tick,.value{font-size:11px;fill:#566074}.label{font-size:12px;fill:#1d2330}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;min-width:60%}
th,td{border:1px solid #dde2ea;padding:3px 6px;text-align:left;vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:12ch;max-width:40ch}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f3f5f9}tr:nth-child(even) td{background:#fafbfd}
tr.group th{background:#e9edf4;font-weight:600;white-space:normal;overflow-wrap:anywhere}
.count{font-weight:400;color:#566074;margin-left:8px}
td.safe{color:#1e7b34;font-weight:600}td.keep{color:#8a5a00}
.note,.empty{color:#566074;font-style:italic}
"""

_CARDS = (
    ("events", "events"),
    ("granted", "granted"),
    ("denied", "denied"),
    ("unattributed", "unattributed events"),
    ("acls", "ACLs"),
    ("acls_used", "used ACLs"),
    ("acls_unused", "unused ACLs"),
    ("acls_safe_to_delete", "safe to delete"),
    ("shadowed", "shadowed ALLOWs"),
    ("redundant", "redundant ALLOWs"),
    ("hits_on_acls_not_in_state", "hits on ACLs not in the state"),
)
_ALERTS = {"shadowed", "unattributed", "hits_on_acls_not_in_state"}


def _card(key: str, label: str, value: object) -> str:
    alert = " alert" if key in _ALERTS and isinstance(value, int) and value > 0 else ""
    return f'<div class="card{alert}"><b>{_num(value)}</b><span>{_e(label)}</span></div>'


def render_report(data: ReportData) -> str:
    """The whole HTML page."""
    totals = data.totals
    cards = "".join(_card(key, label, totals[key]) for key, label in _CARDS if key in totals)
    unit, _ = time_buckets(data.denials_by_hour)
    tops = "".join(
        f"<div><h3>{_e(title)}</h3>{bar_chart(rows, title.lower(), width=460)}</div>"
        for title, rows in (
            ("Top denied principals", data.top_denied),
            ("Top denied resources", data.top_denied_resources),
            ("Top denied operations", data.top_denied_operations),
        )
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(data.title)}</title><style>{_CSS}</style></head>
<body>
<header><h1>{_e(data.title)}</h1>
<p class="window">Window {_e(_time(totals.get("window_start")))} to {_e(_time(totals.get("window_end")))}
&middot; generated {_e(_time(data.generated_at))}</p>
<div class="cards">{cards}</div></header>
<section id="shadowed"><h2>Shadowed ALLOWs</h2>
<p class="note">Grants that silently never work: a DENY matches every request each of them matches.</p>
{_covered_table(data.covered_acls, "shadowed", totals.get("shadowed"))}</section>
<section id="denials-over-time"><h2>Denials per {unit}</h2>{time_chart(data.denials_by_hour)}</section>
<section id="top-denied"><h2>Most denied</h2><div class="tops">{tops}</div></section>
<section id="most-used"><h2>Most-used ACLs</h2>
{_most_used_table(data.most_used_acls, totals.get("acls_used"))}</section>
<section id="not-in-state"><h2>Hits on ACLs no longer in the state</h2>
<p class="note">ACLs that decided requests in the window and were deleted before its end: who relied on them.</p>
{_not_in_state_table(data.hits_not_in_state)}</section>
<section id="unused"><h2>Unused ACLs, by principal and resource</h2>
<p class="note">No hit in the window. "safe": deleting it alone changes no decision seen in the window and
leaves no active principal without a grant (the rule is in docs/pipeline.md, "Unused ACLs safe to delete").</p>
{_unused_table(data.unused_acls, totals.get("acls_unused"))}</section>
<section id="redundant"><h2>Redundant ALLOWs</h2>
<p class="note">Another ALLOW matches every request each of them matches, so deleting it changes no decision.</p>
{_covered_table(data.covered_acls, "redundant", totals.get("redundant"))}</section>
</body></html>
"""


def write_report(path: Path, data: ReportData) -> Path:
    """Render ``data`` to ``path`` (UTF-8), creating its directory; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(data), encoding="utf-8")
    return path
