"""What every embedding model gives the store, the bundled one and a remote one alike: its
identity, passages and queries as unit vectors, and recent queries' vectors cached.

The identity (name, dimensions, a fingerprint of a fixed probe text's vector) is recorded
with the vectors (``vectors.py``): the follower re-embeds when it changes and a query is
scored only against vectors of the same identity, so two models' spaces never mix.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
else:
    Vector = Any

PROBE_TEXT: Final = "Session query probe: the payment retries were softened after a declined card."
# The fingerprint rounds the probe's vector to steps of 1/32: a server that computes in
# another order (a GPU batch) still gives the same fingerprint, another model never does.
_FINGERPRINT_STEPS: Final = 32.0
QUERY_CACHE: Final = 256  # a model pages through the same question: embed it once


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    name: str
    dims: int
    fingerprint: str  # 16 hex digits of the rounded probe vector's SHA-256

    def describe(self) -> str:
        return f"{self.name} ({self.dims} dimensions, probe {self.fingerprint})"


def identify(name: str, probe: Vector) -> ModelIdentity:
    """The identity of a model whose passage vector of ``PROBE_TEXT`` is ``probe``."""
    import numpy as np

    rounded = np.rint(np.asarray(probe, dtype=np.float32) * _FINGERPRINT_STEPS).astype(np.int8)
    digest = hashlib.sha256(rounded.tobytes()).hexdigest()[:16]
    return ModelIdentity(name, int(rounded.shape[-1]), digest)


class SemanticModel(Protocol):
    """An embedding model as the follower and the searches use it."""

    step_events: int  # events the follower reads and embeds per step (its bounded queue)

    def identity(self) -> ModelIdentity:
        """Raises ``EmbedderUnavailable`` when the model cannot be asked now."""
        ...

    def known_identity(self) -> ModelIdentity | None:
        """The identity last found, without asking the model (a search's check)."""
        ...

    def passages(self, texts: Sequence[str]) -> Vector:
        """(len(texts), dims), unit length; raises ``EmbedderUnavailable``."""
        ...

    def query_soon(self, text: str) -> Future[Vector]: ...

    def close(self) -> None: ...


class QueryVectors:
    """Questions' vectors computed on a thread of their own (so a search runs its lexical
    half meanwhile), the last ``size`` of them kept (least recently used out)."""

    def __init__(self, embed: Callable[[str], Vector], size: int = QUERY_CACHE) -> None:
        self._embed = embed
        self._size = size  # 0 in benches: every query pays its embedding
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sq-embed-query")

    def get(self, text: str) -> Vector:
        with self._lock:
            found = self._cache.get(text)
            if found is not None:
                self._cache.move_to_end(text)
                return found
        vector = self._embed(text)
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector

    def soon(self, text: str) -> Future[Vector]:
        return self._pool.submit(self.get, text)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
