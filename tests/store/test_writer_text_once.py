"""The writer derives each event's searchable text once (issue 41: the writer's cost per
event): the packer, the preview key and the search index take that one text, and what
they make of it is what they made deriving it themselves."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._events import event
from tests.store.test_storage import _items, _open, _start, archive_corpus
from worker.store.event_codec import EventCodec, EventPacker, body_of, preview_key
from worker.store.search import analysis
from worker.store.search.search_schema import (
    SCHEMA,
    event_document,
    search_index_path,
    workspace_key,
)
from worker.store.writer_protocol import IngestItem

CAP = 64 * 1024
BODY_CAP = CAP - 4


def _long_bodies() -> list[bytes]:
    """Events whose text is cut at the cap (its whole then indexed), a start whose parent
    id is no text, and a user message past the preview's source."""
    words = " ".join(f"word{n}" for n in range(20_000))  # ~190 KB: cut at the cap
    return [
        event(
            "s-long",
            1,
            "session/start",
            surface="system",
            payload={"cwd": "/work/a", "parent_session_id": "s-parent"},
        ),
        event("s-long", 2, "message/user", payload={"text": "ünïcode " * 2000}),
        event(
            "s-long",
            3,
            "tool/result",
            surface="tool",
            payload={"call_seq": 2, "output": words, "extra": ["é" * 70_000]},
        ),
    ]


def _corpus() -> list[tuple[str, str, str]]:
    """(type, surface, JSON) of each event."""
    out = []
    for body in [*archive_corpus(sessions=3, events=120, seed=5), *_long_bodies()]:
        parsed = orjson.loads(body)
        out.append((parsed["type"], parsed["surface"], body.decode()))
    return out


def test_the_handed_text_makes_the_same_document_preview_and_frame() -> None:
    packer = EventPacker(text_cap_bytes=CAP)
    cut = 0
    for n, (kind, surface, raw) in enumerate(_corpus(), start=1):
        body = body_of(kind, raw, CAP)
        cut += len(body.encode()) >= BODY_CAP
        row: list[Any] = [n, "s", n, kind, surface, 1000 + n, n, "w-0123456789abcdef", raw]
        row += [None, None, None, None]  # prompts, before, context type and JSON
        assert (
            event_document(row, BODY_CAP, body).to_dict() == event_document(row, BODY_CAP).to_dict()
        )
        # Only a text that may be cut needs the JSON: the follower hands "" otherwise.
        if 4 * len(body) < BODY_CAP:
            no_json = [*row[:8], "", *row[9:]]
            assert (
                event_document(no_json, BODY_CAP, body).to_dict()
                == event_document(row, BODY_CAP).to_dict()
            )
        assert preview_key(raw, kind, surface, body) == preview_key(raw, kind, surface)
        assert packer.pack(raw, kind, body) == packer.pack(raw, kind)
    assert cut >= 1  # the whole-event path was taken


def test_the_follower_indexes_a_batch_without_decoding_its_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "index.sqlite"
    core = _open(db)
    decoded: list[bytes] = []
    assert core.search is not None
    real = EventCodec.json

    def counting(codec: EventCodec, doc: bytes | None) -> str | None:
        if doc is not None:
            decoded.append(doc)
        return real(codec, doc)

    monkeypatch.setattr(EventCodec, "json", counting)
    try:
        bodies = [
            _start("s-a"),
            *(event("s-a", n, payload={"text": f"hello {n}"}) for n in range(2, 40)),
        ]
        result = core.apply(core.prepare(_items(bodies)), commit_search=True)
        assert result.applied == len(bodies)
        assert decoded == []  # every text came from the writer
        assert core.search.position.event_id == len(bodies)
        # A text that may be cut: its JSON is read for the whole event's words.
        more = [event("s-a", 40, payload={"text": "x" * (CAP + 10)})]
        core.apply(core.prepare(_items_from(more, len(bodies) + 1)), commit_search=True)
        assert len(decoded) == 1
    finally:
        core.close()


def test_a_follower_behind_reads_what_it_was_not_handed(tmp_path: Path) -> None:
    """Texts handed for one batch only: a rebuilt index (no hints) indexes the same."""
    db = tmp_path / "index.sqlite"
    bodies = archive_corpus(sessions=3, events=120, seed=9)
    core = _open(db)
    try:
        for at in range(0, len(bodies), 50):
            core.apply(core.prepare(_items(bodies)[at : at + 50]))
        core.follow_search(len(bodies), commit=True)
        answer = _search_ids(core)
    finally:
        core.close()
    shutil.rmtree(search_index_path(db))
    core = _open(db)
    try:
        core.catch_up_search()
        assert _search_ids(core) == answer
        assert all(answer.values()), answer  # each word is found
    finally:
        core.close()


def _items_from(bodies: list[bytes], first: int) -> list[IngestItem]:
    return [IngestItem(stream_seq=first + n, data=b) for n, b in enumerate(bodies)]


def _search_ids(core: Any) -> dict[str, list[int]]:
    """The events holding each of a few words, in both text fields, in the corpus's
    workspace (ids only: a score also counts the position documents each commit replaced,
    so it depends on how many commits there were)."""
    assert core.search is not None
    key = workspace_key(str(core.conn.value("SELECT ws FROM sessions LIMIT 1")))
    index = core.search._index
    index.reload()
    searcher = index.searcher()
    found = {}
    for field, word in (("ex", "failed"), ("nm", "fail"), ("ex", "日本語"), ("nm", "hello")):
        query = tantivy.Query.term_query(SCHEMA, field, key + word)
        hits = searcher.search(query, 10_000).hits
        found[f"{field}:{word}"] = sorted(
            int(searcher.fast_field_values("id", [a])[0] or 0) for _, a in hits
        )
    return found


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=200)
    | st.text(max_size=60)
    | st.text(alphabet=st.sampled_from("ab_9 -.\t\n\x0b\x0c\x1c\x1f\x7fé日"), max_size=60)
)
def test_the_word_runs_of_a_text_are_the_regex_ones(text: str) -> None:
    """The index's words are found without the regex for ASCII text: the same runs."""
    assert analysis.word_runs(text) == re.findall(r"\w+", text)


def _fragment_by_words(token: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    analysed = analysis._analyze_token(token)
    return tuple(w.exact for w in analysed), tuple(d for w in analysed for d in w.derived)


@settings(max_examples=600, deadline=None)
@given(
    st.from_regex(r"[A-Za-z0-9_]{1,80}", fullmatch=True)
    | st.text(alphabet=st.sampled_from("aZ9_é日Ж"), min_size=1, max_size=70)
)
def test_a_word_s_tokens_are_the_analysers(token: str) -> None:
    """An ASCII word's index tokens come without the ``Word`` objects: the same tokens."""
    assert analysis._fragment(token) == _fragment_by_words(token)
