"""A broker advertises each forwardable API at the intersection of its range and the active controller's
(Kafka's ApiVersionsResponse.intersectForwardableApis); other APIs keep the broker's own range."""

from __future__ import annotations

from ksteward.broker.forwarding import FORWARDABLE_API_KEYS, ForwardingManager, forwardable_api_versions
from ksteward.protocol.apis import ApiKey
from ksteward.server.api_table import broker_api_table, controller_api_table

OWN = {
    ApiKey.METADATA: (0, 13),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_CONFIGS: (0, 2),
}


def test_until_the_controller_is_known_the_broker_advertises_its_own_ranges() -> None:
    assert forwardable_api_versions(OWN, None) == OWN


def test_forwardable_apis_are_intersected_and_others_kept() -> None:
    controller = {
        ApiKey.CREATE_TOPICS: (0, 5),  # overlaps: 2-5
        ApiKey.CREATE_ACLS: (2, 9),  # overlaps: 2-3
        ApiKey.INCREMENTAL_ALTER_CONFIGS: (2, 3),  # disjoint: dropped
        # ALTER_CONFIGS missing on the controller: dropped
        ApiKey.ENVELOPE: (0, 0),
    }
    assert forwardable_api_versions(OWN, controller) == {
        ApiKey.METADATA: (0, 13),  # not forwardable: the broker's own, even though the controller lacks it
        ApiKey.CREATE_TOPICS: (2, 5),
        ApiKey.CREATE_ACLS: (2, 3),
    }


def test_the_manager_uses_what_the_channel_learned() -> None:
    manager = ForwardingManager()
    assert manager.advertised_api_versions(OWN) == OWN
    manager.controller_api_versions = {key: (0, 0) for key in OWN}
    advertised = manager.advertised_api_versions(OWN)
    assert advertised[ApiKey.METADATA] == (0, 13)
    assert ApiKey.CREATE_TOPICS not in advertised  # 2-7 and 0-0 do not meet
    assert advertised[ApiKey.ALTER_CONFIGS] == (0, 0)


def test_todays_broker_and_controller_tables_agree_on_every_forwardable_api() -> None:
    own = dict(broker_api_table().served)
    controller = dict(controller_api_table().served)
    advertised = forwardable_api_versions(own, controller)
    assert advertised == own
    assert ApiKey.ENVELOPE in controller and ApiKey.ENVELOPE not in own
    assert ApiKey.ENVELOPE not in FORWARDABLE_API_KEYS  # envelopes cannot nest
