"""A generated workspace of long tool results in several scripts, each read in several parts,
whose searched phrase lies past the first part: Cyrillic, CJK, emoji (with joiners and skin
tones) and decomposed letters (a base letter and its combining mark).

Every offset the worker sends counts code points; a byte count or a UTF-16 count would
drift by thousands over the text before the match in each of these, so a page that picked
its part or placed its highlight in another unit would miss the match.

The Cyrillic output also holds one of the query's words alone, early in the first part:
the part a hit opens is the one holding the match the hit's excerpt shows (both words),
not the first place any word of the query appears.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, Final

SCRIPTS_WS: Final = "/work/history-scripts"
TOOL_SEQ: Final = 3  # the long tool result of every session
# The size of the event page's parts (``worker.ui.routes.TEXT_PART_CHARS``).
PART: Final = 16_384


@dataclass(frozen=True)
class Script:
    session_id: str
    query: str
    # The words of the query as the text holds them (what the highlight must cover).
    phrase: str
    line: str  # one filler line, ``{n}`` its number
    early: str  # a line put early in the first part (one of the query's words alone, or "")
    at: int  # about where the phrase's line stands (code points)
    size: int  # about the output's length


SCRIPTS: Final = (
    Script(
        "s-script-cyrillic",
        "Векторный индекс",
        "Векторный индекс",
        "Журнал сборки: шаг {n} завершён успешно, ошибок нет, всё в порядке.",
        "Шаг 7: индекс файлов обновлён, записей 1200.",
        21_000,
        40_000,
    ),
    Script(
        "s-script-cjk",
        "向量索引",
        "向量索引",
        "构建日志第{n}行：编译步骤已经完成，没有发现任何错误。",
        "",
        24_000,
        38_000,
    ),
    Script(
        "s-script-emoji",
        "quokkafailover",
        "quokkafailover",
        "🚀 step {n} deployed ✅ 👍🏽 by 👩‍💻 for 👨‍👩‍👧 🇳🇿 ok",
        "",
        19_500,
        36_000,
    ),
    Script(
        "s-script-combining",
        "zarzuelatimeout",
        "zarzuelatimeout",
        unicodedata.normalize("NFD", "Étape {n} : café, crème brûlée, ñandú, Ångström, Dvořák."),
        "",
        33_500,
        52_000,
    ),
)


def script_output(script: Script) -> str:
    """The tool's output: filler lines, the early line, the phrase on a line of its own
    past ``at``, and more filler up to ``size``."""
    lines: list[str] = []
    length, placed = 0, False
    while length < script.size:
        number = len(lines)
        if number == 12 and script.early:
            line = script.early
        elif not placed and length >= script.at:
            line = f"{script.phrase}: ERROR on step {number} ({script.line.format(n=number)})"
            placed = True
        else:
            line = script.line.format(n=number)
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)


def script_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for number, script in enumerate(SCRIPTS):
        sid = script.session_id
        payloads: list[tuple[str, str, dict[str, Any]]] = [
            ("session/start", "system", {"cwd": SCRIPTS_WS, "parent_session_id": None}),
            ("tool/call", "assistant", {"tool": "Bash", "input": {"command": "make build"}}),
            ("tool/result", "tool", {"tool": "Bash", "output": script_output(script)}),
            ("message/assistant", "assistant", {"text": "The build log is above."}),
        ]
        events += [
            {
                "session_id": sid,
                "seq": seq,
                "event_id": f"e-{sid}-{seq}",
                "type": kind,
                "surface": surface,
                "time": f"2026-11-1{number}T10:{seq:02d}:00.000Z",
                "payload": {**payload, "source_type": "generated"},
            }
            for seq, (kind, surface, payload) in enumerate(payloads, start=1)
        ]
    return events
