"""Kafka's ``ApiError`` (``org.apache.kafka.common.requests.ApiError``): an error code and its message,
the one value every per-resource failure is, from config validation up to the controller's results.

It lives at the bottom of the layers because the config catalogs (``configs/``) report with it as
much as the controller managers do; ``ksteward.controller.result`` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

__all__ = ["NO_ERROR", "ApiError"]


@dataclass(frozen=True, slots=True)
class ApiError:
    """An error code and its message (None: the client shows the code's default text)."""

    code: ErrorCode
    message: str | None = None


NO_ERROR = ApiError(ErrorCode.none)
