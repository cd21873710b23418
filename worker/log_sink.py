"""Where rendered log lines go: one sink for structlog's lines and the standard library's,
written from any thread, in order (``worker.logs`` renders them).

With ``SESSIONQUERY_LOG_FLUSH=batched`` lines at info and below reach the stream within
``FLUSH_AFTER_S`` in one write, a warning or worse at once with every line before it, and
what is left at exit; a process killed outright (SIGKILL, the OOM killer) then loses at
most the last ``FLUSH_AFTER_S`` of info lines, never a warning, and whoever reads the log
as it is written sees info lines up to that late. The default, ``line``, writes and
flushes every line (a write of ~1-5 us: a few percent of an exact read).

Shared by every layer, like ``worker.logs``: it imports nothing from ``worker``.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from typing import Final, TextIO

# A line below warning reaches the stream within this long when the sink is buffered.
FLUSH_AFTER_S: Final = 0.1
# ... or as soon as this many wait.
FLUSH_AFTER_LINES: Final = 256


class LineSink:
    """The one place rendered lines are written, from any thread.

    Unbuffered (the default): each line is written and flushed at once. Buffered: lines
    below warning wait, at most ``FLUSH_AFTER_S`` (a thread of the sink writes them) or
    ``FLUSH_AFTER_LINES``; a line at warning or above is written at once with every line
    waiting before it; at exit, and when the sink is pointed elsewhere, all are written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._out: TextIO = sys.stderr
        self._buffered = False
        self._pending: list[str] = []
        self._due = threading.Event()
        self._flusher: threading.Thread | None = None
        atexit.register(self.flush)

    def point_at(self, out: TextIO, *, buffered: bool) -> None:
        self.flush()
        with self._lock:
            self._out = out
            self._buffered = buffered
            if buffered and self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_when_due, name="log-flush", daemon=True
                )
                self._flusher.start()

    def write(self, line: str, level: int) -> None:
        with self._lock:
            if not self._buffered:
                self._out.write(line + "\n")
                self._out.flush()
                return
            self._pending.append(line)
            if level >= logging.WARNING or len(self._pending) >= FLUSH_AFTER_LINES:
                self._write_pending()
            elif not self._due.is_set():
                self._due.set()

    def flush(self) -> None:
        with self._lock:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            self._pending.append("")
            text = "\n".join(self._pending)
            self._pending.clear()
            try:
                self._out.write(text)
                self._out.flush()
            except (OSError, ValueError):
                pass  # a closed stream at exit: nothing left to tell it

    def _flush_when_due(self) -> None:
        while True:
            self._due.wait()
            time.sleep(FLUSH_AFTER_S)
            with self._lock:
                self._due.clear()
                self._write_pending()


SINK: Final = LineSink()


class SinkLogger:
    """structlog's wrapped logger: every method hands the rendered line to the sink."""

    __slots__ = ("_sink",)

    def __init__(self, sink: LineSink) -> None:
        self._sink = sink

    def _quiet(self, message: str) -> None:
        self._sink.write(message, logging.INFO)

    def _loud(self, message: str) -> None:
        self._sink.write(message, logging.WARNING)

    msg = debug = info = log = _quiet
    warning = warn = error = err = exception = critical = fatal = failure = _loud


class SinkHandler(logging.Handler):
    """The standard library's lines, formatted by structlog's processors, into the sink."""

    def __init__(self, sink: LineSink) -> None:
        super().__init__()
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._sink.write(self.format(record), record.levelno)
        except Exception:
            self.handleError(record)
