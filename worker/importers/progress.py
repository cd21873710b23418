"""Progress on stderr: files, events, rate and ETA.

On a terminal one status line redrawn in place with ``\\r`` (at most five times a second);
elsewhere (a log file, a CI job, a pipe) a plain line every ``LINE_EVERY_S`` seconds and
one at the end, so a long import says how it is going without filling the log with
carriage returns.
"""

from __future__ import annotations

import time
from typing import Final, TextIO

LINE_EVERY_S: Final = 5.0
_REDRAW_S: Final = 0.2


class ProgressLine:
    """Files, events, rate and ETA (from the bytes read against the bytes to read)."""

    def __init__(
        self,
        out: TextIO | None,
        *,
        total_bytes: int,
        total_files: int,
        line_every_s: float = LINE_EVERY_S,
    ) -> None:
        self.out = out
        self.total_bytes = total_bytes
        self.total_files = total_files
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.width = 0
        self.in_place = _is_terminal(out)
        self.every_s = _REDRAW_S if self.in_place else line_every_s

    def show(
        self, *, files: int, events: int, duplicates: int, problems: int, done_bytes: int,
        final: bool = False,
    ) -> None:  # fmt: skip
        if self.out is None:
            return
        now = time.monotonic()
        if not final and now - self.last_draw < self.every_s:
            return
        if not self.in_place and self.last_draw == 0.0 and not final:
            # The first line after one interval, not at once: a short import prints one.
            self.last_draw = self.started
            if now - self.started < self.every_s:
                return
        self.last_draw = now
        elapsed = max(now - self.started, 1e-6)
        share = min(1.0, done_bytes / self.total_bytes) if self.total_bytes else 1.0
        eta = "" if share >= 1.0 or share == 0 else f"  ETA {elapsed * (1 - share) / share:,.0f}s"
        counts = (
            f"{files}/{self.total_files} files  {events} events  {events / elapsed:,.0f}/s"
            f"  {duplicates} dup  {problems} invalid"
        )
        if not self.in_place:
            self.out.write(f"import: {share:4.0%}  {counts}  {elapsed:,.0f}s{eta}\n")
            self.out.flush()
            return
        filled = int(share * 30)
        text = f"[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%}  {counts}{eta}"
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


def _is_terminal(out: TextIO | None) -> bool:
    try:
        return out is not None and out.isatty()
    except (AttributeError, ValueError):
        return False
