"""One plain-text status line on stderr, redrawn in place with ``\\r``."""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    """Files, events, rate and ETA (from the bytes read against the bytes to read)."""

    def __init__(self, out: TextIO | None, *, total_bytes: int, total_files: int) -> None:
        self.out = out
        self.total_bytes = total_bytes
        self.total_files = total_files
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.width = 0

    def show(
        self, *, files: int, events: int, duplicates: int, problems: int, done_bytes: int,
        final: bool = False,
    ) -> None:  # fmt: skip
        if self.out is None:
            return
        now = time.monotonic()
        if not final and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        elapsed = max(now - self.started, 1e-6)
        share = min(1.0, done_bytes / self.total_bytes) if self.total_bytes else 1.0
        filled = int(share * 30)
        eta = "" if share >= 1.0 or share == 0 else f"  ETA {elapsed * (1 - share) / share:,.0f}s"
        text = (
            f"[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%}  {files}/{self.total_files}"
            f" files  {events} events  {events / elapsed:,.0f}/s  {duplicates} dup"
            f"  {problems} invalid{eta}"
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
