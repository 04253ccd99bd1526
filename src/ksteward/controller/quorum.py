"""The active controller: validates mutations, appends their records as one batch, replies once durable.

Every mutation runs its validation and record generation synchronously, then appends before its
first ``await``, so mutations are applied one at a time in arrival order (Kafka's QuorumController
has a single event queue for the same reason). Brokers reach these methods directly in a combined
node, and through an Envelope once forwarding exists.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from ksteward.controller.acls import AclControlManager
from ksteward.controller.scram import alter_user_scram_credentials
from ksteward.metadata.image import MetadataImage


class MetadataWriter(Protocol):
    """The controller's single writer: appends one batch and resolves once it is durable."""

    @property
    def latest(self) -> MetadataImage: ...

    def append(self, records: list[Any]) -> Awaitable[int]: ...


class Controller:
    def __init__(self, writer: MetadataWriter) -> None:
        self.writer = writer
        self.acls = AclControlManager()

    async def create_acls(self, creations: Any, api_version: int) -> list[dict[str, Any]]:
        before = self.writer.latest.acls
        records, results = self.acls.create_acls(before, creations, api_version)
        if records:
            durable = self.writer.append(records)
            self.acls.observe(before, self.writer.latest.acls, records)
            await durable
        return results

    async def delete_acls(self, filters: Any) -> list[dict[str, Any]]:
        before = self.writer.latest.acls
        records, results = self.acls.delete_acls(before, filters)
        if records:
            durable = self.writer.append(records)
            self.acls.observe(before, self.writer.latest.acls, records)
            await durable
        return results

    async def alter_user_scram_credentials(self, request: Any) -> dict[str, Any]:
        result = alter_user_scram_credentials(self.writer.latest, request)
        if result.records:
            await self.writer.append(result.records)
        return result.response
