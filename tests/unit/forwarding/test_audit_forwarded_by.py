"""Audit events of a forwarded request name the forwarding broker next to the client's principal."""

from __future__ import annotations

import asyncio

from ksteward.authorizer import AuditEvent, AuthorizationResult, Decision, ForwardingBroker, Rule, forwarded_by


def _event(**kw: object) -> AuditEvent:
    return AuditEvent(
        Decision(AuthorizationResult.ALLOWED, Rule.SUPER_USER),
        principal="User:alice",
        host="10.0.0.9",
        operation="ALTER",
        resource_type="CLUSTER",
        resource_name="kafka-cluster",
        method_name="kafka.CreateAcls",
        **kw,  # type: ignore[arg-type]
    )


def test_a_direct_request_has_no_forwarded_by() -> None:
    doc = _event().to_dict()
    assert "forwardedBy" not in doc["data"]["ksteward"]


def test_events_inside_the_block_name_the_broker_and_keep_the_client() -> None:
    with forwarded_by("User:broker", "127.0.0.1"):
        doc = _event().to_dict()
    assert doc["data"]["authenticationInfo"]["principal"] == "User:alice"
    assert doc["data"]["requestMetadata"]["clientAddress"] == "10.0.0.9"
    assert doc["data"]["ksteward"]["forwardedBy"] == {"principal": "User:broker", "clientAddress": "127.0.0.1"}
    assert "forwardedBy" not in _event().to_dict()["data"]["ksteward"]  # reset after the block


def test_an_explicit_broker_wins() -> None:
    with forwarded_by("User:a", "1.1.1.1"):
        doc = _event(forwarded_by=ForwardingBroker("User:b", "2.2.2.2")).to_dict()
    assert doc["data"]["ksteward"]["forwardedBy"]["principal"] == "User:b"


def test_concurrent_tasks_do_not_see_each_others_broker() -> None:
    async def one(broker: str | None, gate: asyncio.Event) -> str | None:
        if broker is None:
            await gate.wait()
            event = _event()
        else:
            with forwarded_by(broker, "h"):
                gate.set()
                await asyncio.sleep(0)
                event = _event()
        return None if event.forwarded_by is None else event.forwarded_by.principal

    async def main() -> list[str | None]:
        gate = asyncio.Event()
        return list(await asyncio.gather(one("User:b1", gate), one(None, gate)))

    assert asyncio.run(main()) == ["User:b1", None]
