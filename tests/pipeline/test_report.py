"""The audit's HTML report: self-contained, escaped, with its charts and tables (pure Python, no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

from ksteward.pipeline.report import MAX_HOURLY_BARS, ReportData, render_report, time_buckets, write_report

T0 = datetime(2026, 11, 1, tzinfo=UTC)
EVIL = '<script>alert("x")</script>'
ACL = {
    "acl_id": "AAAAAAAAAAAAAAAAAAAAAA",
    "resource_type": "TOPIC",
    "pattern_type": "LITERAL",
    "resource_name": "orders",
    "principal": "User:alice",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


class Outline(HTMLParser):
    """Tags in document order, the attributes of each, and whether every element was closed."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}  # HTML void elements; SVG ones are written "<x/>"

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def outline(page: str) -> Outline:
    parser = Outline()
    parser.feed(page)
    parser.close()
    assert parser.open == [], parser.open
    return parser


SECTIONS = ["shadowed", "denials-over-time", "top-denied", "most-used", "not-in-state", "unused", "redundant"]


def data(**changes: object) -> ReportData:
    values: dict[str, object] = {
        "totals": {
            "window_start": T0,
            "window_end": T0 + timedelta(days=1),
            "events": 1234567,
            "granted": 1234000,
            "denied": 567,
            "acls": 3,
            "acls_used": 1,
            "acls_unused": 2,
            "shadowed": 1,
            "redundant": 0,
            "unattributed": 0,
        },
        "denials_by_hour": [(T0 + timedelta(hours=h), n) for h, n in ((0, 10), (1, 0), (5, 40))],
        "top_denied": [("User:eve", 500), (f"User:{EVIL}", 67)],
        "unused_acls": [
            {**ACL, "safe_to_delete": True, "why": "no hit in the window"},
            {
                **ACL,
                "acl_id": "BBBBBBBBBBBBBBBBBBBBBB",
                "principal": f"User:{EVIL}",
                "safe_to_delete": False,
                "why": "the only grant of a principal that made allowed requests",
            },
        ],
        "top_denied_resources": [("TOPIC:secrets", 500)],
        "top_denied_operations": [("READ", 567)],
        "most_used_acls": [{**ACL, "hits": 1234000, "last_used": T0}],
        "hits_not_in_state": [
            {
                "acl_id": "DDDDDDDDDDDDDDDDDDDDDD",
                "hits": 3,
                "last_used": T0,
                "principals": 2,
                "principals_seen": ["User:alice", "User:bob"],
                "resources": 1,
                "resources_seen": ["TOPIC:old"],
                "operations": 1,
                "operations_seen": ["READ"],
            }
        ],
        "covered_acls": [
            {
                **ACL,
                "kind": "shadowed",
                "covering_count": 1,
                "covering_acl_id": "CCCCCCCCCCCCCCCCCCCCCC",
                "covering_resource_name": "ord",
                "covering_pattern_type": "PREFIXED",
                "covering_principal": "User:*",
                "covering_host": "*",
                "covering_operation": "ALL",
                "covering_permission_type": "DENY",
            }
        ],
        "generated_at": T0,
    }
    values.update(changes)
    return ReportData(**values)  # type: ignore[arg-type]


def test_attacker_controlled_names_are_escaped() -> None:
    page = render_report(data())
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    parsed = outline(page)
    assert [tag for tag, _ in parsed.tags if tag == "script"] == []
    assert sum(EVIL in text for text in parsed.text) >= 2  # bar tooltip, unused table: as text, not markup


def test_self_contained_with_both_charts_and_tables(tmp_path: Path) -> None:
    path = write_report(tmp_path / "out" / "report.html", data())
    page = path.read_text(encoding="utf-8")
    parsed = outline(page)
    tags = [tag for tag, _ in parsed.tags]
    assert tags[:2] == ["html", "head"] and page.startswith("<!DOCTYPE html>")
    for tag, attrs in parsed.tags:  # nothing fetched from anywhere: no link, script, img, src or href
        assert tag not in ("link", "script", "img", "iframe", "object"), tag
        assert not {"src", "href"} & set(attrs), (tag, attrs)
    assert "url(" not in page and "@import" not in page
    sections = [attrs.get("id") for tag, attrs in parsed.tags if tag == "section"]
    assert sections == SECTIONS  # the shadowed ALLOWs first
    assert tags.count("svg") == 4  # denials over time; top principals, resources, operations
    bars = [attrs for tag, attrs in parsed.tags if tag == "rect" and attrs.get("class") == "bar"]
    assert len(bars) == 6 + 2 + 1 + 1  # hours 0..5 (gaps filled with zeros), two principals, a resource, an op
    text = " ".join(parsed.text)
    assert "Denials per hour" in text and "1,234,567" in text
    assert "2026-11-01 00:00:00 UTC" in text and "2026-11-02 00:00:00 UTC" in text
    rows = [tag for tag in tags if tag == "tr"]
    # header + rows: shadowed (1), most used (1), not in the state (1), unused (one group row per principal, 2)
    assert len(rows) == (1 + 1) + (1 + 1) + (1 + 1) + (1 + 2 + 2)
    assert "DENY ALL PREFIXED ord for User:* from * (CCCCCCCCCCCCCCCCCCCCCC)" in text


def test_capped_tables_say_so_and_empty_sections_too() -> None:
    empty: dict[str, object] = {"top_denied_resources": [], "top_denied_operations": [], "hits_not_in_state": []}
    page = render_report(data(unused_acls=[ACL], covered_acls=[], denials_by_hour=[], top_denied=[], **empty))
    assert "Showing 1 of 2 unused ACLs" in page
    assert "No shadowed ALLOWs." in page and "No redundant ALLOWs." in page
    assert page.count("No denials in the window.") == 4
    assert "No hits on ACLs no longer in the state." in page
    outline(page)


def test_long_windows_are_drawn_per_day() -> None:
    hours = [(T0 + timedelta(hours=h), 1) for h in range(0, 24 * 10, 7)]
    unit, buckets = time_buckets(hours)
    assert unit == "day" and len(buckets) == 10
    assert sum(n for _, n in buckets) == len(hours)
    short = [(T0 + timedelta(hours=h), 2) for h in (0, MAX_HOURLY_BARS - 2)]
    unit, buckets = time_buckets(short)
    assert unit == "hour" and len(buckets) == MAX_HOURLY_BARS - 1 and [n for _, n in buckets if n] == [2, 2]
    assert "Denials per day" in render_report(data(denials_by_hour=hours))
