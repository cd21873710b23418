"""The writer's child process: answers ``writer_wire`` frames with a ``WriterCore``.

Started as ``python -m worker.store.index.writer_process`` by ``PipeTransport``. It reads a whole
frame before acting on it: when the parent dies mid-frame the read comes up short and the
child exits (``EXIT_TORN``) without touching the index. It dies with its parent
(``PR_SET_PDEATHSIG`` on Linux, and EOF on stdin everywhere) and ignores SIGINT/SIGTERM:
a terminal's Ctrl-C or a service manager's SIGTERM reaches the whole process group, and
the parent's graceful stop still needs the writer to apply what it drains. The parent ends
the child by closing its stdin at a frame boundary.

Between requests the search index catches up with the store and commits: when no
request came for ``IDLE_S`` (and the last commit is ``QUIET_COMMIT_GAP_S`` old), and at
least every commit interval (``search_commit_ms``) however busy the pipe is.
After a failed step (a full disk) it waits out the backoff reading the pipe as usual.
"""

from __future__ import annotations

import argparse
import ctypes
import io
import os
import select
import signal
import sys
from collections.abc import Callable, Sequence
from typing import BinaryIO, Final

import orjson
import structlog

from contracts.redaction import REDACTION_ON, RedactionSpec
from worker.store.files.index_file import IndexFileError
from worker.store.index.writer_core import WriterCore
from worker.store.index.writer_limits import WriterLimits
from worker.store.index.writer_open import IndexFileReplaced
from worker.store.index.writer_pages import SearchPager
from worker.store.index.writer_wire import (
    CHAINED,
    HEADER,
    OP_APPLY,
    OP_BIND,
    OP_GENERATION,
    OP_INFO,
    OP_PURGE,
    OP_SYNC_SEARCH,
    STATUS_ERROR,
    STATUS_FILE_LOST,
    STATUS_NOT_ATTEMPTED,
    STATUS_OK,
    decode_batch,
    encode_generation,
    encode_purged,
    encode_result,
    frame,
)
from worker.store.search.search_schema import search_index_path
from worker.store.writer_protocol import BatchNotAttempted

log = structlog.get_logger(__name__)

# The child's exit status when its parent vanished in the middle of a request frame.
EXIT_TORN: Final = 3
# A quiet pipe for this long means the writer is idle: commit the search index now.
IDLE_S: Final = 0.02
_IDLE_FOLLOW_EVENTS: Final = 5000
_PR_SET_PDEATHSIG: Final = 1


def serve(core: WriterCore, requests: BinaryIO, replies: BinaryIO) -> int:
    """Answer requests until EOF; returns the exit status."""
    while True:
        # The pipe is read between search steps whatever they do: after a failed step the
        # wait is the backoff's, so a full disk under the search index never keeps the
        # loop from answering the parent (or from seeing its stdin close).
        wait = core.search_wait(IDLE_S)
        if wait is not None and (wait <= 0 or not _readable(requests, wait)):
            core.follow_search(_IDLE_FOLLOW_EVENTS, commit=True)
            continue
        header = requests.read(HEADER.size)
        if not header:
            return 0  # EOF at a frame boundary: the parent closed us
        if len(header) < HEADER.size:
            return _torn(len(header), HEADER.size)
        op, size = HEADER.unpack(header)
        body = requests.read(size) if size else b""
        if len(body) < size:
            # Never act on part of a frame: the parent went away while sending it.
            return _torn(len(body), size)
        replies.write(_answer(core, op, body))
        replies.flush()


def _answer(core: WriterCore, op: int, body: bytes) -> bytes:
    """The reply frame to one request; a failure rolled its transaction back."""
    try:
        return frame(STATUS_OK, _handle(core, op, body))
    except BatchNotAttempted as exc:
        return frame(STATUS_NOT_ATTEMPTED, str(exc).encode())
    except Exception as exc:
        log.warning("writer request failed", op=op & ~CHAINED, exc_info=True)
        return frame(STATUS_ERROR, _one_line(exc).encode())


def _apply(core: WriterCore, body: bytes, *, chained: bool) -> bytes:
    return encode_result(core.apply(decode_batch(core.checker, body), chained=chained))


def _purge(core: WriterCore, body: bytes) -> bytes:
    request = orjson.loads(body)
    count = core.purge(tuple(request["session_ids"]), request["older_than_ms"])
    return encode_purged(count, core.generation())


