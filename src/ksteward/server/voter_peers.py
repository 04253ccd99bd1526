"""Connections from one controller voter to the others, for the Raft RPCs it sends (KIP-595).

Each other voter is reached on its ``controller.quorum.voters`` address over the controller listener, with the
same handshake a broker uses (``controller_channel.open_controller_connection``: ApiVersions, then a SASL PLAIN
login on a SASL_PLAINTEXT listener). A connection carries one call at a time, so each peer has one connection
per *lane*: elections (Vote, BeginQuorumEpoch, EndQuorumEpoch) never wait behind a Fetch long poll to the same
node. A failed call drops its connection and returns None; the next call reconnects (Kafka's
``controller.quorum.retry.backoff.ms`` is the caller's business). Every call has a deadline
(``controller.quorum.request.timeout.ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ksteward.server.controller_channel import CALL_ERRORS, Address, ControllerConnection, open_controller_connection

log = logging.getLogger(__name__)

ELECTION_LANE = "election"
FETCH_LANE = "fetch"


class VoterPeers:
    """Outbound calls to the other voters (see the module docstring)."""

    def __init__(
        self,
        addresses: dict[int, Address],
        *,
        node_id: int,
        sasl_plain: tuple[str, str] | None,
        request_timeout_s: float,
    ) -> None:
        self.addresses = addresses
        self._sasl_plain = sasl_plain
        self._client_id = f"ksteward-raft-{node_id}"
        self._timeout_s = request_timeout_s
        self._connections: dict[tuple[int, str], ControllerConnection] = {}
        self._locks: dict[tuple[int, str], asyncio.Lock] = {}
        self._failing: set[int] = set()  # peers whose last call failed (logged once per outage)

    async def call(
        self, node_id: int, api_key: int, version: int, body: Any, *, lane: str = ELECTION_LANE,
        timeout_s: float | None = None,
    ) -> Any | None:  # fmt: skip
        """``body`` sent to ``node_id``; its response, or None when the call failed or timed out."""
        key = (node_id, lane)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                connection = self._connections.get(key)
                if connection is None:
                    connection, _ = await open_controller_connection(
                        self.addresses[node_id], sasl_plain=self._sasl_plain, client_id=self._client_id,
                        timeout_s=self._timeout_s,
                    )  # fmt: skip
                    self._connections[key] = connection
                # asyncio.timeout, not wait_for: the request is written in this step, not in a new task's first one.
                async with asyncio.timeout(timeout_s or self._timeout_s):
                    response = await connection.call(api_key, version, body)
            except CALL_ERRORS as exc:
                if node_id not in self._failing:
                    log.info("voter %d unreachable (%s)", node_id, type(exc).__name__)
                    self._failing.add(node_id)
                await self._drop(key)
                return None
            except asyncio.CancelledError:
                await self._drop(key)  # a half-read answer must not be read by the next call
                raise
        if node_id in self._failing:
            self._failing.discard(node_id)
            log.info("voter %d reachable again", node_id)
        return response

    async def _drop(self, key: tuple[int, str]) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()

    async def close(self) -> None:
        for key in list(self._connections):
            await self._drop(key)
