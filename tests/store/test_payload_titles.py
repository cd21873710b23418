"""The exact reads carry their sessions' titles, observed with the headers they return, so
the exact tools show them without reading them again (real SQLite provider)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from contracts.envelope import Execution
from tests.store._corpus import Corpus
from worker.signals import ExecutionSignal
from worker.store.protocol import TitleObservation
from worker.store.sqlite import SqliteSessionStore
from worker.tools import register_tools


def sig() -> ExecutionSignal:
    return ExecutionSignal()


async def family(corpus: Corpus) -> None:
    """p (titled) -> k (untitled: its first prompt) -> g; k's event 2 cites p's event 2."""
    corpus.start("p")
    corpus.event("p", "session/title", {"title": "parent title"}, surface="system")
    corpus.start("k", parent="p")
    corpus.event("k", "message/user", {"text": "first prompt of k"}, surface="user")
    corpus.event("k", "message/assistant", {"text": "cites"}, cites=[("p", 2)])
    corpus.start("g", parent="k")
    await corpus.flush()


async def test_payload_reads_carry_the_observations_read_titles_gives(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await family(corpus)
    titles = await store.read_titles(["p", "k", "g"], signal=sig())
    assert titles["p"].title == "parent title"
    assert titles["k"].title is None and titles["k"].prompts == ("first prompt of k",)

    window = await store.read_event("k", 2, before=1, after=1, signal=sig())
    assert window is not None and window.title == titles["k"]
    assert window.title.header is window.header  # one observation, not two
    relations = await store.event_relations("p", 2, signal=sig())
    assert relations is not None and relations.title == titles["p"]
    lineage = await store.lineage("k", signal=sig())
    assert lineage is not None and dict(lineage.titles) == dict(titles)


class CountedTitleReads:
    """``read_titles`` of one store, counted (the store itself answers)."""

    def __init__(self, store: SqliteSessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[list[str]] = []
        real = store.read_titles

        async def read_titles(
            session_ids: Sequence[str], *, signal: ExecutionSignal
        ) -> Mapping[str, TitleObservation]:
            self.calls.append(list(session_ids))
            return await real(session_ids, signal=signal)

        monkeypatch.setattr(store, "read_titles", read_titles)


@pytest.mark.parametrize(
    "tool,arguments,shown",
    [
        ("session_event_read", {"session_id": "k", "seq": 2}, "⟦first prompt of k⟧ (first prompt)"),
        ("session_trace", {"session_id": "k"}, "⟦parent title⟧"),
        ("session_event_trace", {"session_id": "p", "seq": 1}, "⟦parent title⟧"),
    ],
)
async def test_exact_tools_read_no_title_after_their_payload(
    env: tuple[Corpus, SqliteSessionStore],
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    arguments: dict[str, object],
    shown: str,
) -> None:
    corpus, store = env
    await family(corpus)
    counted = CountedTitleReads(store, monkeypatch)
    definition = register_tools(store).get(tool)
    assert definition is not None
    text = await definition.run(arguments, Execution(agent={"session_id": "g"}), sig())
    assert shown in text
    assert counted.calls == [["g", arguments["session_id"]]]  # the caller and target only


async def test_a_cited_session_s_title_is_still_read(
    env: tuple[Corpus, SqliteSessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, store = env
    await family(corpus)
    counted = CountedTitleReads(store, monkeypatch)
    definition = register_tools(store).get("session_event_trace")
    assert definition is not None
    arguments = {"session_id": "k", "seq": 3}
    text = await definition.run(arguments, Execution(agent={"session_id": "g"}), sig())
    assert "⟦parent title⟧" in text  # the cited session's, read after the payload
    assert counted.calls == [["g", "k"], ["p"]]
