"""``sessionquery import FILE.jsonl``: publish a file of session events to the stream.

Each line is one event. It is checked locally first (the same per-message checks the index
writer makes); a line that fails is reported with its number and skipped, and the exit code
is then 1. Good lines are published unchanged to ``sessions.events.<session_id>`` with
``Nats-Msg-Id: <session_id>:<seq>``, so the stream drops a re-import within its duplicate
window; beyond the window the index still stores each (session_id, seq) once. Acks are
awaited in bounded windows: many in flight for throughput, never unbounded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, TextIO

from contracts.limits import HEADER_ALLOWANCE_BYTES, MAX_EVENT_BYTES, event_size_limit
from contracts.subjects import Subjects
from worker.runtime.connection import NatsOptions

DEFAULT_WINDOW: Final = 512
EXIT_OK: Final = 0
EXIT_INVALID_LINES: Final = 1
EXIT_FAILED: Final = 2


@dataclass(frozen=True, slots=True)
class ImportReport:
    published: int  # acknowledged by the stream, duplicates included
    duplicates: int  # acknowledged as already held (same Nats-Msg-Id in the window)
    invalid: int  # lines that failed local validation
    blank: int
    # Published, but the worker will dead-letter them (a session's order broken: no
    # session/start before it, a gap, an event after session/end), with the reasons.
    will_dead_letter: int = 0
    dead_letter_reasons: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.runtime.connection import add_nats_arguments
    from worker.runtime.ingest_consumer import add_subject_arguments

    parser.add_argument("file", type=Path, help="JSON Lines file, one session event per line")
    parser.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        help=f"publishes in flight before awaiting their acks (default {DEFAULT_WINDOW})",
    )
    parser.add_argument(
        "--max-event-bytes",
        type=int,
        default=int(os.environ.get("SESSIONQUERY_MAX_EVENT_BYTES", MAX_EVENT_BYTES)),
        help="refuse larger lines, as the index would; never above the server's max_payload"
        f" minus {HEADER_ALLOWANCE_BYTES} (env SESSIONQUERY_MAX_EVENT_BYTES, default"
        f" {MAX_EVENT_BYTES})",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    add_subject_arguments(parser)
    add_nats_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from worker.runtime.connection import options_from_args
    from worker.runtime.ingest_consumer import subjects_from_args
    from worker.runtime.logs import configure_logging

    configure_logging()
    if args.window < 1:
        print("import: --window must be at least 1", file=sys.stderr)
        return EXIT_FAILED
    if not args.file.is_file():
        print(f"import: no such file: {args.file}", file=sys.stderr)
        return EXIT_FAILED
    try:
        report = asyncio.run(
            import_file(
                args.file,
                options=options_from_args(args),
                subjects=subjects_from_args(args),
                window=args.window,
                max_event_bytes=args.max_event_bytes,
                progress=None if args.quiet else sys.stderr,
            )
        )
    except ImportFailed as exc:
        print(f"import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"published {report.published} events ({report.duplicates} already in the stream),"
        f" {report.invalid} invalid lines skipped",
        file=sys.stderr,
    )
    if report.will_dead_letter:
        print(
            f"of those, the worker will dead-letter {report.will_dead_letter}"
            f" (see sessionquery deadletters): {'; '.join(report.dead_letter_reasons[:5])}",
            file=sys.stderr,
        )
    return EXIT_INVALID_LINES if report.invalid or report.will_dead_letter else EXIT_OK


class ImportFailed(Exception):
    """The import could not go on (NATS unreachable, a publish refused); message is for users."""


async def import_file(
    path: Path,
    *,
    options: NatsOptions,
    subjects: Subjects,
    window: int = DEFAULT_WINDOW,
    max_event_bytes: int = MAX_EVENT_BYTES,
    progress: TextIO | None = None,
    errors: TextIO | None = None,
) -> ImportReport:
    import nats.errors
    import nats.js.errors

    from worker.runtime.connection import ConnectFailed, connect_reporting
    from worker.runtime.ingest_consumer import ensure_events_stream
    from worker.store.writer import parse_event

    errors = errors or sys.stderr
    try:
        nc = await connect_reporting(
            options, attempts=min(options.connect_attempts, 3) or 3, name="sessionquery-import"
        )
    except (ValueError, ConnectFailed) as exc:
        raise ImportFailed(str(exc)) from None
    bar = _Progress(progress, total_bytes=(await asyncio.to_thread(path.stat)).st_size)
    published = duplicates = invalid = blank = 0
    try:
        js = nc.jetstream()
        await ensure_events_stream(js, subjects)
        limit = event_size_limit(nc.max_payload, max_event_bytes)
        order = _SessionOrder(js, subjects)
        pending: list[tuple[int, asyncio.Future[Any]]] = []

        async def settle() -> None:
            nonlocal published, duplicates
            for line_no, future in pending:
                try:
                    ack = await future
                except nats.js.errors.APIError as exc:
                    raise ImportFailed(f"line {line_no}: the stream refused it: {exc}") from exc
                published += 1
                duplicates += bool(ack.duplicate)
            pending.clear()

        with path.open("rb") as fh:
            for line_no, line, offset in _lines(fh):
                if not line.strip():
                    blank += 1
                    continue
                outcome = parse_event(line, max_event_bytes=limit)
                if isinstance(outcome, str):
                    invalid += 1
                    bar.clear()
                    print(f"{path}:{line_no}: {outcome}", file=errors)
                    continue
                event = outcome[0]
                await order.check(event.session_id, event.seq, event.type)
                future = await js.publish_async(
                    subjects.events(event.session_id),
                    line,
                    headers={"Nats-Msg-Id": f"{event.session_id}:{event.seq}"},
                )
                pending.append((line_no, future))
                if len(pending) >= window:
                    await settle()
                    bar.show(published, duplicates, invalid, offset)
        await settle()
        bar.show(published, duplicates, invalid, bar.total_bytes, final=True)
    except (nats.errors.Error, TimeoutError) as exc:
        raise ImportFailed(f"NATS failed: {exc!r}") from exc
    finally:
        bar.clear()
        await nc.close()
    return ImportReport(
        published=published,
        duplicates=duplicates,
        invalid=invalid,
        blank=blank,
        will_dead_letter=len(order.refused),
        dead_letter_reasons=tuple(order.refused),
    )


class _SessionOrder:
    """The writer's per-session rules, checked on the file's lines: an event the worker
    will dead-letter is counted as such, not as simply published. A session whose first
    line here is not its start is looked up in the stream (its last event) once."""

    def __init__(self, js: Any, subjects: Subjects) -> None:
        self._js = js
        self._subjects = subjects
        self._last: dict[str, tuple[int, bool]] = {}  # session -> (last seq, ended)
        self.refused: list[str] = []

    async def check(self, session_id: str, seq: int, kind: str) -> None:
        state = self._last.get(session_id)
        if state is None:
            state = await self._from_stream(session_id) if seq != 1 else (0, False)
        last, ended = state
        reason = None
        if seq <= last:
            return  # a duplicate: a no-op for the worker
        if last == 0 and (seq != 1 or kind != "session/start"):
            reason = f"unknown session {session_id}: seq {seq} ({kind}) before its session/start"
        elif ended:
            reason = f"session {session_id} ended at seq {last}: seq {seq} after its session/end"
        elif seq != last + 1:
            reason = f"gap in session {session_id}: expected seq {last + 1}, got {seq}"
        if reason is not None:
            self.refused.append(reason)
            self._last[session_id] = state
            return
        self._last[session_id] = (seq, kind == "session/end")

    async def _from_stream(self, session_id: str) -> tuple[int, bool]:
        import nats.js.errors
        import orjson

        try:
            held = await self._js.get_last_msg(
                self._subjects.events_stream, self._subjects.events(session_id)
            )
            event = orjson.loads(held.data)
            return int(event.get("seq", 0)), event.get("type") == "session/end"
        except (nats.js.errors.NotFoundError, ValueError, TypeError):
            return 0, False


def _lines(fh: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """(line number, line without its line ending, bytes read so far)."""
    offset = 0
    for number, raw in enumerate(fh, start=1):
        offset += len(raw)
        yield number, raw.rstrip(b"\r\n"), offset


class _Progress:
    """One plain-text status line on stderr, redrawn in place with ``\\r``."""

    def __init__(self, out: TextIO | None, *, total_bytes: int) -> None:
        self.out = out
        self.total_bytes = total_bytes
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.width = 0

    def show(
        self, published: int, duplicates: int, invalid: int, done_bytes: int, final: bool = False
    ) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        if not final and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        elapsed = max(now - self.started, 1e-6)
        share = done_bytes / self.total_bytes if self.total_bytes else 1.0
        filled = int(share * 30)
        text = (
            f"[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%}  {published} events"
            f"  {published / elapsed:,.0f}/s  {duplicates} dup  {invalid} invalid"
        )
        self.out.write("\r" + text.ljust(self.width))
        self.out.flush()
        self.width = len(text)
        if final:
            self.out.write("\n")
            self.width = 0

    def clear(self) -> None:
        if self.out is not None and self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()
            self.width = 0
