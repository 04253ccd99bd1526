"""Bad input gets one clear line and exit 2, or is set aside as a reject (issue 21, item 5): a ``.gz`` file that
is not gzip, a window whose start is not before its end, a whatif deletion that matches no ACL; and an audit
event present in two input files is counted once, by its CloudEvents ``id``."""

from __future__ import annotations

import datetime
import gzip
import json
import re
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))

from metadata_logs import write_history

from ksteward.authorizer import AclBinding, AclBindingFilter, AuditEvent, StandardAuthorizer
from ksteward.cli.main import main
from ksteward.pipeline.decide import acl_frame
from ksteward.pipeline.jobs.audit import audit
from ksteward.pipeline.jobs.whatif import Plan, unmatched_deletions
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.readers import InputError, read_audit
from ksteward.pipeline.readers.audit import NOT_GZIP
from ksteward.pipeline.schemas import AUTHZ_EVENT_SCHEMA, AuthorizerSettings

T0 = datetime.datetime(2026, 11, 1, 9, tzinfo=datetime.UTC)
#: A job's progress lines (``jobs._shared.Progress``), which come before the error line.
PROGRESS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (audit|whatif) \[\d/\d\] ")
KAFKA_LINE = (
    "[2026-11-01 09:00:00,000] INFO Principal = User:carol is Allowed operation = READ from host = 10.0.0.3 on "
    "resource = Topic:LITERAL:open for request = Fetch with resourceRefCount = 1 based on rule DefaultAllow "
    "(kafka.authorizer.logger)"
)


def ksteward_lines(count: int) -> list[str]:
    """``count`` decisions as ksteward logs them: one CloudEvents line each, each with its own ``id``."""
    auth = StandardAuthorizer.from_config({})
    auth.load_snapshot({}, offset=0)
    lines = []
    for i in range(count):
        decision = auth.authorize_with_reason("User:eve", "10.0.0.1", "READ", "TOPIC", "orders")
        event = AuditEvent(decision, principal="User:eve", host="10.0.0.1", operation="READ", resource_type="TOPIC",
                           resource_name="orders", method_name="kafka.Fetch", timestamp=T0.timestamp() + i)  # fmt: skip
        lines.append(event.to_json())
    return lines


def test_a_gz_file_that_is_not_gzip_is_set_aside_whole(spark: SparkSession, tmp_path: Path) -> None:
    lines = ksteward_lines(3)
    (tmp_path / "audit-1.log.gz").write_text("\n".join(lines[:2]) + "\n")  # plain text under a .gz name
    with gzip.open(tmp_path / "audit-2.log.gz", "wt") as f:
        f.write(lines[2] + "\n")
    events, rejects = read_audit(spark, tmp_path)
    assert events.count() == 1  # the real gzip file is read
    assert [(Path(r.source_file).name, r.source_line, r.reason) for r in rejects.collect()] == [
        ("audit-1.log.gz", 0, NOT_GZIP)
    ]
    with pytest.raises(InputError, match=r"audit-1\.log\.gz: not a gzip file"):
        read_audit(spark, tmp_path / "audit-1.log.gz")  # nothing left to read: an error, not an empty answer


def test_a_bad_gz_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_history(tmp_path / "meta")
    (tmp_path / "audit.log.gz").write_text(ksteward_lines(1)[0] + "\n")
    argv = ["pipeline", "audit", "--metadata-dir", str(tmp_path / "meta"), "--audit", str(tmp_path / "audit.log.gz")]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if not PROGRESS.match(line) and "ksteward pipeline" in line] == [
        f"ksteward pipeline audit: {tmp_path / 'audit.log.gz'}: {NOT_GZIP}"
    ]
    assert "Exception" not in err and "\tat " not in err


