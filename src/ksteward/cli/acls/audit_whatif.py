"""``--dry-run --audit-dir DIR``: which requests in the audit log would this change flip?

It calls the pipeline's what-if job (``ksteward.pipeline.jobs.whatif.whatif``, docs/pipeline.md) on the audit
files in DIR, with the live ACLs as the current state and the dry run's creations and deletions as the plan.
PySpark is optional: without it the dry run says so in one line and carries on.
"""

from __future__ import annotations

from typing import Any

from ksteward.authorizer import AclBinding, AuthorizerSettings
from ksteward.cli.admin_common import UsageError

MISSING = "pyspark is not installed: --audit-dir needs it (pip install pyspark); the what-if part was skipped"


def audit_flips(
    audit_dir: str,
    live_acls: list[AclBinding],
    settings: AuthorizerSettings,
    create: list[AclBinding],
    delete: list[AclBinding],
) -> dict[str, Any] | None:
    """The flips, counted (``None`` when pyspark is missing). ``UsageError`` for a DIR without audit files."""
    try:
        from ksteward.pipeline.decide import acl_frame
        from ksteward.pipeline.jobs._shared import release_checkpoint
        from ksteward.pipeline.jobs.whatif import ALLOWED_TO_DENIED, Plan, whatif
        from ksteward.pipeline.readers import InputError, read_audit
        from ksteward.pipeline.session import spark_session
    except ImportError:
        return None
    spark = spark_session(app_name="ksteward-acls-whatif")
    spark.sparkContext.setLogLevel("ERROR")  # the dry run's output is ours; Spark's notices would bury it
    try:
        events = read_audit(spark, [audit_dir]).frame
    except InputError as exc:
        raise UsageError(f"--audit-dir {exc}") from None
    acls = acl_frame(spark, [(f"live:{i}", acl) for i, acl in enumerate(live_acls)])
    flips = whatif(events, acls, settings, Plan(create=tuple(create), delete=tuple(delete)))
    try:
        rows = flips.collect()
    finally:
        release_checkpoint(flips)
    requests = [{
        "change": r.change, "principal": r.principal, "host": r.host, "operation": r.operation,
        "resource_type": r.resource_type, "resource_name": r.resource_name, "events": int(r.events),
        "first_seen": str(r.first_seen), "last_seen": str(r.last_seen),
        "rule_before": r.rule_before, "rule_after": r.rule_after,
    } for r in rows]  # fmt: skip
    denied = [r for r in requests if r["change"] == ALLOWED_TO_DENIED]
    allowed = [r for r in requests if r["change"] != ALLOWED_TO_DENIED]
    return {
        "audit_dir": audit_dir,
        "would_be_denied": {"requests": len(denied), "events": sum(r["events"] for r in denied)},
        "would_be_allowed": {"requests": len(allowed), "events": sum(r["events"] for r in allowed)},
        "flips": requests,
    }


def flips_text(summary: dict[str, Any]) -> list[str]:
    """The summary line and one tab-separated line per flipped request."""
    d, a = summary["would_be_denied"], summary["would_be_allowed"]
    lines = [f"Audit log {summary['audit_dir']}: {d['requests']} request(s) ({d['events']} events) would be "
             f"denied, {a['requests']} ({a['events']} events) newly allowed"]  # fmt: skip
    for r in summary["flips"]:
        lines.append(f"\t{r['change']}\t{r['principal']}\t{r['host']}\t{r['operation']}\t"
                     f"{r['resource_type']}:{r['resource_name']}\t{r['events']} events\t"
                     f"{r['rule_before']} -> {r['rule_after']}")  # fmt: skip
    return lines
