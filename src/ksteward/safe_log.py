"""Logging an exception without its message.

An exception's message is text written from whatever the code saw: ``KeyError(value)`` or
``ValueError(f"bad {value}")`` puts a request's bytes, a config value or a password into it. ksteward's
rule is that no request payload and no secret value reaches a log line at any level, so where an
exception can carry either (a handler failing on a client's request, a policy written by someone
else), it is logged by its type and stack alone: the stack frames hold file, line, function and
source line, which is code, never runtime values. Kafka logs such exceptions whole
(``ConfigurationControlManager``'s "Unknown server error validating Alter Configs"); this is stricter.

Importable from every layer: it depends on nothing of ksteward's.
"""

from __future__ import annotations

import logging
import traceback


def type_name(exc: BaseException) -> str:
    """``KeyError``, or ``package.module.Error`` for a class outside the builtins."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def traceback_without_messages(exc: BaseException) -> str:
    """The stack of ``exc`` and of the exceptions it chains (newest first), as ``traceback`` prints them
    but with each exception named by its type only."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = "".join(traceback.format_list(traceback.extract_tb(current.__traceback__)))
        parts.append(f"{type_name(current)} (message withheld), most recent call last:\n{frames}")
        if current.__cause__ is not None:
            current, link = current.__cause__, "caused by"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, "raised while handling"
        else:
            current = None
        if current is not None:
            parts.append(f"{link}:\n")
    return "".join(parts).rstrip("\n")


def log_failure(logger: logging.Logger, what: str, exc: BaseException, *, stack_level: int = logging.DEBUG) -> None:
    """One ERROR line naming ``what`` failed and the exception's type, then the stack without messages
    at ``stack_level`` (DEBUG by default; ERROR for a failure that is ksteward's own bug)."""
    logger.error("%s: %s (message withheld: it may quote the request or a config value)", what, type_name(exc))
    if logger.isEnabledFor(stack_level):
        logger.log(stack_level, "%s; traceback without exception messages:\n%s", what, traceback_without_messages(exc))
