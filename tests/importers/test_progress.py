"""``import``'s progress: a line redrawn in place on a terminal, plain lines with a rate and
an ETA every few seconds elsewhere (issue 41)."""

from __future__ import annotations

import io

import pytest

from worker.importers.progress import ProgressLine


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _show(bar: ProgressLine, done: int, *, final: bool = False) -> None:
    bar.show(files=0, events=done * 10, duplicates=0, problems=0, done_bytes=done, final=final)


def test_not_a_terminal_prints_a_line_every_few_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("worker.importers.progress.time.monotonic", lambda: clock[0])
    out = io.StringIO()
    bar = ProgressLine(out, total_bytes=1000, total_files=1, line_every_s=5.0)
    for second in range(1, 21):  # 20 s of work, a call each second
        clock[0] = 100.0 + second
        _show(bar, second * 40)
    clock[0] = 125.0
    _show(bar, 1000, final=True)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 5  # at 5, 10, 15 and 20 s, and the final one
    assert lines[0] == "import:  20%  0/1 files  2000 events  400/s  0 dup  0 invalid  5s  ETA 20s"
    assert lines[-1].startswith("import: 100%") and "ETA" not in lines[-1]


def test_a_terminal_gets_one_line_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr("worker.importers.progress.time.monotonic", lambda: clock[0])
    out = _Terminal()
    bar = ProgressLine(out, total_bytes=100, total_files=1)
    clock[0] = 1.0
    _show(bar, 50)
    clock[0] = 2.0
    _show(bar, 100, final=True)
    text = out.getvalue()
    assert text.count("\r[") == 2 and text.endswith("\n")
    assert "ETA 1s" in text and " 500/s" in text
