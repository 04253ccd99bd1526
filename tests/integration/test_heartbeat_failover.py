"""A broker's heartbeats follow a failover to a controller that was stopped, not killed (issue 18: "Heartbeats and
registrations survive failover too"; the new active controller gives every broker a fresh session).

A SIGSTOPped controller keeps its connections open and accepts new ones, but answers nothing. Two things get the
broker's heartbeats to the new leader in time:

- ``ActiveControllerLink`` abandons a heartbeat in flight once the broker's Raft observer names another leader.
  Waiting out its 5 s call timeout instead, the broker is fenced: the session is 3 s here
  (``broker.session.timeout.ms``), and the quorum's timeouts are lowered so that an election takes 1-2 s.
- ``controller.quorum.request.timeout.ms`` bounds the observer's requests on the broker as in Kafka, connecting
  included: its Fetch to the stopped leader ends after 1 s, and so does a connection to a stopped voter it asks
  next (the 5 s connect timeout before let the session run out while it waited on the stopped voter).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from cluster_helpers import acl_names, create_topic_acl
from harness import Cluster, wait_for

QUORUM = {
    "broker.session.timeout.ms": "3000",
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.request.timeout.ms": "1000",
}
SESSION_S = 3.0  # broker.session.timeout.ms above


def test_heartbeats_reach_the_new_leader_before_the_broker_session_runs_out(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, brokers=1, controllers=3, overrides=QUORUM).start()
    stopped = None
    try:
        broker = cluster.brokers[0]
        create_topic_acl(broker, "before")
        old = cluster.wait_for_leader()
        old.send_signal(signal.SIGSTOP)
        stopped = old
        new = cluster.wait_for_leader(30.0, other_than=old)
        since = new.log_size()
        # Observed for twice the session after the election was seen (which is after it happened): without a
        # heartbeat, the new leader's session check fences the broker within the first half of this.
        window_end = time.monotonic() + 2 * SESSION_S
        wait_for(lambda: "fenced broker" in new.log_text()[since:] or time.monotonic() > window_end,
                          4 * SESSION_S + 10.0, "the session window after the election")  # fmt: skip
        assert "fenced broker" not in new.log_text()[since:], (
            f"{new.name} fenced the broker:\n{new.log_tail(15)}\n{broker.log_tail(15)}"
        )
        create_topic_acl(broker, "after")  # forwarded to the new leader, with the old one still stopped
        wait_for(lambda: "after" in acl_names(broker), 30.0, "the write after the failover")
    finally:
        if stopped is not None:
            stopped.send_signal(signal.SIGCONT)
        cluster.kill()


def test_a_bad_request_timeout_stops_a_controller_and_a_broker(tmp_path: Path) -> None:
    """Every node parses ``controller.quorum.*`` whatever its roles, as Kafka's ``KafkaConfig`` does: a
    ``controller.quorum.request.timeout.ms`` that is not a number of milliseconds stops a controller's start-up and
    a broker's (which bounds its Raft observer's requests with it) with a line naming the key."""
    cluster = Cluster(tmp_path, brokers=1, controllers=1, overrides={"controller.quorum.request.timeout.ms": "2s"})
    try:
        for node in (cluster.controllers[0], cluster.brokers[0]):
            code, output = node.run_to_exit()
            assert code != 0, output
            assert "controller.quorum.request.timeout.ms must be an integer, not '2s'" in output
            assert "Traceback" not in output, output
    finally:
        cluster.kill()
