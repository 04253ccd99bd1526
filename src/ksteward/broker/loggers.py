"""BROKER_LOGGER: this node's own Python loggers, described and changed at run time (KIP-412;
docs/topics-and-configs.md, "Config alter path").

Kafka exposes its log4j loggers; ksteward exposes the ``root`` logger and every ``ksteward.*`` logger,
with Kafka's level names. Python's levels map onto them one to one (``TRACE`` is registered as level 5,
``WARN`` is Python's WARNING, ``FATAL`` its CRITICAL). A SET gives the logger its own level; a DELETE
clears it, so the logger inherits its parent's again. Changes are not persisted, as in Kafka: a restart
starts from the configured levels.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from kio.schema.errors import ErrorCode

from ksteward.configs.alter import AlterConfigOp, AlterConfigOpType
from ksteward.protocol.api_error import ApiError

__all__ = ["LEVELS", "ROOT_LOGGER", "alter_logger_levels", "logger_levels"]

ROOT_LOGGER: Final = "root"
PREFIX: Final = "ksteward"
TRACE: Final = 5
LEVELS: Final = {"TRACE": TRACE, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}
_BY_NUMBER: Final = sorted((number, name) for name, number in LEVELS.items())
_VALID: Final = ",".join(sorted(LEVELS))

logging.addLevelName(TRACE, "TRACE")


def _kafka_level(number: int) -> str:
    """The Kafka name of a Python level: the highest Kafka level at or below it (TRACE below 5)."""
    name = _BY_NUMBER[0][1]
    for value, candidate in _BY_NUMBER:
        if value <= number:
            name = candidate
    return name


def _loggers() -> dict[str, logging.Logger]:
    """``root`` plus every ksteward logger that exists now (placeholders are not loggers yet)."""
    found = {ROOT_LOGGER: logging.getLogger()}
    found[PREFIX] = logging.getLogger(PREFIX)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.startswith(PREFIX + "."):
            found[name] = logger
    return found


def logger_levels() -> dict[str, str]:
    """Every logger and its effective level, by name, in name order (``root`` first)."""
    loggers = _loggers()
    names = [ROOT_LOGGER, *sorted(n for n in loggers if n != ROOT_LOGGER)]
    return {name: _kafka_level(loggers[name].getEffectiveLevel()) for name in names}


def _check(op: AlterConfigOp, loggers: dict[str, logging.Logger]) -> ApiError | None:
    kind = op.op
    if kind in (AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT):
        name = AlterConfigOpType(kind).name
        return ApiError(ErrorCode.invalid_request, f"{name} operation is not allowed for the BROKER_LOGGER resource")
    if kind not in (AlterConfigOpType.SET, AlterConfigOpType.DELETE):
        message = f"Unknown operation type {kind} is not allowed for the BROKER_LOGGER resource"
        return ApiError(ErrorCode.invalid_request, message)
    if op.name not in loggers:
        return ApiError(ErrorCode.invalid_config, f"Logger {op.name} does not exist!")
    if kind == AlterConfigOpType.DELETE:
        if op.name == ROOT_LOGGER:
            return ApiError(ErrorCode.invalid_request, "Removing the log level of the root logger is not allowed")
        return None
    if op.value not in LEVELS:
        message = (
            f"Cannot set the log level of {op.name} to {op.value} as it is not a supported log level. "
            f"Valid log levels are {_VALID}"
        )
        return ApiError(ErrorCode.invalid_config, message)
    return None


def alter_logger_levels(ops: Sequence[AlterConfigOp], *, validate_only: bool) -> ApiError | None:
    """Check every operation, then (unless ``validate_only``) apply them all; the first failure wins and
    nothing is changed."""
    loggers = _loggers()
    for op in ops:
        error = _check(op, loggers)
        if error is not None:
            return error
    if not validate_only:
        for op in ops:
            logger = loggers[op.name]
            if op.op == AlterConfigOpType.DELETE:
                logger.setLevel(logging.NOTSET)
            else:
                assert op.value is not None
                logger.setLevel(LEVELS[op.value])
    return None
