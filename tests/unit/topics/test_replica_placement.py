"""The striped replica placer: generated assignments pass the manual-assignment validator and spread out."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_support import broker

from ksteward.controller.replica_placement import (
    AssignmentError,
    PlacementError,
    UsableBroker,
    default_dir,
    is_active,
    place_replicas,
    usable_brokers,
    validate_manual_assignment,
)


@st.composite
def clusters(draw: st.DrawFn, max_racks: int = 4):  # type: ignore[no-untyped-def]
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True))
    racks = [None, *(f"rack-{i}" for i in range(draw(st.integers(0, max_racks))))]
    registrations = {
        i: broker(
            i,
            rack=draw(st.sampled_from(racks)),
            fenced=draw(st.booleans()),
            shutting_down=draw(st.integers(0, 5)) == 0,
        )
        for i in ids
    }
    return registrations


@settings(max_examples=300, deadline=None)
@given(clusters(), st.integers(1, 40), st.integers(1, 12), st.integers(0, 2**32))
def test_placements_pass_the_validator_and_respect_fencing(cluster, partitions, rf, seed) -> None:  # type: ignore[no-untyped-def]
    usable = usable_brokers(cluster)
    unfenced = [b for b in usable if not b.fenced]
    if not unfenced or rf > len(usable):
        with pytest.raises(PlacementError):
            place_replicas(usable, partitions, rf, random.Random(seed))
        return
    placed = place_replicas(usable, partitions, rf, random.Random(seed))
    assert len(placed) == partitions
    usable_ids = {b.id for b in usable}
    for replicas in placed:
        validate_manual_assignment(cluster, replicas, rf)  # raises on any defect
        assert set(replicas) <= usable_ids  # never a broker in controlled shutdown
        assert is_active(cluster, replicas[0])  # the leader is an unfenced broker


@settings(max_examples=200, deadline=None)
@given(clusters(), st.integers(1, 40), st.integers(0, 2**32))
def test_replicas_use_distinct_racks_while_possible(cluster, partitions, seed) -> None:  # type: ignore[no-untyped-def]
    usable = usable_brokers(cluster)
    if not any(not b.fenced for b in usable):
        return
    rack_of = {b.id: b.rack for b in usable}
    rf = min(len({b.rack for b in usable}), len(usable))
    for replicas in place_replicas(usable, partitions, rf, random.Random(seed)):
        assert len({rack_of[b] for b in replicas}) == rf


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(1, 60), st.integers(1, 12), st.integers(0, 2**32))
def test_leaders_and_replicas_spread_evenly_in_one_rack(brokers, partitions, rf, seed) -> None:  # type: ignore[no-untyped-def]
    rf = min(rf, brokers)
    usable = [UsableBroker(i, None, False) for i in range(brokers)]
    placed = place_replicas(usable, partitions, rf, random.Random(seed))
    leaders = Counter(replicas[0] for replicas in placed)
    counts = [leaders.get(b.id, 0) for b in usable]
    assert max(counts) - min(counts) <= 1  # every round of `brokers` partitions gives each broker one leader
    full_rounds = (partitions // brokers) * brokers
    replicas_per_broker = Counter(b for replicas in placed[:full_rounds] for b in replicas)
    assert all(replicas_per_broker[b.id] == rf * (partitions // brokers) for b in usable)


def test_later_rounds_do_not_repeat_the_first_rounds_replica_sets() -> None:
    usable = [UsableBroker(i, None, False) for i in range(5)]
    for seed in range(20):
        placed = place_replicas(usable, 50, 3, random.Random(seed))
        # Without the reshuffle after each round of 5 partitions, placed[p + 5] would equal placed[p].
        assert any(placed[p] != placed[p + 5] for p in range(45))


def test_placer_errors() -> None:
    rng = random.Random(1)
    with pytest.raises(
        PlacementError, match=r"^Invalid replication factor 0: the replication factor must be positive\.$"
    ):
        place_replicas([UsableBroker(1, None, False)], 1, 0, rng)
    with pytest.raises(PlacementError, match=r"^All brokers are currently fenced\.$"):
        place_replicas([UsableBroker(1, None, True)], 1, 5, rng)  # fencing is reported first
    with pytest.raises(PlacementError) as info:
        place_replicas([UsableBroker(1, None, False), UsableBroker(2, None, True)], 1, 3, rng)
    assert str(info.value) == (
        "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."
    )


def test_same_seed_same_placement() -> None:
    usable = [UsableBroker(i, f"r{i % 3}", i % 4 == 0) for i in range(10)]
    first = place_replicas(usable, 30, 3, random.Random(42))
    assert first == place_replicas(usable, 30, 3, random.Random(42))


def test_manual_validator_checks_in_kafkas_order() -> None:
    cluster = {1: broker(1), 2: broker(2, fenced=True)}
    validate_manual_assignment(cluster, [2, 1], 2)  # fenced brokers are registered brokers
    with pytest.raises(AssignmentError, match="includes broker 3, but no such broker"):
        validate_manual_assignment(cluster, [3, 3], None)  # sorted order: 3 is unknown before it repeats
    with pytest.raises(AssignmentError, match="includes the broker 1 more than once"):
        validate_manual_assignment(cluster, [1, 2, 1], None)


def test_default_dir_and_activity() -> None:
    one_dir, two_dirs = (uuid.UUID(int=50),), (uuid.UUID(int=50), uuid.UUID(int=51))
    cluster = {
        1: broker(1),
        2: broker(2, log_dirs=one_dir),
        3: broker(3, log_dirs=two_dirs, fenced=True),
        4: broker(4, shutting_down=True),
    }
    assert default_dir(cluster, 1) is None  # DirectoryId.MIGRATING, the zero uuid
    assert default_dir(cluster, 2) == one_dir[0]
    assert default_dir(cluster, 3) == uuid.UUID(int=1)  # DirectoryId.UNASSIGNED
    assert default_dir(cluster, 9) == uuid.UUID(int=1)
    assert [is_active(cluster, b) for b in (1, 2, 3, 4, 9)] == [True, True, False, False, False]
    assert sorted(b.id for b in usable_brokers(cluster)) == [1, 2, 3]