def _bind(core: WriterCore, body: bytes) -> bytes:
    request = orjson.loads(body)
    info = core.bind_stream(
        request["name"], request["created"], int(request["first_seq"]), request["partitions"]
    )
    return orjson.dumps(info)


def _sync_search(core: WriterCore, body: bytes) -> bytes:
    core.catch_up_search()
    return b""


_HANDLERS: Final[dict[int, Callable[[WriterCore, bytes], bytes]]] = {
    OP_APPLY: lambda core, body: _apply(core, body, chained=False),
    OP_APPLY | CHAINED: lambda core, body: _apply(core, body, chained=True),
    OP_GENERATION: lambda core, _body: encode_generation(core.generation()),
    OP_INFO: lambda core, _body: orjson.dumps(core.info()),
    OP_BIND: _bind,
    OP_PURGE: _purge,
    OP_SYNC_SEARCH: _sync_search,
}


def _handle(core: WriterCore, op: int, body: bytes) -> bytes:
    handler = _HANDLERS.get(op)
    if handler is None:
        raise ValueError(f"unknown writer request {op}")
    return handler(core, body)


def _readable(requests: BinaryIO, timeout: float) -> bool:
    """Whether a request is waiting. ``requests`` must not buffer ahead (``ExactReader``)
    or be in memory: select sees only the pipe."""
    try:
        fileno = requests.fileno()
    except (AttributeError, OSError, ValueError):
        return True  # in memory: everything is already there
    ready, _, _ = select.select([fileno], [], [], timeout)
    return bool(ready)


class ExactReader(io.RawIOBase):
    """Unbuffered reads of exactly the bytes asked for (short only at EOF), so nothing
    waits in a Python buffer where ``select`` cannot see it."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw

    def fileno(self) -> int:
        return self._raw.fileno()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            return self._raw.read()
        chunks: list[bytes] = []
        left = size
        while left > 0:
            chunk = self._raw.read(left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def _torn(got: int, wanted: int) -> int:
    log.warning("request frame cut short; nothing of it applied", received=got, expected=wanted)
    return EXIT_TORN


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("PR_SET_PDEATHSIG failed", errno=ctypes.get_errno())
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the line above took effect


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m worker.store.index.writer_process",
        description="The index writer's child process (started by ProcessIndexWriter).",
    )
    parser.add_argument("--db", required=True)
    parser.add_argument("--text-cap-bytes", type=int, required=True)
    parser.add_argument("--max-event-bytes", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--expect-index-id", default=None)
    return parser.parse_args(argv)


# Set by the parent (``PipeTransport``): the redaction the child's checker applies.
REDACTION_ENV: Final = "SESSIONQUERY_WRITER_REDACTION"


def _redaction() -> RedactionSpec:
    raw = os.environ.get(REDACTION_ENV)
    return RedactionSpec.from_json(raw) if raw else REDACTION_ON


def _open(args: argparse.Namespace, replies: BinaryIO) -> WriterCore | None:
    """The core, announced with its generation; None (and a failure frame) if it cannot
    be opened: ``FILE_LOST`` when the file the worker opened is gone or replaced."""
    try:
        core = WriterCore.open(
            args.db,
            text_cap_bytes=args.text_cap_bytes,
            max_event_bytes=args.max_event_bytes,
            expect_index_id=args.expect_index_id,
            redaction=_redaction(),
            limits=WriterLimits.from_env(),
        )
        opened = frame(STATUS_OK, encode_generation(core.generation()))
    except Exception as exc:
        status = STATUS_FILE_LOST if isinstance(exc, IndexFileReplaced) else STATUS_ERROR
        message = str(exc) if isinstance(exc, IndexFileError) else _one_line(exc)
        replies.write(frame(status, message.encode()))
        replies.flush()
        return None
    try:
        replies.write(opened)
        replies.flush()
    except BaseException:
        core.close()
        raise
    return core


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(args.parent_pid)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray output goes to stderr, never into a reply frame
    requests: BinaryIO = ExactReader(sys.stdin.buffer.raw)  # type: ignore[assignment,union-attr]

    from worker.logs import configure_logging

    configure_logging()
    # Before the index opens: a rebuild's merges there map segments too.
    pager = SearchPager(search_index_path(args.db)).start(WriterLimits.from_env().release_ms / 1000)
    try:
        core = _open(args, replies)
    except BrokenPipeError:
        return 0
    if core is None:
        return 1
    try:
        return serve(core, requests, replies)
    except BrokenPipeError:
        return 0  # the parent is gone; whatever committed stays committed
    finally:
        if pager is not None:
            pager.set()
        core.close()
