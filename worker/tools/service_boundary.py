"""Every provider call crosses this boundary: model-safe errors, best-effort diagnostics.

Order matters: the execution signal is checked first, so a cancellation keeps its exact
reason (and a deadline becomes TIMEOUT) whatever the provider raised while being stopped.
Otherwise the cause chain goes to the internal log and the model sees only a known code.
Diagnostic formatting and classification are guarded separately: an unprintable or cyclic
cause, or a logger that raises, can neither escape nor change the classification.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import structlog
from structlog.typing import FilteringBoundLogger

from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled, ExecutionSignal
from worker.store.errors import GenerationChanged, InvalidQuery
from worker.tools.definitions import ToolError

T = TypeVar("T")

UNPRINTABLE: Final = "<unprintable>"
GENERATION_CHANGED_MESSAGE: Final = (
    "The session corpus changed during the search; retry the whole search."
)
TIMEOUT_MESSAGE: Final = (
    "The session query ran out of time. Narrow the query or filters and try again."
)
_MAX_CHAIN: Final = 16
_MAX_TEXT: Final = 2000


def tool_failed() -> ToolError:
    return ToolError(ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


def abort_error(error: ExecutionAborted) -> ToolError:
    """A fired signal as the model sees it: CANCELLED keeps the exact reason."""
    if isinstance(error, DeadlineExceeded):
        return ToolError(ErrorCode.TIMEOUT, TIMEOUT_MESSAGE)
    return ToolError(ErrorCode.CANCELLED, error.reason)


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

    def translate(self, operation: str, signal: ExecutionSignal, exc: BaseException) -> ToolError:
        try:
            fired = signal.error
        except Exception:
            fired = None
        if fired is not None:
            return abort_error(fired)
        self.log_failure(operation, exc)
        try:
            return classify(exc)
        except Exception:
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


def classify(exc: BaseException) -> ToolError:
    if isinstance(exc, GenerationChanged):
        return ToolError(ErrorCode.GENERATION_CHANGED, GENERATION_CHANGED_MESSAGE)
    if isinstance(exc, InvalidQuery):
        # InvalidQuery's text is model-safe by design; anything odd about it is not.
        message = exc.args[0] if len(exc.args) == 1 else None
        if isinstance(message, str) and message and len(message) <= _MAX_TEXT:
            return ToolError(ErrorCode.INVALID_ARGUMENTS, message)
        return tool_failed()
    if isinstance(exc, DeadlineExceeded):
        # A provider-side deadline whose signal did not fire: still only a timeout.
        return ToolError(ErrorCode.TIMEOUT, TIMEOUT_MESSAGE)
    if isinstance(exc, ExecutionCancelled):
        # Not ours (our signal did not fire), so its reason is internal text.
        return tool_failed()
    return tool_failed()


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
