"""A first prompt or title many sessions of a workspace share is weak evidence (issue 42):
its bonus falls with the number of sessions sharing it, counted in the workspace alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.tools._corpus import Index, event, sqlite_index, start
from tests.tools._harness import as_caller, run_tool
from worker.store.search import ranking

CWD = "/home/dev/shop"
CALLER = "s-shared-caller"
TARGET = "s-shared-target"
# A pasted template; some copies in other case and spacing, with the harness's reminder
# appended.
TEMPLATE = "Please run the checkout tests and report   what fails."
REMINDED = (
    "please run the checkout tests\nand report what fails.\n"
    "<system-reminder>\nThe user opened cart.py.\n</system-reminder>"
)
COPIES = 12


def _session(session_id: str, cwd: str, prompt: str, reply: str) -> list[dict[str, object]]:
    return [
        start(session_id, cwd),
        event(session_id, 2, "message/user", {"text": prompt}, surface="user"),
        event(session_id, 3, "message/assistant", {"text": reply}),
    ]


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    async with sqlite_index(tmp_path, sample=False) as value:
        events = _session(CALLER, CWD, "which session fixed checkout?", "looking")
        for n in range(COPIES):
            prompt = REMINDED if n % 2 else TEMPLATE
            events += _session(f"s-shared-{n:02d}", CWD, prompt, "done, all green")
        events += _session(TARGET, CWD, "the cart is broken", "checkout tests fail")
        # The same template in another workspace counts for nothing here.
        events += _session("s-elsewhere", "/home/dev/other", TEMPLATE, "ok")
        await value.apply(events)
        yield value


def test_the_bonus_falls_with_the_sessions_sharing_the_text() -> None:
    bonuses = [ranking.shared_bonus(n) for n in range(1, 14)]
    assert bonuses[0] == ranking.TITLE_BONUS
    assert bonuses == sorted(bonuses, reverse=True)
    assert bonuses[-1] == 0


async def test_a_template_many_sessions_open_with_does_not_outrank_the_one_that_says_it(
    index: Index,
) -> None:
    text = await run_tool(
        index.store, "session_search", {"query": "checkout tests"}, execution=as_caller(CALLER)
    )
    first = text.split("\n1. ", 1)[1].split()[0]
    assert first == TARGET, text


async def test_a_first_prompt_no_other_session_shares_keeps_its_bonus(index: Index) -> None:
    # Only the target opens with "the cart is broken"; another session says it later.
    await index.apply(_session("s-later", CWD, "hello", "the cart is broken"))
    text = await run_tool(
        index.store, "session_search", {"query": "cart broken"}, execution=as_caller(CALLER)
    )
    first = text.split("\n1. ", 1)[1].split()[0]
    assert first == TARGET, text


CI_TEMPLATE = "jobs:\n  build:\n    steps:\n      - run: make deploy pipeline"


async def test_a_shared_paragraph_is_discounted_whatever_the_ask_after_it(tmp_path: Path) -> None:
    async with sqlite_index(tmp_path, sample=False) as index:
        events = _session(CALLER, CWD, "which session?", "looking")
        for n in range(COPIES):
            ask = f"and then look at module {n}"
            events += _session(f"s-ci-{n:02d}", CWD, f"{CI_TEMPLATE}\n\n{ask}", "done")
        events += _session(TARGET, CWD, "it is red again", "the deploy pipeline")
        await index.apply(events)
        text = await run_tool(
            index.store, "session_search", {"query": "deploy pipeline"}, execution=as_caller(CALLER)
        )
    first = text.split("\n1. ", 1)[1].split()[0]
    assert first == TARGET, text
