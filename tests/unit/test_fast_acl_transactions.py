"""The direct CreateAcls v4 body encoder must produce exactly kio's bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ksteward.authorizer import AclBinding
from ksteward.cli.acl_apply import creation_values, exact_filter_values
from ksteward.protocol.build import build
from ksteward.protocol.codec import encode_request, encode_request_header, request_class
from ksteward.protocol.fast_acl_transactions import encode_acl_transaction_body

text = st.text(max_size=200)
bindings = st.builds(
    AclBinding,
    st.sampled_from(["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"]),
    text,
    st.sampled_from(["LITERAL", "PREFIXED"]),
    text,
    text,
    st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE", "ALTER", "CREATE_TOKENS"]),
    st.sampled_from(["ALLOW", "DENY"]),
)


@given(
    creations=st.lists(bindings, max_size=5),
    deletions=st.lists(bindings, max_size=5),
    unchanged_since=st.integers(-1, 2**63 - 1),
    validate_only=st.booleans(),
    min_offset=st.none() | st.integers(-1, 2**40),
)
def test_byte_identical_to_kio(
    creations: list[AclBinding],
    deletions: list[AclBinding],
    unchanged_since: int,
    validate_only: bool,
    min_offset: int | None,
) -> None:
    values = {"creations": [creation_values(a) for a in creations],
              "deletions": [exact_filter_values(a) for a in deletions],
              "acls_unchanged_since": unchanged_since, "validate_only": validate_only}  # fmt: skip
    expected = encode_request(30, 4, 9, "ksteward", build(request_class(30, 4), values), min_offset=min_offset)
    header = encode_request_header(30, 4, 9, "ksteward", min_offset=min_offset)
    assert header + encode_acl_transaction_body(creations, deletions, unchanged_since, validate_only) == expected
