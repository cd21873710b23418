"""The title fallback, over the real SQLite provider: a session without a title shows its
first prompt the user wrote (harness text skipped), cut and marked; a title wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.harness import first_prompt
from tests.tools._corpus import event, sqlite_index, start
from tests.tools._harness import as_caller, run_tool
from worker.tools.formatting import DERIVED_MARK, DERIVED_TITLE_CHARS

CWD = "/home/dev/cafe"
LONG_PROMPT = "why does the grinder " + "keep stalling " * 20
# What a harness wrote into the user's turn before the prompt, as message/user (events
# published before their publisher typed them): none of it is the session's title.
BOILERPLATE = (
    "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
    "<local-command-stdout></local-command-stdout>",
    "This session is being continued from a previous conversation that ran out of context.",
)


def _user(session: str, seq: int, text: str) -> dict[str, object]:
    return event(session, seq, "message/user", {"text": text}, surface="user", minute=seq)


async def test_untitled_sessions_show_their_first_real_prompt_marked(tmp_path: Path) -> None:
    async with sqlite_index(tmp_path, sample=False) as index:
        await index.apply([
            start("s-caller", CWD),
            start("s-plain", CWD), *[_user("s-plain", 2 + i, t) for i, t in enumerate(BOILERPLATE)],
            _user("s-plain", 5, "descale the espresso machine"),
            start("s-long", CWD), _user("s-long", 2, LONG_PROMPT),
            start("s-titled", CWD), _user("s-titled", 2, "descale it again"),
            event("s-titled", 3, "session/title", {"title": "Descaling"}, surface="system"),
            start("s-context", CWD),
            event("s-context", 2, "message/context", {"text": "descale <environment_context>"},
                  surface="system"),
        ])  # fmt: skip
        text = await run_tool(
            index.store, "session_search", {"query": "descale"}, execution=as_caller("s-caller")
        )
    lines = {line.split(" ")[1]: line for line in text.splitlines() if ". s-" in line}
    assert f"⟦descale the espresso machine⟧ {DERIVED_MARK} ·" in lines["s-plain"]
    assert "⟦Descaling⟧ ·" in lines["s-titled"] and DERIVED_MARK not in lines["s-titled"]
    # Only message/user is a prompt: a session of context alone stays untitled.
    assert "(untitled)" in lines["s-context"]
    async with sqlite_index(tmp_path / "again", sample=False) as index:
        await index.apply([start("s-caller", CWD), start("s-long", CWD),
                           _user("s-long", 2, LONG_PROMPT)])  # fmt: skip
        trace = await run_tool(
            index.store, "session_trace", {"session_id": "s-long"},
            execution=as_caller("s-caller"),
        )  # fmt: skip
    shown = trace.split("⟦")[1].split("⟧")[0]
    assert shown.endswith("…") and len(shown) <= DERIVED_TITLE_CHARS + 1
    assert LONG_PROMPT.startswith(shown[:-1])


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        ((*BOILERPLATE, "the real one"), "the real one"),
        (("<environment_context>\n<cwd>/x</cwd>\n</environment_context>", "fix it"), "fix it"),
        (("# Context from my IDE setup:\n\n## Open tabs:\n- a.py\n\n## My request for Codex:\n"
          "rename brew_ratio\n",), "rename brew_ratio"),
        (("# Context from my IDE setup:\n\n## Open tabs:\n- a.py\n", "then this"), "then this"),
        (("<task-notification>done</task-notification>", "   "), None),
    ],
)  # fmt: skip
def test_first_prompt_skips_harness_text(texts: tuple[str, ...], expected: str | None) -> None:
    assert first_prompt(texts) == expected
