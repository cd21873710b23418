"""The model-boundary sanitizer: redaction, classification, best-effort diagnostics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from worker.signals import DeadlineExceeded, ExecutionCancelled, ExecutionSignal
from worker.store import GenerationChanged, InvalidQuery
from worker.tools import ToolError
from worker.tools.service_boundary import (
    GENERATION_CHANGED_MESSAGE,
    UNPRINTABLE,
    ServiceBoundary,
    describe_chain,
)

SECRET = "sqlite3.OperationalError: database /var/lib/secret/index.db is locked"


class RecordingLogger:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.events.append((event, kw))


class RaisingLogger:
    def warning(self, event: str, **kw: Any) -> None:
        raise RuntimeError("the log sink is gone")


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class NonStrStr(Exception):
    def __str__(self) -> Any:
        return 42

    def __repr__(self) -> Any:
        return None


async def fail_with(boundary: ServiceBoundary, exc: BaseException) -> ToolError:
    signal = ExecutionSignal()

    async def work() -> None:
        raise exc

    with pytest.raises(ToolError) as caught:
        await boundary.call("op", signal, work)
    return caught.value


async def test_diagnostic_redaction_ordinary_unknown_error() -> None:
    logger = RecordingLogger()
    error = await fail_with(ServiceBoundary(logger), RuntimeError(SECRET))  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)
    assert "secret" not in str(error)
    # ...but the internal log has it.
    assert any(SECRET in line for line in logger.events[0][1]["chain"])


@pytest.mark.parametrize("exc", [BadStr(), NonStrStr()], ids=["raising", "non-str"])
async def test_diagnostic_redaction_adversarial_unknown_values(exc: Exception) -> None:
    logger = RecordingLogger()
    error = await fail_with(ServiceBoundary(logger), exc)  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)
    assert logger.events[0][1]["chain"] == [f"{type(exc).__qualname__}: {UNPRINTABLE}"]


async def test_diagnostic_redaction_unprintable_cause_does_not_mask_classification() -> None:
    outer = GenerationChanged("epoch 3 ended")
    outer.__cause__ = BadStr()
    logger = RecordingLogger()
    error = await fail_with(ServiceBoundary(logger), outer)  # type: ignore[arg-type]
    assert (error.code, error.message) == (
        ErrorCode.GENERATION_CHANGED,
        GENERATION_CHANGED_MESSAGE,
    )
    assert logger.events[0][1]["chain"][1] == f"BadStr: {UNPRINTABLE}"


async def test_cyclic_cause_logging_terminates() -> None:
    first = RuntimeError("first")
    second = ValueError("second")
    first.__cause__ = second
    second.__cause__ = first
    logger = RecordingLogger()
    error = await fail_with(ServiceBoundary(logger), first)  # type: ignore[arg-type]
    assert error.code is ErrorCode.TOOL_FAILED
    assert logger.events[0][1]["chain"] == ["RuntimeError: first", "ValueError: second", "<cycle>"]


def test_cyclic_cause_logging_through_context() -> None:
    first = RuntimeError("a")
    second = RuntimeError("b")
    first.__context__ = second
    second.__context__ = first
    assert describe_chain(first) == ["RuntimeError: a", "RuntimeError: b", "<cycle>"]


async def test_logger_failure_containment() -> None:
    boundary = ServiceBoundary(RaisingLogger())  # type: ignore[arg-type]
    assert (await fail_with(boundary, RuntimeError(SECRET))).code is ErrorCode.TOOL_FAILED
    error = await fail_with(boundary, GenerationChanged())
    assert error.code is ErrorCode.GENERATION_CHANGED
    error = await fail_with(boundary, InvalidQuery("The query has no searchable words."))
    assert (error.code, error.message) == (
        ErrorCode.INVALID_ARGUMENTS,
        "The query has no searchable words.",
    )


async def test_classification_invalid_query_keeps_its_model_safe_message() -> None:
    error = await fail_with(ServiceBoundary(RecordingLogger()), InvalidQuery("nothing to find"))  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.INVALID_ARGUMENTS, "nothing to find")


async def test_classification_failure_returns_generic_code() -> None:
    class Weird(InvalidQuery):
        @property
        def args(self) -> Any:  # type: ignore[override]
            raise RuntimeError("classification explodes")

    error = await fail_with(ServiceBoundary(RecordingLogger()), Weird())  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


async def test_abort_reason_preservation_signal_checked_first() -> None:
    signal = ExecutionSignal()
    boundary = ServiceBoundary(RecordingLogger())  # type: ignore[arg-type]

    async def work() -> None:
        signal.cancel("user pressed stop: r-17")
        # The provider raises something unrelated while being stopped.
        raise RuntimeError(SECRET)

    with pytest.raises(ToolError) as caught:
        await boundary.call("op", signal, work)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.CANCELLED,
        "user pressed stop: r-17",
    )


async def test_abort_reason_preservation_when_backend_ignores_cancellation() -> None:
    signal = ExecutionSignal()
    boundary = ServiceBoundary(RecordingLogger())  # type: ignore[arg-type]

    async def work() -> str:
        signal.cancel("shutdown")
        return "a result that must not be used"

    with pytest.raises(ToolError) as caught:
        await boundary.call("op", signal, work)
    assert (caught.value.code, caught.value.message) == (ErrorCode.CANCELLED, "shutdown")


async def test_abort_before_call_starts_no_work() -> None:
    signal = ExecutionSignal()
    signal.cancel("early")
    started = []

    async def work() -> None:
        started.append(True)

    with pytest.raises(ToolError) as caught:
        await ServiceBoundary().call("op", signal, work)
    assert caught.value.code is ErrorCode.CANCELLED and not started


async def test_deadline_becomes_timeout() -> None:
    signal = ExecutionSignal.after(0)
    await asyncio.sleep(0)

    async def work() -> None:
        raise signal.error or DeadlineExceeded()

    with pytest.raises(ToolError) as caught:
        await ServiceBoundary().call("op", signal, work)
    assert caught.value.code is ErrorCode.TIMEOUT


async def test_foreign_cancellation_without_our_signal_is_generic() -> None:
    # An ExecutionCancelled whose signal is not ours carries internal text.
    error = await fail_with(ServiceBoundary(RecordingLogger()), ExecutionCancelled(SECRET))  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("boom")

    def __repr__(self) -> str:
        raise RuntimeError("boom")


async def test_diagnostic_redaction_unprintable_argument_inside_an_ordinary_error() -> None:
    logger = RecordingLogger()
    outer = RuntimeError("outer /var/lib/secret")
    outer.__context__ = KeyError(Unprintable())
    error = await fail_with(ServiceBoundary(logger), outer)  # type: ignore[arg-type]
    assert (error.code, error.message) == (ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)
    assert logger.events[0][1]["chain"] == [
        "RuntimeError: outer /var/lib/secret",
        f"KeyError: {UNPRINTABLE}",
    ]
