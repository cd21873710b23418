"""The one table from service errors to what a model sees.

``ERROR_TABLE`` maps each exception class a tool call can meet (the store's tree, the
execution signal's tree) to a model-facing code and a fixed model-readable message. It is
applied to the store's calls by ``ServiceBoundary.translate``; the runtime reaches it only
through ``model_error`` (exported by ``worker.tools``), in its executor, for whatever else
escapes a run. A class not in the table is looked up by
its nearest ancestor that is, and anything else is the fixed ``TOOL_FAILED``. No internal
error text ever becomes a message: only a class marked ``own_text`` (its text is built
for the model by design) may show its own, and only as a plain bounded string.

A ``ToolError`` is already a model-facing answer and passes through as it is; a fired
execution signal is answered by ``abort_error`` before the table is consulted, so a
cancellation keeps its exact reason whatever the provider raised while being stopped.
``abort_error`` is also the runtime's only translation of its own fired signal (before a
run starts, while it runs, or after it returned): one message per condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled
from worker.store.errors import (
    BatchNotAttempted,
    CorruptIndex,
    EmbedderUnavailable,
    GenerationChanged,
    IndexFileError,
    IndexFileLost,
    IndexFileReplaced,
    IndexLocked,
    IndexWriteStopped,
    InvalidCursor,
    InvalidQuery,
    SchemaVersionError,
    SnapshotRefused,
    StoreError,
    WriterProcessError,
)
from worker.tools.definitions import ToolError

GENERATION_CHANGED_MESSAGE: Final = (
    "The session corpus changed during the search; retry the whole search."
)
TIMEOUT_MESSAGE: Final = (
    "The session query ran out of time. Narrow the query or filters and try again."
)
QUEUE_TIMEOUT_MESSAGE: Final = (
    "The request's deadline passed before it could run; retry with a later deadline."
)
NOTHING_SEARCHABLE_MESSAGE: Final = "The query has nothing searchable."
# The longest own text a model-safe class may show; anything longer gets the fixed message.
MAX_OWN_TEXT: Final = 2000


@dataclass(frozen=True, slots=True)
class ModelError:
    """What a model sees of one exception class."""

    code: ErrorCode
    message: str
    # The exception's own text replaces ``message``: only for classes whose text is written
    # for the model by design (it must be one plain string of at most MAX_OWN_TEXT chars).
    own_text: bool = False
    # Logged with its cause chain as a service failure; False for the model's own mistakes.
    logged: bool = True

    def error(self, exc: BaseException | None = None) -> ToolError:
        if self.own_text and exc is not None:
            text = exc.args[0] if len(exc.args) == 1 else None
            if isinstance(text, str) and text and len(text) <= MAX_OWN_TEXT:
                return ToolError(self.code, text)
        return ToolError(self.code, self.message)


TOOL_FAILED: Final = ModelError(ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)

ERROR_TABLE: Final[Mapping[type[BaseException], ModelError]] = {
    # --- the store: only a changed corpus and an unsearchable query are the model's news ---
    StoreError: TOOL_FAILED,
    GenerationChanged: ModelError(ErrorCode.GENERATION_CHANGED, GENERATION_CHANGED_MESSAGE),
    InvalidQuery: ModelError(
        ErrorCode.INVALID_ARGUMENTS, NOTHING_SEARCHABLE_MESSAGE, own_text=True, logged=False
    ),
    InvalidCursor: TOOL_FAILED,  # cursors are internal: a decoding failure is a bug
    IndexFileError: TOOL_FAILED,
    CorruptIndex: TOOL_FAILED,
    IndexLocked: TOOL_FAILED,
    IndexFileReplaced: TOOL_FAILED,
    SchemaVersionError: TOOL_FAILED,
    SnapshotRefused: TOOL_FAILED,  # a join's concern; never a tool call's
    BatchNotAttempted: TOOL_FAILED,
    IndexWriteStopped: TOOL_FAILED,
    WriterProcessError: TOOL_FAILED,
    IndexFileLost: TOOL_FAILED,
    # A search falls back to lexical when the model does not answer: one that escapes is a bug.
    EmbedderUnavailable: TOOL_FAILED,
    # --- an execution signal that is not ours (ours is answered first, by abort_error) ---
    ExecutionAborted: TOOL_FAILED,
    ExecutionCancelled: TOOL_FAILED,  # its reason is someone else's internal text
    DeadlineExceeded: ModelError(ErrorCode.TIMEOUT, TIMEOUT_MESSAGE),  # still only a timeout
}


def model_error_of(exc: BaseException) -> ModelError:
    """The table's row for ``exc``: its class's, else its nearest listed ancestor's."""
    for cls in type(exc).__mro__:
        row = ERROR_TABLE.get(cls)
        if row is not None:
            return row
    return TOOL_FAILED


def model_error(exc: BaseException) -> ToolError:
    """``exc`` as the model sees it: a ``ToolError`` as it is, anything else by the table.

    Never raises: a class whose own text cannot even be read is the fixed ``TOOL_FAILED``.
    """
    if isinstance(exc, ToolError):
        return exc
    try:
        return model_error_of(exc).error(exc)
    except Exception:
        return tool_failed()


def tool_failed() -> ToolError:
    return TOOL_FAILED.error()


# Our own fired deadline, by whether the run had started: the one table of abort replies.
DEADLINE_TABLE: Final[Mapping[bool, ModelError]] = {
    False: ModelError(ErrorCode.TIMEOUT, QUEUE_TIMEOUT_MESSAGE),
    True: ModelError(ErrorCode.TIMEOUT, TIMEOUT_MESSAGE),
}


def abort_error(error: ExecutionAborted, *, started: bool = True) -> ToolError:
    """Our own fired signal as the model sees it: CANCELLED keeps the exact reason; a
    deadline says whether it passed before the run could start (``started`` False)."""
    if isinstance(error, DeadlineExceeded):
        return DEADLINE_TABLE[started].error()
    return ToolError(ErrorCode.CANCELLED, error.reason)
