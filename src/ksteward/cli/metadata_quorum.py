"""``ksteward metadata quorum describe``: the KRaft quorum as ``kafka-metadata-quorum.sh`` prints it.

It sends DescribeQuorum (api 55) with ksteward's own client (confluent-kafka has no DescribeQuorum), through
a broker (which forwards it to the active controller) or, with ``--bootstrap-controller`` (KIP-919), to the
controllers directly; there the first address whose controller leads answers. ``--status`` is Kafka's
``MetadataQuorumCommand.handleDescribeStatus`` (ClusterId from DescribeCluster, MaxFollowerLag and
MaxFollowerLagTimeMs from the voter furthest behind), ``--replication`` its ``handleDescribeReplication``
table (``ToolsUtils.prettyPrintTable``: each column padded to its widest value, each followed by a tab).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

from kio.schema.errors import ErrorCode

from ksteward.cli.admin_common import (
    CommandError,
    Connection,
    add_connection_flags,
    connection,
    describe_cluster,
    ksteward_admin,
    no_leader_answered,
    print_json,
    quorum_addresses,
    raise_for_error,
    run_command,
)
from ksteward.cli.metadata_quorum_voters import add_voter_commands
from ksteward.metadata.records.kafka_json import kafka_uuid
from ksteward.protocol.apis import ApiKey
from ksteward.raft import METADATA_PARTITION, METADATA_TOPIC_NAME

__all__ = ["QuorumInfo", "add_quorum_parser", "replication_rows", "status_lines"]

EXAMPLES = """\
examples:
  ksteward metadata quorum --bootstrap-server localhost:9092 describe --status
  ksteward metadata quorum --bootstrap-controller localhost:9093 describe --replication
  ksteward metadata quorum --bootstrap-server localhost:9092 describe --replication --human-readable
  ksteward metadata quorum --bootstrap-server localhost:9092 --command-config admin.properties \\
      describe --status --output json
  ksteward metadata quorum --bootstrap-server localhost:9092 remove-controller -i 3 -d 6Bm2yQpKQs2vJv0TqRrW9w
"""

_NO_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Kafka prints it
_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")


@dataclass(frozen=True, slots=True)
class Replica:
    """``QuorumInfo.ReplicaState``: -1 for an unknown value, as on the wire."""

    replica_id: int
    directory_id: str
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """The admin client's ``QuorumInfo``: the leader's answer, with the voters' endpoints (v2's Nodes)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]
    endpoints: dict[int, tuple[str, ...]]

    @property
    def leader(self) -> Replica:
        for voter in self.voters:
            if voter.replica_id == self.leader_id:
                return voter
        raise CommandError(f"the leader {self.leader_id} is not among the voters the controller reported")


def add_quorum_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``metadata quorum`` on the ``metadata`` command's subparsers."""
    parser = commands.add_parser(
        "quorum", help="describe the KRaft controller quorum, or change its voters (kafka-metadata-quorum.sh)",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Describe the KRaft quorum of __cluster_metadata, or ask it to add or remove a voter, as "
                    "kafka-metadata-quorum.sh does.",
    )  # fmt: skip
    add_connection_flags(parser, controller=True)
    actions = parser.add_subparsers(dest="quorum_command", metavar="COMMAND", required=True)
    describe = actions.add_parser("describe", help="describe the quorum", epilog=EXAMPLES,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="a short summary of the quorum status")
    what.add_argument("--replication", action="store_true", help="each replica's replication progress")
    describe.add_argument("--human-readable", action="store_true",
                          help="with --replication: timestamps as 'N ms ago'")  # fmt: skip
    describe.add_argument("--output", choices=("text", "json"), default=argparse.SUPPRESS,
                          help="text (kafka-metadata-quorum.sh's format, the default) or json")  # fmt: skip
    describe.set_defaults(func=run_quorum)
    add_voter_commands(actions)


