"""Delegation tokens on the controller: Kafka's DelegationTokenControlManager rules, with a fake clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kio.schema.create_delegation_token.v3.request import CreatableRenewers, CreateDelegationTokenRequest
from kio.schema.errors import ErrorCode

from ksteward.controller.delegation_tokens import (
    DelegationTokenControlManager,
    DelegationTokenSettings,
    describable,
    token_hmac,
)
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import DelegationTokenRecord, RemoveDelegationTokenRecord

KEY = "s3cr3t-key"
HOUR = 3_600_000
NOW = 1_700_000_000_000
SETTINGS = DelegationTokenSettings(secret_key=KEY, max_lifetime_ms=10 * HOUR, expiry_time_ms=2 * HOUR)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def manager(settings: DelegationTokenSettings = SETTINGS) -> tuple[DelegationTokenControlManager, Clock]:
    clock = Clock()
    return DelegationTokenControlManager(settings, clock_ms=clock), clock


def create_request(owner: str | None = None, renewers: tuple[str, ...] = (), max_lifetime_ms: int = -1) -> Any:
    owner_type, owner_name = owner.split(":", 1) if owner else (None, None)
    return CreateDelegationTokenRequest(
        owner_principal_type=owner_type, owner_principal_name=owner_name,
        renewers=tuple(CreatableRenewers(principal_type=r.split(":")[0], principal_name=r.split(":")[1])
                       for r in renewers),
        max_lifetime=timedelta(milliseconds=max_lifetime_ms),
    )  # fmt: skip


def apply(image: MetadataImage, records: Any) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + len(records))


def test_hmac_is_hmac_sha512_of_the_token_id_keyed_with_the_secret_key() -> None:
    # RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
    expected = ("164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fd"
                "caeab1a34d4a6b4b636e070a38bce737")  # fmt: skip
    assert token_hmac("what do ya want for nothing?", "Jefe").hex() == expected


def test_settings_have_kafkas_defaults_refuse_bad_values_and_hide_the_key() -> None:
    defaults = DelegationTokenSettings.from_config({})
    assert not defaults.enabled
    assert (defaults.max_lifetime_ms, defaults.expiry_time_ms, defaults.expiry_check_interval_ms) == (
        604_800_000, 86_400_000, 3_600_000)  # fmt: skip
    assert not DelegationTokenSettings.from_config({"delegation.token.secret.key": ""}).enabled
    configured = DelegationTokenSettings.from_config({"delegation.token.secret.key": KEY})
    assert configured.enabled and KEY not in repr(configured) and "[hidden]" in repr(configured)
    for key, value in [("delegation.token.expiry.time.ms", "0"), ("delegation.token.max.lifetime.ms", "x")]:
        with pytest.raises(ValueError, match=key):
            DelegationTokenSettings.from_config({key: value})


def test_every_call_is_refused_while_tokens_are_disabled() -> None:
    tokens, _ = manager(DelegationTokenSettings())
    assert tokens.create("User:alice", create_request()).response.error == ErrorCode.delegation_token_auth_disabled
    assert tokens.renew(EMPTY_IMAGE, "User:alice", b"x", 1).response.error == ErrorCode.delegation_token_auth_disabled
    assert tokens.expire(EMPTY_IMAGE, "User:alice", b"x", 1).response.error == ErrorCode.delegation_token_auth_disabled


def test_create_writes_one_record_with_kafkas_timestamps_and_returns_the_hmac() -> None:
    tokens, _ = manager()
    result = tokens.create("User:admin", create_request("User:alice", ("User:bob",), max_lifetime_ms=5 * HOUR))
    created = result.response
    [record] = result.records
    assert created.error == ErrorCode.none and (created.owner, created.requester) == ("User:alice", "User:admin")
    assert (created.issue_timestamp_ms, created.max_timestamp_ms, created.expiry_timestamp_ms) == (
        NOW, NOW + 5 * HOUR, NOW + 2 * HOUR)  # fmt: skip
    assert created.hmac == token_hmac(created.token_id, KEY)
    assert record == DelegationTokenRecord(
        owner="User:alice", requester="User:admin", renewers=("User:bob",), issue_timestamp=NOW,
        max_timestamp=NOW + 5 * HOUR, expiration_timestamp=NOW + 2 * HOUR, token_id=created.token_id,
    )  # fmt: skip
    # No owner: the caller; a max lifetime above the server's is cut to it; the expiry never passes the max.
    short = DelegationTokenSettings(secret_key=KEY, max_lifetime_ms=HOUR, expiry_time_ms=2 * HOUR)
    own = manager(short)[0].create("User:alice", create_request(max_lifetime_ms=50 * HOUR)).response
    assert own.owner == "User:alice" and own.max_timestamp_ms == own.expiry_timestamp_ms == NOW + HOUR


def test_create_refuses_a_renewer_that_is_not_a_user() -> None:
    tokens, _ = manager()
    result = tokens.create("User:alice", create_request(renewers=("Group:ops",)))
    assert result.response.error == ErrorCode.invalid_principal_type and not result.records


def created_image(tokens: DelegationTokenControlManager, renewers: tuple[str, ...] = ("User:bob",)) -> Any:
    result = tokens.create("User:admin", create_request("User:alice", renewers))
    return apply(EMPTY_IMAGE, result.records), result.response


def test_renew_by_owner_or_renewer_only_and_never_past_the_max() -> None:
    tokens, clock = manager()
    image, created = created_image(tokens)
    assert tokens.renew(image, "User:alice", b"nope", -1).response.error == ErrorCode.delegation_token_not_found
    # The requester is neither owner nor renewer (Kafka's allowedToRenew).
    mismatch = tokens.renew(image, "User:admin", created.hmac, -1).response
    assert mismatch.error == ErrorCode.delegation_token_owner_mismatch
    clock.now += HOUR
    renewed = tokens.renew(image, "User:bob", created.hmac, HOUR // 2)
    assert renewed.response.error == ErrorCode.none and renewed.response.expiry_timestamp_ms == clock.now + HOUR // 2
    image = apply(image, renewed.records)
    clock.now = NOW + 2 * HOUR  # past the renewed expiry (1.5 h)
    assert tokens.renew(image, "User:alice", created.hmac, -1).response.error == ErrorCode.delegation_token_expired
    # A renewal never passes the max timestamp (10 h here, with a 20 h default renewal).
    long_renewals, clock = manager(DelegationTokenSettings(secret_key=KEY, max_lifetime_ms=10 * HOUR,
                                                           expiry_time_ms=20 * HOUR))  # fmt: skip
    image, created = created_image(long_renewals)
    clock.now = NOW + 9 * HOUR
    assert long_renewals.renew(image, "User:alice", created.hmac, -1).response.expiry_timestamp_ms == NOW + 10 * HOUR


def test_expire_now_removes_the_token_and_a_period_moves_its_expiry() -> None:
    tokens, clock = manager()
    image, created = created_image(tokens)
    later = tokens.expire(image, "User:alice", created.hmac, HOUR // 4)
    assert later.response.expiry_timestamp_ms == NOW + HOUR // 4
    assert later.records[0].expiration_timestamp == NOW + HOUR // 4
    now = tokens.expire(image, "User:bob", created.hmac, -1)
    assert now.response == type(now.response)(ErrorCode.none, NOW)
    assert now.records == [RemoveDelegationTokenRecord(token_id=created.token_id)]
    clock.now = NOW + 3 * HOUR
    assert tokens.expire(image, "User:alice", created.hmac, 1).response.error == ErrorCode.delegation_token_expired
    assert not apply(image, now.records).delegation_tokens


def test_the_sweep_removes_exactly_the_expired_tokens() -> None:
    tokens, clock = manager()
    image, first = created_image(tokens)
    clock.now += HOUR
    image = apply(image, tokens.create("User:alice", create_request()).records)
    clock.now = NOW + 2 * HOUR + 1  # past the first token's expiry only
    swept = tokens.sweep(image)
    assert swept.response == [first.token_id]
    assert swept.records == [RemoveDelegationTokenRecord(token_id=first.token_id)]


def test_describe_shows_owned_requested_renewable_or_authorized_tokens() -> None:
    tokens, _ = manager()
    image, _ = created_image(tokens)  # owner alice, requester admin, renewer bob
    image = apply(image, tokens.create("User:carol", create_request()).records)
    all_tokens = list(image.delegation_tokens.values())

    def owners(principal: str, asked: list[str] | None = None, token_ok: bool = False, owner_ok: str = "") -> list[str]:
        found = describable(all_tokens, principal, asked, lambda _t: token_ok, lambda owner: owner == owner_ok)
        return sorted(t.owner for t in found)

    assert owners("User:alice") == owners("User:admin") == owners("User:bob") == ["User:alice"]
    assert owners("User:dave") == [] and owners("User:dave", token_ok=True) == ["User:alice", "User:carol"]
    assert owners("User:dave", owner_ok="User:carol") == ["User:carol"]  # DESCRIBE_TOKENS on USER carol
    assert owners("User:carol", asked=["User:alice"]) == []  # only the asked owners' tokens
    assert owners("User:dave", asked=["User:bob"], token_ok=True) == ["User:alice"]  # bob may renew it
