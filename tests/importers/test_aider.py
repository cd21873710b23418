"""Aider's chat history as its 0.86.2 writer leaves it when the model reasons: made-up
content in the shapes ``InputOutput.user_input``, ``ai_output`` and
``append_chat_history`` write (``aider/io.py``), the streamed reply wrapped as
``Coder.show_send_output_stream`` builds it (``aider/coders/base_coder.py``: the
reasoning between ``<thinking-content-…>`` tags, then the answer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from tests.importers._corpus import bodies, by_session
from worker.importers.pipeline import convert_file

TAG: Final = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"  # aider.reasoning_tags


def _history(tmp_path: Path, replies: list[str]) -> Path:
    parts = ["\n# aider chat started at 2026-11-30 09:00:00\n\n",
             "> aider --model lm_studio/local-model  \n", "> Aider v0.86.2  \n"]  # fmt: skip
    for n, reply in enumerate(replies):
        parts.append(f"\n#### question {n}  \n")
        parts.append("\n" + reply.strip() + "\n\n")
        parts.append("> Tokens: 1.2k sent, 300 received.  \n")
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def _said(path: Path) -> list[dict[str, Any]]:
    """The assistant's events' words: thinking or text."""
    outs, tally = convert_file("aider", path)
    assert not tally.problems
    (events,) = by_session(bodies(outs)).values()
    return [{k: v for k, v in e["payload"].items() if k in ("text", "thinking")}
            for e in events if e["type"] == "message/assistant"]  # fmt: skip


def test_a_reply_s_reasoning_is_thinking_and_its_answer_the_text(tmp_path: Path) -> None:
    reasoning = "The user asks for a retry.\n\n1. Read the client.\n2. Wrap the call."
    reply = f"<{TAG}>\n\n{reasoning}\n\n</{TAG}>\n\nAdd a retry around `send()`."
    assert _said(_history(tmp_path, [reply])) == [
        {"thinking": reasoning},
        {"text": "Add a retry around `send()`."},
    ]


def test_a_reply_cut_off_while_reasoning_is_thinking_alone(tmp_path: Path) -> None:
    # Ctrl-C while the model reasoned: Aider logs the partial reply, no closing tag.
    assert _said(_history(tmp_path, [f"<{TAG}>\n\nFirst, look at"])) == [
        {"thinking": "First, look at"}
    ]


def test_a_reply_without_reasoning_is_the_text_as_written(tmp_path: Path) -> None:
    reply = f"Use `<{TAG}>` tags? No: the answer mentions them only."
    assert _said(_history(tmp_path, [reply])) == [{"text": reply}]


def _with_confirmations(tmp_path: Path) -> Path:
    """What 0.86.2 logs when the user answers a group's first question with (A)ll: the
    answer as a ``>`` line (``confirm_ask``), then each next question of the group answered
    by Aider itself as a ``####`` line (``user_input(f"{question}{res}")``), its subject
    before it (``tool_output``)."""
    ask = "Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: "
    parts = [
        "\n# aider chat started at 2026-11-30 09:00:00\n\n",
        "\n#### fix the rounding in ledger.py and totals.py  \n",
        "\nI need to see both files.\n\n",
        ">  \n", "> ledger.py  \n", f"> {ask}a  \n",
        ">  \n", "> totals.py  \n", f"\n#### {ask}all  \n",
        "> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: n  \n",
        "\n#### now the tests  \n",
        "\nDone.\n\n",
    ]  # fmt: skip
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def test_a_confirmation_aider_answered_itself_is_context_not_the_user(tmp_path: Path) -> None:
    outs, tally = convert_file("aider", _with_confirmations(tmp_path))
    assert not tally.problems
    (events,) = by_session(bodies(outs)).values()
    users = [e["payload"]["text"] for e in events if e["type"] == "message/user"]
    assert users == ["fix the rounding in ledger.py and totals.py", "now the tests"]
    (auto,) = [e for e in events if e["type"] == "message/context"]
    assert auto["surface"] == "system"
    assert auto["payload"]["text"].startswith("Add file to the chat? (Y)es/(N)o/(A)ll")
    assert auto["payload"]["text"].endswith("[Yes]: all")
    # The user's own one-letter answers stay Aider's output, as they were.
    outputs = "\n".join(e["payload"]["text"] for e in events if e["type"] == "command/output")
    assert "[Yes]: a" in outputs and "[Yes]: n" in outputs


def test_a_prompt_that_merely_mentions_the_options_is_the_user_s(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2026-11-30 09:00:00\n\n"
        "\n#### why does it ask (Y)es/(N)o [Yes]: every time?  \n",
        encoding="utf-8",
    )
    outs, _ = convert_file("aider", path)
    (events,) = by_session(bodies(outs)).values()
    assert [e["type"] for e in events] == ["session/start", "message/user"]