def run_quorum(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    return run_command("metadata quorum", lambda: _describe(args, out))


def _describe(args: argparse.Namespace, out: IO[str] | None) -> int:
    out = out or sys.stdout
    conn = connection(args)
    info, cluster_id = fetch_quorum(conn, with_cluster_id=args.status)
    if args.status:
        if args.output == "json":
            print_json(status_document(info, cluster_id))
        else:
            out.write("\n".join(status_lines(info, cluster_id)) + "\n")
        return 0
    now_ms = time.time_ns() // 1_000_000 if args.human_readable else None
    rows = replication_rows(info, now_ms)
    if args.output == "json":
        print_json([dict(zip(_JSON_COLUMNS, row, strict=True)) for row in rows])
    else:
        out.write(pretty_table(_HEADERS, [[str(v) for v in row] for row in rows]))
    return 0


# --- the request ----------------------------------------------------------------------------------------


def fetch_quorum(conn: Connection, *, with_cluster_id: bool) -> tuple[QuorumInfo, str]:
    """The leader's answer; with ``--bootstrap-controller``, from the first listed controller that leads."""
    refusals = []
    for address in quorum_addresses(conn):
        with ksteward_admin(Connection(address, conn.to_controller, conn.properties)) as admin:
            body = admin.request(ApiKey.DESCRIBE_QUORUM, _REQUEST, max_version=2)
            info = quorum_info(body)
            if info is None:
                refusals.append(address)
                continue
            return info, (_cluster_id(admin, conn.to_controller) if with_cluster_id else "")
    raise no_leader_answered(refusals)


_REQUEST = {"topics": [{"topic_name": METADATA_TOPIC_NAME, "partitions": [{"partition_index": METADATA_PARTITION}]}]}


def _cluster_id(admin: Any, to_controller: bool) -> str:
    body = describe_cluster(admin, to_controller=to_controller)
    raise_for_error(int(body.error_code), body.error_message)
    return str(body.cluster_id)


def quorum_info(body: Any) -> QuorumInfo | None:
    """A DescribeQuorum response as ``QuorumInfo``; None when the replica asked does not lead. Any other error
    is a :class:`CommandError` with Kafka's error name (as ``KafkaAdminClient.describeMetadataQuorum`` fails)."""
    raise_for_error(int(body.error_code), getattr(body, "error_message", None))
    if len(body.topics) != 1 or len(body.topics[0].partitions) != 1:
        raise CommandError("the controller's DescribeQuorum answer did not describe one partition")
    partition = body.topics[0].partitions[0]
    if partition.error_code == ErrorCode.not_leader_or_follower:
        return None
    raise_for_error(int(partition.error_code), getattr(partition, "error_message", None))
    endpoints = {
        int(n.node_id): tuple(_endpoint(listener.name, listener.host, int(listener.port)) for listener in n.listeners)
        for n in getattr(body, "nodes", ())
    }
    return QuorumInfo(
        leader_id=int(partition.leader_id),
        leader_epoch=int(partition.leader_epoch),
        high_watermark=int(partition.high_watermark),
        voters=tuple(_replica(r) for r in partition.current_voters),
        observers=tuple(_replica(r) for r in partition.observers),
        endpoints=endpoints,
    )


def _endpoint(name: str, host: str, port: int) -> str:
    """``RaftVoterEndpoint.toString``: ``NAME://host:port``, an IPv6 host in brackets."""
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


def _replica(state: Any) -> Replica:
    directory = getattr(state, "replica_directory_id", None)
    return Replica(
        replica_id=int(state.replica_id),
        directory_id=kafka_uuid(directory) if directory is not None else _NO_DIRECTORY,
        log_end_offset=int(state.log_end_offset),
        last_fetch_timestamp=int(getattr(state, "last_fetch_timestamp", -1)),
        last_caught_up_timestamp=int(getattr(state, "last_caught_up_timestamp", -1)),
    )


# --- --status -------------------------------------------------------------------------------------------


def _lags(info: QuorumInfo) -> tuple[int, int]:
    """MaxFollowerLag and MaxFollowerLagTimeMs: against the voter with the lowest log end offset (the first of
    them, in the answer's order); 0 ms when that is the leader, -1 when a caught-up time is unknown."""
    leader = info.leader
    furthest = min(info.voters, key=lambda v: v.log_end_offset)  # the first minimum, as Java's Stream.min
    lag = leader.log_end_offset - furthest.log_end_offset
    if furthest.replica_id == leader.replica_id:
        return lag, 0
    if leader.last_caught_up_timestamp < 0 or furthest.last_caught_up_timestamp < 0:
        return lag, -1
    return lag, leader.last_caught_up_timestamp - furthest.last_caught_up_timestamp


def _replica_summary(info: QuorumInfo, replica: Replica) -> str:
    """``MetadataQuorumCommand.Node.toString``: id, the directory id unless zero, the endpoints if known."""
    text = f'{{"id": {replica.replica_id}'
    if replica.directory_id != _NO_DIRECTORY:
        text += f', "directoryId": "{replica.directory_id}"'
    endpoints = info.endpoints.get(replica.replica_id, ())
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def status_lines(info: QuorumInfo, cluster_id: str) -> list[str]:
    lag, lag_ms = _lags(info)
    voters = "[" + ", ".join(_replica_summary(info, v) for v in info.voters) + "]"
    observers = "[" + ", ".join(_replica_summary(info, o) for o in info.observers) + "]"
    return [
        f"ClusterId:              {cluster_id}",
        f"LeaderId:               {info.leader_id}",
        f"LeaderEpoch:            {info.leader_epoch}",
        f"HighWatermark:          {info.high_watermark}",
        f"MaxFollowerLag:         {lag}",
        f"MaxFollowerLagTimeMs:   {lag_ms}",
        f"CurrentVoters:          {voters}",
        f"CurrentObservers:       {observers}",
    ]


def status_document(info: QuorumInfo, cluster_id: str) -> dict[str, Any]:
    lag, lag_ms = _lags(info)

    def summary(replica: Replica) -> dict[str, Any]:
        return {"id": replica.replica_id, "directoryId": replica.directory_id,
                "endpoints": list(info.endpoints.get(replica.replica_id, ()))}  # fmt: skip

    return {
        "clusterId": cluster_id,
        "leaderId": info.leader_id,
        "leaderEpoch": info.leader_epoch,
        "highWatermark": info.high_watermark,
        "maxFollowerLag": lag,
        "maxFollowerLagTimeMs": lag_ms,
        "currentVoters": [summary(v) for v in info.voters],
        "currentObservers": [summary(o) for o in info.observers],
    }


# --- --replication --------------------------------------------------------------------------------------

_JSON_COLUMNS = ("nodeId", "directoryId", "logEndOffset", "lag", "lastFetchTimestamp", "lastCaughtUpTimestamp",
                 "status")  # fmt: skip


def _when(timestamp_ms: int, now_ms: int | None, what: str) -> int | str:
    """A timestamp, or with ``--human-readable`` "N ms ago" (``MetadataQuorumCommand.relativeTimeMs``)."""
    if timestamp_ms < 0 or now_ms is None:
        return timestamp_ms
    if timestamp_ms == 0 or timestamp_ms > now_ms:
        raise CommandError(f"Error while computing relative time, possible drift in system clock. "
                           f"Current timestamp is {now_ms}, {what} timestamp is {timestamp_ms}")  # fmt: skip
    return f"{now_ms - timestamp_ms} ms ago"


def replication_rows(info: QuorumInfo, now_ms: int | None = None) -> list[tuple[Any, ...]]:
    """The leader, then the other voters (Follower), then the observers, each with its lag behind the leader."""
    leader = info.leader
    ranked = [(leader, "Leader")]
    ranked += [(v, "Follower") for v in info.voters if v.replica_id != info.leader_id]
    ranked += [(o, "Observer") for o in info.observers]
    return [
        (r.replica_id, r.directory_id, r.log_end_offset, leader.log_end_offset - r.log_end_offset,
         _when(r.last_fetch_timestamp, now_ms, "last fetch"),
         _when(r.last_caught_up_timestamp, now_ms, "last caught up"), status)
        for r, status in ranked
    ]  # fmt: skip


def pretty_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    """``ToolsUtils.prettyPrintTable``: each value padded to its column's widest and followed by a tab."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    lines = [list(headers), *rows]
    return "".join("".join(value.ljust(widths[i]) + "\t" for i, value in enumerate(line)) + "\n" for line in lines)
