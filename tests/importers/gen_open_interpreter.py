"""Generated Open Interpreter conversations: ``conversations/<words>__<time>.json`` under its
config folder, each the list of LMC messages ``OpenInterpreter.chat`` writes (``json.dump``
on one line; chunks of one role, type and format joined): prompts, answers, code blocks with
the computer's console output after them, an image output, a code block the user declined,
a prompt with an image; the text is our own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

FIX: Final = "Fix_the_checkout__November_30_2026_09-15-00"
PLOT: Final = "Plot_the_sales__November_30_2026_10-00-00"


def lmc(role: str, kind: str, content: str, fmt: str | None = None) -> dict[str, Any]:
    message = {"role": role, "type": kind, "content": content}
    return message | ({"format": fmt} if fmt else {})


def fix() -> list[dict[str, Any]]:
    return [
        lmc("user", "message", "Fix the checkout total: discount codes are ignored."),
        lmc("assistant", "message", "Let me run the tests."),
        lmc("assistant", "code", "pytest -q", "shell"),
        lmc("computer", "console", "1 failed, 3 passed\n", "output"),
        lmc("assistant", "code", "print(open('pricing.py').read())", "python"),
        lmc("computer", "console", "def apply_codes(cart):\n", "output"),
        lmc("computer", "console", "    ...\n", "output"),
        lmc("assistant", "message", "total() never calls apply_codes(); I'll patch it."),
        lmc("assistant", "code", "rm -rf build", "shell"),
        lmc("user", "message", "Don't delete the build folder."),
        lmc("assistant", "message", "Understood, I left it."),
    ]


def plot() -> list[dict[str, Any]]:
    return [
        lmc("user", "message", "Plot the sales by month."),
        lmc("user", "image", "/home/dev/sales.png", "path"),
        lmc("assistant", "code", "import matplotlib.pyplot as plt\nplt.plot([1, 2])", "python"),
        lmc("computer", "image", "iVBORw0KGgo=", "base64.png"),
        lmc("computer", "console", "", "output"),
        lmc("assistant", "message", "Here is the plot."),
    ]


def write(home: Path, *, upto: int | None = None) -> Path:
    """The conversations under ``<home>/.config/open-interpreter/conversations``; ``upto``:
    only that many messages of the first (``watch``: a later call writes the rest)."""
    folder = home / ".config" / "open-interpreter" / "conversations"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{FIX}.json").write_text(json.dumps(fix()[:upto]))
    (folder / f"{PLOT}.json").write_text(json.dumps(plot()))
    return folder