@pytest.mark.parametrize("job", ["audit", "whatif"])
def test_from_after_to_is_one_line_and_exit_2(job: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_history(tmp_path / "meta")
    (tmp_path / "audit.log").write_text(KAFKA_LINE + "\n")
    (tmp_path / "plan.json").write_text("{}")
    argv = ["pipeline", job, "--metadata-dir", str(tmp_path / "meta"), "--audit", str(tmp_path / "audit.log")]
    argv += ["--out", str(tmp_path / "out"), *(["--plan", str(tmp_path / "plan.json")] if job == "whatif" else [])]
    assert main([*argv, "--from", "2026-11-02", "--to", "2026-11-01"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"ksteward pipeline {job}: --from 2026-11-02T00:00:00+00:00 is not before --to 2026-11-01T00:00:00+00:00: "
        "the window is empty (--from is inclusive, --to exclusive)"
    ]
    assert main([*argv, "--from", "2026-11-01", "--to", "2026-11-01"]) == 2  # an empty window too
    assert not (tmp_path / "out").exists()


def test_audit_refuses_an_empty_window(spark: SparkSession) -> None:
    events = local_frame(spark, [], AUTHZ_EVENT_SCHEMA)
    with pytest.raises(InputError, match="is empty"):
        audit(events, acl_frame(spark, []), AuthorizerSettings(), start=T0, end=T0)


ALICE_READ = AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")


def test_unmatched_deletions_are_named(spark: SparkSession) -> None:
    acls = acl_frame(spark, [("a1", ALICE_READ)])
    ghost = AclBinding("TOPIC", "orders", "LITERAL", "User:ghost", "*", "READ", "ALLOW")
    plan = Plan(
        delete=(ghost, ALICE_READ),
        delete_matching=(AclBindingFilter(principal="User:alice"), AclBindingFilter(principal="User:nobody")),
    )
    assert unmatched_deletions(acls, plan) == ["delete[0]", "delete_matching[1]"]
    assert unmatched_deletions(acls, Plan(delete=(ALICE_READ,))) == []
    assert unmatched_deletions(acls, Plan()) == []


def test_a_whatif_deletion_that_matches_nothing_is_said_and_fails_fail_on_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_history(tmp_path / "meta")  # its latest state has alice's READ on orders and eve's DENY
    (tmp_path / "kafka-authorizer.log").write_text(KAFKA_LINE + "\n")
    ghost = {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:ghost", "operation": "READ",
             "permission_type": "ALLOW"}  # fmt: skip
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"delete": [ghost]}))
    argv = ["pipeline", "whatif", "--metadata-dir", str(tmp_path / "meta"), "--plan", str(plan)]
    argv += ["--audit", str(tmp_path / "kafka-authorizer.log"), "--out", str(tmp_path / "out")]
    assert main([*argv, "--fail-on-break"]) == 2  # not a vacuous pass
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if not PROGRESS.match(line)] == [
        f"ksteward pipeline whatif: {plan}: delete[0] matches no current ACL, so --fail-on-break cannot pass on it"
    ]
    assert main(argv) == 0  # without --fail-on-break: said, and the rest of the plan is still judged
    captured = capsys.readouterr()
    assert f"{plan}: delete[0] matches no current ACL: it deletes nothing" in captured.err
    assert "0 request(s) (0 events) would be denied" in captured.out

    plan.write_text(json.dumps({"delete": [{**ghost, "principal": "User:alice"}]}))  # alice's ACL exists
    assert main([*argv, "--fail-on-break"]) == 0
    assert "matches no current ACL" not in capsys.readouterr().err


def test_an_event_in_two_files_is_counted_once_by_its_id(spark: SparkSession, tmp_path: Path) -> None:
    lines = ksteward_lines(3)
    (tmp_path / "audit.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "audit-copy.log").write_text("\n".join(lines[1:]) + "\n")  # two of them again
    confluent = json.loads(lines[0])
    del confluent["data"]["ksteward"]  # Confluent's form: the same CloudEvents id
    (tmp_path / "audit-confluent.log").write_text(json.dumps(confluent) + "\n")
    # Kafka's log4j lines have no id: two equal lines are two decisions (the same request in the same ms)
    (tmp_path / "kafka-authorizer.log").write_text(f"{KAFKA_LINE}\n{KAFKA_LINE}\n")
    events = read_audit(spark, tmp_path).frame
    by_format = {r.source_format: r["count"] for r in events.groupBy("source_format").count().collect()}
    assert events.where("source_format != 'kafka_authorizer_log'").count() == 3
    assert by_format["kafka_authorizer_log"] == 2
