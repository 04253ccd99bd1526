"""Topic name rules, as Kafka's ``Topic.validate`` words them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksteward.controller.topic_names import (
    collision_index,
    has_collision_chars,
    invalid_reason,
    is_internal,
    unify_collision_chars,
    validation_error,
)

LEGAL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "the empty string is not allowed"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("x" * 250, f"the length of '{'x' * 250}' is longer than the max allowed length 249"),
        ("a/b", "'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
        ("café", "'café' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
        ("a b", "'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
        # Java counts UTF-16 units: 125 emoji are 250 units, so the length rule fires first.
        ("😀" * 125, f"the length of '{'😀' * 125}' is longer than the max allowed length 249"),
    ],
)
def test_invalid_names(name: str, reason: str) -> None:
    assert invalid_reason(name) == reason
    assert validation_error(name) == f"Topic name is invalid: {reason}"


@pytest.mark.parametrize("name", ["a", "...", "a.b_c-D9", "x" * 249, "__consumer_offsets", "-", "_"])
def test_valid_names(name: str) -> None:
    assert invalid_reason(name) is None and validation_error(name) is None


@given(st.text(alphabet=LEGAL, min_size=1, max_size=249).filter(lambda n: n not in (".", "..")))
def test_every_legal_name_is_accepted(name: str) -> None:
    assert invalid_reason(name) is None


@given(st.text(min_size=1, max_size=30))
def test_agrees_with_a_brute_force_reference(name: str) -> None:
    legal = name not in (".", "..") and all(c in LEGAL for c in name)
    assert (invalid_reason(name) is None) == legal


def test_internal_topics() -> None:
    assert is_internal("__consumer_offsets") and is_internal("__transaction_state")
    assert is_internal("__share_group_state")
    assert not is_internal("__cluster_metadata") and not is_internal("orders")


def test_collision_rules() -> None:
    assert has_collision_chars("a.b") and has_collision_chars("a_b") and not has_collision_chars("a-b")
    assert unify_collision_chars("a.b_c.d") == "a_b_c_d"
    assert collision_index(["a.b", "a_b", "plain", "x.y"]) == {"a_b": ["a.b", "a_b"], "x_y": ["x.y"]}
