"""KRaft replication of ``__cluster_metadata`` (KIP-595, KIP-630), sans-IO: no sockets, no asyncio, no clock.

- ``leader``: the leader's answers to Fetch (api 1) and FetchSnapshot (api 59), from a log view;
- ``observer``: a follower that is not a voter (a broker), as a state machine that builds the next
  request and turns each response into actions on its own log;
- ``log_view``: the Raft view of a ``MetadataLog`` both sides read, and Kafka's VALID / DIVERGING /
  SNAPSHOT rule;
- ``quorum_state``: the ``quorum-state`` file (blocking file I/O, as ``follower_log``'s log writes) and the
  single controller voter's new epoch at every start;
- ``voter`` (over ``replica_states``, ``election``, ``messages``, ``voter_actions``): a voter of a static
  quorum (elections with pre-vote, leadership, following) as a state machine that returns actions;
- ``progress``: the leader's view of each replica, which DescribeQuorum reports.

The rules are written up in docs/raft.md.
"""

from __future__ import annotations

import uuid

__all__ = ["METADATA_PARTITION", "METADATA_TOPIC_ID", "METADATA_TOPIC_NAME"]

METADATA_TOPIC_NAME = "__cluster_metadata"
METADATA_PARTITION = 0
#: Kafka's reserved ``Uuid.METADATA_TOPIC_ID``: high bits 0, low bits 1 (``AAAAAAAAAAAAAAAAAAAAAQ``).
METADATA_TOPIC_ID = uuid.UUID(int=1)
