"""The audit job's HTML report: one self-contained file (inline CSS and SVG, no script, no external resource).

::

    html = render_report(ReportData(totals=..., denials_by_hour=[(hour, n), ...], top_denied=[(principal, n)],
                                    unused_acls=[{...}], covered_acls=[{...}]))
    write_report(Path("out/report.html"), data)

Sections: a header with the window and the totals; denials over time (per hour when the data spans at most
``MAX_HOURLY_BARS`` hours, else per day) and the top denied principals, both as SVG bar charts drawn here;
the unused ACLs and the shadowed/redundant ACLs as tables (capped: the Parquet tables have every row).

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

_COVERED_HEADERS = ("kind", *_ACL_FIELDS, "covered by", "covering ACLs")


@dataclass(frozen=True)
class ReportData:
    """What the report shows, already collected from the audit's tables.

    ``totals``: the ``totals`` row (``window_start``, ``window_end``, ``events``, ``granted``, ``denied``,
    ``acls``, ``acls_used``, ``acls_unused``, ``shadowed``, ``redundant`` ...); ``denials_by_hour``: (hour,
    denials) pairs; ``top_denied``: (principal, denials), most denied first; ``unused_acls`` and
    ``covered_acls``: rows of ``unused_acls`` and ``shadowed_acls`` as dicts (possibly capped)."""

    totals: Mapping[str, object]
    denials_by_hour: Sequence[tuple[datetime, int]]
    top_denied: Sequence[tuple[str, int]]
    unused_acls: Sequence[Mapping[str, object]]
    covered_acls: Sequence[Mapping[str, object]]
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


def bar_chart(rows: Sequence[tuple[str, int]]) -> str:
    """An SVG horizontal bar chart of (label, count), in the given order."""
    if not rows:
        return '<p class="empty">No denials in the window.</p>'
    row_h, label_w, width, pad = 24, 330, 900, 8
    height = pad * 2 + row_h * len(rows)
    peak = max(n for _, n in rows) or 1
    plot_w = width - label_w - 90
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="top denied principals">']
    for i, (label, n) in enumerate(rows):
        y = pad + i * row_h
        shown = label if len(label) <= _MAX_LABEL else label[: _MAX_LABEL - 1] + "\u2026"
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


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], total: object, what: str) -> str:
    if not rows:
        return f'<p class="empty">No {_e(what)}.</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    note = ""
    if isinstance(total, int) and total > len(rows):
        note = f'<p class="note">Showing {len(rows):,} of {total:,} {_e(what)}; the Parquet table has them all.</p>'
    return f"{note}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _covering(row: Mapping[str, object]) -> str:
    return (
        f"{row.get('covering_permission_type')} {row.get('covering_operation')} "
        f"{row.get('covering_pattern_type')} {row.get('covering_resource_name')} "
        f"for {row.get('covering_principal')} from {row.get('covering_host')} ({row.get('covering_acl_id')})"
    )


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.window{color:#566074;margin:0 0 14px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #dde2ea;border-radius:6px;padding:8px 12px;min-width:110px}
.card b{display:block;font-size:19px}.card span{color:#566074;font-size:12px}
.chart{width:100%;height:auto;background:#fbfcfe;border:1px solid #eef1f5}
.bar{fill:#c0392b}.grid{stroke:#e3e7ee}.tick,.value{font-size:11px;fill:#566074}.label{font-size:12px;fill:#1d2330}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border:1px solid #dde2ea;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f5f9}tr:nth-child(even) td{background:#fafbfd}
.note,.empty{color:#566074;font-style:italic}
"""

_CARDS = (
    ("events", "events"),
    ("granted", "granted"),
    ("denied", "denied"),
    ("acls", "ACLs"),
    ("acls_used", "used ACLs"),
    ("acls_unused", "unused ACLs"),
    ("shadowed", "shadowed"),
    ("redundant", "redundant"),
    ("mismatched", "unattributed events"),
)


def render_report(data: ReportData) -> str:
    """The whole HTML page."""
    totals = data.totals
    cards = "".join(
        f'<div class="card"><b>{_num(totals[key])}</b><span>{_e(label)}</span></div>'
        for key, label in _CARDS
        if key in totals
    )
    unit, _ = time_buckets(data.denials_by_hour)
    unused_rows = [[row.get(f) for f in _ACL_FIELDS] for row in data.unused_acls]
    covered_rows = [
        [row.get("kind"), *(row.get(f) for f in _ACL_FIELDS), _covering(row), row.get("covering_count")]
        for row in data.covered_acls
    ]
    covered_total = sum(int(totals.get(k, 0) or 0) for k in ("shadowed", "redundant"))  # type: ignore[call-overload]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(data.title)}</title><style>{_CSS}</style></head>
<body>
<header><h1>{_e(data.title)}</h1>
<p class="window">Window {_e(_time(totals.get("window_start")))} to {_e(_time(totals.get("window_end")))}
&middot; generated {_e(_time(data.generated_at))}</p>
<div class="cards">{cards}</div></header>
<section id="denials-over-time"><h2>Denials per {unit}</h2>{time_chart(data.denials_by_hour)}</section>
<section id="top-denied"><h2>Top denied principals</h2>{bar_chart(data.top_denied)}</section>
<section id="unused"><h2>Unused ACLs</h2>
{_table(_ACL_FIELDS, unused_rows, totals.get("acls_unused"), "unused ACLs")}</section>
<section id="covered"><h2>Shadowed and redundant ACLs</h2>
<p class="note">Shadowed: a DENY matches every request this ALLOW matches, so it never takes effect.
Redundant: another ALLOW matches every request it matches, so deleting it changes no decision.</p>
{_table(_COVERED_HEADERS, covered_rows, covered_total, "shadowed or redundant ACLs")}
</section>
</body></html>
"""


def write_report(path: Path, data: ReportData) -> Path:
    """Render ``data`` to ``path`` (UTF-8), creating its directory; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(data), encoding="utf-8")
    return path
