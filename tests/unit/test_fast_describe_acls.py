"""The direct DescribeAcls encoder must produce exactly kio's bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import encode_response, response_class
from ksteward.protocol.fast_describe_acls import encode_describe_acls_response

text = st.text(max_size=12)
entries = st.lists(st.tuples(text, text, st.integers(0, 14), st.integers(0, 3)), max_size=4)
groups = st.lists(st.tuples(st.integers(0, 7), text, st.integers(0, 4), entries), max_size=5)


@given(
    version=st.integers(1, 4),  # v4: ksteward's, with the metadata offset (protocol.acl_transactions)
    offset=st.integers(-1, 2**63 - 1),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    error=st.sampled_from([ErrorCode.none, ErrorCode.cluster_authorization_failed, ErrorCode.security_disabled]),
    message=st.none() | text,
    resources=groups,
)
def test_byte_identical_to_kio(
    version: int, offset: int, correlation_id: int, error: ErrorCode, message: str | None, resources: list
) -> None:  # type: ignore[type-arg]
    values = {
        "error_code": error,
        "error_message": message,
        "resources": [
            {
                "resource_type": rt,
                "resource_name": name,
                "pattern_type": pt,
                "acls": [
                    {"principal": p, "host": h, "operation": o, "permission_type": perm} for p, h, o, perm in acls
                ],
            }
            for rt, name, pt, acls in resources
        ],
    }
    if version == 4:
        values["metadata_offset"] = offset
    response = build(response_class(ApiKey.DESCRIBE_ACLS, version), values)
    expected = encode_response(ApiKey.DESCRIBE_ACLS, version, correlation_id, response)
    actual = encode_describe_acls_response(version, correlation_id, int(error), message, resources, offset)
    assert actual == expected
