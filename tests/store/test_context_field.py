"""The context field of the search index (issue 42): each message and tool result is
indexed with the words of the event it answers (an assistant message: the last user
message before it; a user message: the last message before it; a tool result: the call it
cites), decided from the session's own order whatever the batches; and the ranking counts
a word held only there at a fraction of a word held by the event itself."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import orjson
import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.store._corpus import MAIN, Corpus, corpus_and_store, search, search_in
from worker.store.files.schema import workspace_token
from worker.store.search import analysis, ranking
from worker.store.search.search_reader import SearchIndexReader
from worker.store.search.search_schema import (
    CONTEXT_TERMS,
    SCHEMA,
    context_terms,
    workspace_key,
)
from worker.store.sqlite import SqliteSessionStore

SID: Final = "pets"


def _conversation(corpus: Corpus) -> dict[str, int]:
    """A session of every kind of answer; returns each event's seq by name."""
    corpus.start(SID)
    at = {"ask": corpus.say(SID, "do you have any pets?", type_="message/user", surface="user")}
    at["plan"] = corpus.say(SID, "let me look in the shelter ledger")
    call = {"tool": "bash", "arguments": {"command": "grep hamster ledger.txt"}}
    at["call_a"] = corpus.event(SID, "tool/call", call, surface="tool")
    call = {"tool": "bash", "arguments": {"command": "cat kennel.txt"}}
    at["call_b"] = corpus.event(SID, "tool/call", call, surface="tool")
    at["result_b"] = corpus.event(
        SID, "tool/result", {"output": "empty"}, surface="tool", cites=[(SID, at["call_b"])]
    )
    at["result_a"] = corpus.event(
        SID, "tool/result", {"output": "none found"}, surface="tool", cites=[(SID, at["call_a"])]
    )
    at["answer"] = corpus.say(SID, "a guinea pig named Oscar")
    at["reply"] = corpus.say(SID, "wonderful marmot", type_="message/user", surface="user")
    corpus.end(SID)
    return at


VOCABULARY: Final = (
    "pet",
    "shelter",
    "ledger",
    "hamster",
    "kennel",
    "guinea",
    "pig",
    "oscar",
    "grep",
    "cat",
    "look",
)


def _contexts(path: Path) -> dict[int, frozenset[str]]:
    """Each event's context words (of ``VOCABULARY``), read from the index by seq."""
    reader = SearchIndexReader.open(path)
    assert reader is not None
    searcher = reader.view().searcher
    key = workspace_key(workspace_token(MAIN))
    held: dict[int, set[str]] = {}
    for word in VOCABULARY:
        query = tantivy.Query.term_query(SCHEMA, "cx", key + word)
        hits = searcher.search(query, 100).hits
        seqs = searcher.fast_field_values("seq", [address for _, address in hits])
        for seq in seqs:
            held.setdefault(int(seq or 0), set()).add(word)
    return {seq: frozenset(words) for seq, words in held.items()}


async def _built(root: Path, batches: Iterable[int]) -> tuple[dict[str, int], Path]:
    """The session applied in batches of the given sizes (cycled), each flushed alone."""
    root.mkdir(parents=True)  # noqa: ASYNC240 (a test's temporary directory)
    async with corpus_and_store(root) as (corpus, _):
        at = _conversation(corpus)
        pending, corpus.pending = corpus.pending, []
        sizes = list(batches)
        n = 0
        while pending:
            size = sizes[n % len(sizes)]
            corpus.pending, pending = pending[:size], pending[size:]
            await corpus.flush()
            n += 1
        return at, corpus.path


async def test_each_answer_holds_the_words_of_what_it_answers(tmp_path: Path) -> None:
    at, path = await _built(tmp_path / "whole", [100])
    held = _contexts(path)
    assert held[at["result_a"]] == {"grep", "hamster", "ledger"}  # its call, not the last
    assert held[at["result_b"]] == {"cat", "kennel"}
    assert held[at["answer"]] == {"pet"}  # the user's question, past the tools and the plan
    assert held[at["plan"]] == {"pet"}
    assert held[at["reply"]] == {"guinea", "pig", "oscar"}  # a user reply: the last message
    assert at["ask"] not in held  # nothing before the first message
    assert at["call_a"] not in held and at["call_b"] not in held


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
async def test_a_session_in_several_batches_gets_the_context_it_gets_whole(
    sizes: list[int],
) -> None:
    with tempfile.TemporaryDirectory(prefix="sq-cx-") as tmp:
        _, whole = await _built(Path(tmp) / "whole", [100])
        _, split = await _built(Path(tmp) / "split", sizes)
        assert _contexts(split) == _contexts(whole)


