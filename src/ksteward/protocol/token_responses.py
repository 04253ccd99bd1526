"""The responses of CreateDelegationToken, RenewDelegationToken and ExpireDelegationToken with their timestamps
as plain int64 milliseconds.

kio types these fields as datetimes and refuses to read a negative one, but Kafka writes -1
(``DelegationTokenManager.ErrorTimestamp``) in every refused create, renew and expire. The wire format is the
same int64 either way; with these classes ksteward reads and writes -1 like any other value, so a broker can
pass a controller's refusal on (``broker.forwarding``) and tools can read it.

No ``from __future__ import annotations`` here: kio reads the field annotations as real types.
"""

import dataclasses
from typing import Any

from kio.schema.create_delegation_token import v1 as create_v1
from kio.schema.create_delegation_token import v2 as create_v2
from kio.schema.create_delegation_token import v3 as create_v3
from kio.schema.expire_delegation_token import v1 as expire_v1
from kio.schema.expire_delegation_token import v2 as expire_v2
from kio.schema.renew_delegation_token import v1 as renew_v1
from kio.schema.renew_delegation_token import v2 as renew_v2
from kio.static.primitive import i64

_CLASS_ATTRIBUTES = ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__")


def _with_int64_timestamps(cls: Any) -> Any:
    """A copy of kio's response class ``cls`` whose ``datetime_i64`` fields are ``int64``."""
    specs: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("kafka_type") == "datetime_i64":
            specs.append((f.name, i64, dataclasses.field(metadata={"kafka_type": "int64"})))
        else:
            # The HMAC is the token's password: out of every repr, so no log line or traceback shows it.
            specs.append((f.name, f.type, dataclasses.field(metadata=f.metadata, repr=f.name != "hmac")))
    namespace = {name: getattr(cls, name) for name in _CLASS_ATTRIBUTES}
    namespace["__module__"] = __name__
    namespace["__doc__"] = f"{cls.__name__} v{cls.__version__}, timestamps as int64 milliseconds."
    return dataclasses.make_dataclass(cls.__name__, specs, namespace=namespace, frozen=True, slots=True, kw_only=True)


RESPONSES: dict[tuple[int, int], Any] = {
    (int(m.CreateDelegationTokenResponse.__api_key__), int(m.CreateDelegationTokenResponse.__version__)):
        _with_int64_timestamps(m.CreateDelegationTokenResponse)
    for m in (create_v1, create_v2, create_v3)
} | {
    (int(m.RenewDelegationTokenResponse.__api_key__), int(m.RenewDelegationTokenResponse.__version__)):
        _with_int64_timestamps(m.RenewDelegationTokenResponse)
    for m in (renew_v1, renew_v2)
} | {
    (int(m.ExpireDelegationTokenResponse.__api_key__), int(m.ExpireDelegationTokenResponse.__version__)):
        _with_int64_timestamps(m.ExpireDelegationTokenResponse)
    for m in (expire_v1, expire_v2)
}  # fmt: skip
