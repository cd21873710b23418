"""Every provider call crosses this boundary: model-safe errors, best-effort diagnostics.

Order matters: the execution signal is checked first, so a cancellation keeps its exact
reason (and a deadline becomes TIMEOUT) whatever the provider raised while being stopped.
Otherwise the cause chain goes to the internal log and the model sees only what the one
error table (``worker.tools.errors``) gives that exception. Diagnostic formatting and
classification are guarded separately: an unprintable or cyclic cause, or a logger that
raises, can neither escape nor change the classification.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import structlog
from structlog.typing import FilteringBoundLogger

from worker.signals import ExecutionSignal
from worker.tools.definitions import ToolError
from worker.tools.errors import GENERATION_CHANGED_MESSAGE, abort_error, model_error_of, tool_failed

__all__ = [
    "GENERATION_CHANGED_MESSAGE",
    "UNPRINTABLE",
    "ServiceBoundary",
    "describe_chain",
    "raise_if_aborted",
]

T = TypeVar("T")

UNPRINTABLE: Final = "<unprintable>"
_MAX_CHAIN: Final = 16
_MAX_TEXT: Final = 2000


def raise_if_aborted(signal: ExecutionSignal) -> None:
    error = signal.error
    if error is not None:
        raise abort_error(error)


class ServiceBoundary:
    """Calls the provider and translates whatever it raises into a ``ToolError``."""

    def __init__(self, logger: FilteringBoundLogger | None = None) -> None:
        self._logger: FilteringBoundLogger = logger or structlog.get_logger("worker.tools")

    async def call(
        self, operation: str, signal: ExecutionSignal, work: Callable[[], Awaitable[T]]
    ) -> T:
        """Run one provider call under ``signal``; the call is awaited to its end either way.

        A signal that fired while the call ran wins even when the provider ignored it and
        returned normally: the reply must carry the exact abort reason.
        """
        raise_if_aborted(signal)
        try:
            result = await work()
        except Exception as exc:
            raise self.translate(operation, signal, exc) from None
        raise_if_aborted(signal)
        return result

    def check(self, operation: str, work: Callable[[], T]) -> T:
        """A synchronous provider call that starts no work (a query check, the limits):
        no signal to consult, the same translation."""
        try:
            return work()
        except Exception as exc:
            raise self.translate(operation, None, exc) from None

    def translate(
        self, operation: str, signal: ExecutionSignal | None, exc: BaseException
    ) -> ToolError:
        try:
            fired = signal.error if signal is not None else None
        except Exception:
            fired = None
        if fired is not None:
            return abort_error(fired)
        row = model_error_of(exc)
        if row.logged:
            self.log_failure(operation, exc)
        try:
            return row.error(exc)
        except Exception:
            # A class whose own text cannot be read: a failure the log must see.
            if not row.logged:
                self.log_failure(operation, exc)
            return tool_failed()

    def log_failure(self, operation: str, exc: BaseException) -> None:
        """Best effort: never raises, whatever ``exc`` or the logger does."""
        try:
            chain = describe_chain(exc)
        except Exception:
            chain = [UNPRINTABLE]
        # A broken logger must not mask the classification.
        with contextlib.suppress(Exception):
            self._logger.warning("session_query.service_failure", operation=operation, chain=chain)


def describe_chain(exc: BaseException) -> list[str]:
    """``Type: text`` for the exception and its causes, cycle-safe and bounded."""
    lines: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and len(lines) < _MAX_CHAIN:
        if id(current) in seen:
            lines.append("<cycle>")
            break
        seen.add(id(current))
        lines.append(f"{_type_name(current)}: {_safe_text(current)}")
        current = _next_cause(current)
    return lines


def _next_cause(exc: BaseException) -> BaseException | None:
    try:
        cause = exc.__cause__
        if cause is None and not exc.__suppress_context__:
            cause = exc.__context__
    except Exception:
        return None
    return cause if isinstance(cause, BaseException) else None


def _type_name(exc: BaseException) -> str:
    try:
        name = type(exc).__qualname__
        return name if isinstance(name, str) else UNPRINTABLE
    except Exception:
        return UNPRINTABLE


def _safe_text(value: object) -> str:
    for render in (str, repr):
        try:
            text = render(value)
        except Exception:
            continue
        if isinstance(text, str):
            return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"
    return UNPRINTABLE
