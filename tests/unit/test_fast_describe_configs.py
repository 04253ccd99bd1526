"""The direct DescribeConfigs encoder must produce exactly kio's bytes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from ksteward.configs.catalog import ConfigSource, ConfigType
from ksteward.configs.resolve import ConfigEntryView, ConfigSynonym
from ksteward.protocol.build import build
from ksteward.protocol.codec import encode_response, response_class
from ksteward.protocol.fast_describe_configs import encode_describe_configs_response

text = st.text(max_size=10)
sources = st.sampled_from(list(ConfigSource))
synonyms = st.builds(ConfigSynonym, text, st.none() | text, sources)
views = st.builds(
    ConfigEntryView,
    name=text,
    value=st.none() | text,
    source=sources,
    read_only=st.booleans(),
    is_sensitive=st.booleans(),
    config_type=st.sampled_from(list(ConfigType)),
    synonyms=st.lists(synonyms, max_size=3).map(tuple),
    documentation=st.none() | text,
)
errors = st.sampled_from([ErrorCode.none, ErrorCode.topic_authorization_failed, ErrorCode.unknown_topic_or_partition])


@st.composite
def results(draw: Any) -> list[tuple[int, str | None, int, str, list[ConfigEntryView]]]:
    shared = draw(st.lists(views, min_size=1, max_size=3))  # the same view in several resources, as in real replies
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        entries = draw(st.lists(st.sampled_from(shared) | views, max_size=4))
        rows.append((draw(errors), draw(st.none() | text), draw(st.sampled_from([2, 4, 8])), draw(text), entries))
    return rows


def kio_values(version: int, rows: list[Any]) -> dict[str, Any]:
    def entry(v: ConfigEntryView) -> dict[str, Any]:
        out: dict[str, Any] = {"name": v.name, "value": v.value, "read_only": v.read_only,
                               "config_source": int(v.source), "is_sensitive": v.is_sensitive,
                               "synonyms": [{"name": s.name, "value": s.value, "source": int(s.source)}
                                            for s in v.synonyms]}  # fmt: skip
        if version >= 3:
            out |= {"config_type": int(v.config_type), "documentation": v.documentation}
        return out

    return {
        "results": [
            {"error_code": code, "error_message": message, "resource_type": rtype, "resource_name": name,
             "configs": [entry(v) for v in entries]}
            for code, message, rtype, name, entries in rows
        ]
    }  # fmt: skip


@given(version=st.integers(1, 4), correlation_id=st.integers(-(2**31), 2**31 - 1), rows=results())
def test_byte_identical_to_kio(version: int, correlation_id: int, rows: list[Any]) -> None:
    expected = encode_response(
        32, version, correlation_id, build(response_class(32, version), kio_values(version, rows))
    )
    assert encode_describe_configs_response(version, correlation_id, rows) == expected