def test_the_context_keeps_the_first_content_words_once() -> None:
    text = "the " + " ".join(f"word{n} word{n}" for n in range(200))
    raw = orjson.dumps({"payload": {"text": text}})
    tokens = context_terms("k:", "message/user", raw).split()
    assert len(tokens) == CONTEXT_TERMS == len(set(tokens))
    assert tokens[0] == "k:" + analysis.words("word0")[0].derived[0]
    assert "k:the" not in tokens


def test_a_word_of_the_context_counts_less_than_the_same_word_held() -> None:
    for cover in range(1, ranking.COVER_UNITS + 1):
        assert ranking.context_units(cover) < cover


async def test_a_turn_holding_the_words_outranks_an_answer_whose_question_holds_them(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    # The answer after the question: its words are in what it answers.
    corpus.start("asked")
    corpus.say("asked", "do you have any pets?", type_="message/user", surface="user")
    corpus.say("asked", "a guinea pig named Oscar")
    # Another session's turn holding one word of the question itself.
    corpus.start("other")
    corpus.say("other", "Oscar came by yesterday")
    # A session holding both words in one turn.
    corpus.start("held")
    corpus.say("held", "our pets: a guinea pig named Oscar")
    # A long tool output after a call that holds the words: below the call.
    corpus.start("tool")
    call = {"tool": "bash", "arguments": {"command": "grep pets Oscar"}}
    corpus.event("tool", "tool/call", call, surface="tool")
    output = {"output": "Oscar " + "lines of output " * 40}
    corpus.event("tool", "tool/result", output, surface="tool", cites=[("tool", 2)])
    for n in range(6):  # "pets" is common: "Oscar" alone outweighs it
        corpus.start(f"noise-{n}")
        corpus.say(f"noise-{n}", f"pets corner number {n}")
    await corpus.flush()
    order = [
        hit.header.session_id for hit in (await search(store, "what are the pets of Oscar?")).hits
    ]
    assert order[:1] == ["held"], order
    assert order.index("held") < order.index("asked") < order.index("other")
    page = await search_in(store, "what are the pets of Oscar?", "tool")
    assert [hit.event.seq for hit in page.hits] == [2, 3]  # the call, then its output


async def test_only_a_question_reads_the_context_and_it_makes_no_candidate(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("asked")
    corpus.say("asked", "which marmot ate the turnip?", type_="message/user", surface="user")
    corpus.say("asked", "Oscar did")  # answers it, holding neither word
    corpus.say("asked", "Oscar again", type_="message/user", surface="user")
    corpus.start("other")
    corpus.say("other", "Oscar the marmot came by")
    for n in range(6):  # "marmot" is common: "Oscar" decides
        corpus.start(f"noise-{n}")
        corpus.say(f"noise-{n}", f"a marmot number {n}")
    await corpus.flush()
    # A question: "Oscar did" holds Oscar and, through the question it answers, marmot;
    # "Oscar again" answers "Oscar did": Oscar alone.
    page = await search_in(store, "which marmot is Oscar?", "asked")
    assert [hit.event.seq for hit in page.hits] == [3, 4, 2]
    assert page.hits[0].score < page.hits[1].score  # hits' scores: lower is better
    # Keywords read no context: the answer and the later turn tie on their own word.
    page = await search_in(store, "marmot Oscar", "asked")
    assert [hit.event.seq for hit in page.hits] == [3, 4, 2]
    assert page.hits[0].score == page.hits[1].score
    # The context makes no candidate: "Oscar did" answers the turnip but holds no word.
    page = await search_in(store, "what did the turnip become?", "asked")
    assert [hit.event.seq for hit in page.hits] == [2]
