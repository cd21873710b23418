"""The vector file: one SQLite file beside the index (``<db>.vectors``), one row per embedded
event, with the workspace token and session of the event; and the exact scan a query runs
over its own workspace's vectors.

Why its own file: the follower writes it on its own connection, so embedding never takes
the store's write lock and ingestion never waits for it. Why an exact scan per workspace:
a query scores only its workspace's rows (isolation by construction, no shared graph), and
at the sizes measured (bench/semantic.py) a matrix-vector product over a workspace's vectors
costs less than the query's own embedding; an approximate index would add a dependency and
a recall loss for no measured gain.

Scores are cosines taken around the workspace's mean vector: this model's vectors share a
large common direction, so raw cosines crowd into 0.75-0.9 and generic text (lists of
identifiers, boilerplate) comes near every query; centring them on the workspace's mean
took the paraphrase category's success@5 from 0.05 to 0.76 on the semantic list alone
(bench.relevance corpus, seed 11).

Vectors are stored as int8 (each component of the unit vector times 127): 384 bytes a
vector, a quarter of float32, with cosine scores within ~0.01 of the float ones.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from worker.store.search.semantic.embedder import DIM, Vector

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCHEMA_VERSION: Final = 1
MIN_CENTRED: Final = 200  # vectors a workspace needs before its scores are centred
_SCALE: Final = 127.0

_DDL: Final = """
CREATE TABLE IF NOT EXISTS vectors (
    event_id   INTEGER PRIMARY KEY,
    ws         TEXT NOT NULL,
    session_id TEXT NOT NULL,
    vec        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_ws ON vectors (ws, event_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def vectors_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".vectors")


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_DDL)
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def read_meta(conn: sqlite3.Connection) -> dict[str, int]:
    return {str(k): int(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def pack(vectors: Vector) -> list[bytes]:
    import numpy as np

    quantised = np.clip(np.rint(vectors * _SCALE), -127, 127).astype(np.int8)
    return [row.tobytes() for row in quantised]


@dataclass(slots=True)
class _Workspace:
    """One workspace's vectors in memory, in event-id order, with their mean: scores are
    cosines around the workspace's mean (see ``nearest``)."""

    ids: npt.NDArray[np.int64]
    # Each row's session as a small integer (``codes`` names them): a session-scoped scan
    # is one vectorised comparison, and a row holds no Python string of its own.
    session_of: npt.NDArray[np.int32]
    codes: dict[str, int]
    matrix: npt.NDArray[np.float32]  # (n, DIM), scaled back to unit length
    through: int  # the highest event id loaded
    mean: npt.NDArray[np.float32] = field(init=False)
    norms: npt.NDArray[np.float32] = field(init=False)  # |row - mean|

    def __post_init__(self) -> None:
        import numpy as np

        # A handful of vectors has no common direction to speak of: their mean would be
        # themselves. Below MIN_CENTRED the scores are plain cosines (a zero mean).
        centred = len(self.matrix) >= MIN_CENTRED
        self.mean = self.matrix.mean(axis=0) if centred else np.zeros(DIM, np.float32)
        # |m - mean|^2 = |m|^2 - 2 m.mean + |mean|^2, rows being unit vectors.
        squared = 1.0 - 2.0 * (self.matrix @ self.mean) + float(self.mean @ self.mean)
        self.norms = np.sqrt(np.maximum(squared, 1e-12)).astype(np.float32)

    def scores(self, query: Vector) -> npt.NDArray[np.float32]:
        """Cosine of each row and the query, both taken around the mean."""
        import numpy as np

        centred = query - self.mean
        size = max(float(np.linalg.norm(centred)), 1e-12)
        return ((self.matrix @ centred - float(self.mean @ centred)) / (self.norms * size)).astype(
            np.float32
        )


class VectorReader:
    """Exact scans of one workspace's vectors. Thread-safe; each workspace is loaded on its
    first query and extended with what the follower added since."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._cache: dict[str, _Workspace] = {}
        self._generation: int | None = None

    def nearest(
        self, ws: str, query: Vector, limit: int, session_id: str | None = None
    ) -> list[tuple[int, float]]:
        """The ``limit`` events of workspace ``ws`` (of one session when given) nearest to
        ``query``: (event id, cosine), best first. Candidates only: SQL confirms them."""
        import numpy as np

        space = self._load(ws)
        if space is None or len(space.ids) == 0:
            return []
        scores = space.scores(query)
        if session_id is not None:
            code = space.codes.get(session_id, -1)
            scores = np.where(space.session_of == code, scores, -np.inf)
        limit = min(limit, len(scores))
        # Every row scoring at least the limit-th best, then a stable sort: rows are in
        # event-id order (a workspace's stream order, the same on every replica and
        # layout), so equal cosines (copied events) keep that order, and the cut never
        # depends on how a partial sort happened to split a tie.
        kth = -np.partition(-scores, limit - 1)[limit - 1]
        chosen = np.flatnonzero(scores >= kth)
        best = chosen[np.argsort(-scores[chosen], kind="stable")][:limit]
        return [(int(space.ids[i]), float(scores[i])) for i in best if np.isfinite(scores[i])]

    def warm(self) -> int:
        """Load every workspace's vectors now (the worker does this at start, beside
        serving), so no query pays for reading its workspace from disk; the vectors
        loaded."""
        if not self._path.exists():
            return 0
        conn = connect(self._path, read_only=True)
        try:
            spaces = [str(r[0]) for r in conn.execute("SELECT DISTINCT ws FROM vectors")]
        finally:
            conn.close()
        loaded = (self._load(ws) for ws in spaces)
        return sum(len(space.ids) for space in loaded if space is not None)

    def _load(self, ws: str) -> _Workspace | None:
        if not self._path.exists():
            return None
        conn = connect(self._path, read_only=True)
        try:
            with self._lock:
                generation = read_meta(conn).get("generation", 0)
                if generation != self._generation:  # rebuilt: start again
                    self._cache.clear()
                    self._generation = generation
                space = self._cache.get(ws)
                added = _rows(conn, ws, space.through if space else 0)
                if added:
                    space = _extend(space, added)
                    self._cache[ws] = space
                return space
        finally:
            conn.close()


def _rows(conn: sqlite3.Connection, ws: str, after: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT event_id, session_id, vec FROM vectors WHERE ws = ? AND event_id > ?"
        " ORDER BY event_id",
        (ws, after),
    ).fetchall()


def _extend(space: _Workspace | None, added: Sequence[tuple[Any, ...]]) -> _Workspace:
    import numpy as np

    ids = np.fromiter((r[0] for r in added), np.int64, len(added))
    raw = np.frombuffer(b"".join(r[2] for r in added), dtype=np.int8).reshape(len(added), DIM)
    matrix = raw.astype(np.float32) / _SCALE
    codes = dict(space.codes) if space is not None else {}
    session_of = np.fromiter(
        (codes.setdefault(str(r[1]), len(codes)) for r in added), np.int32, len(added)
    )
    if space is None:
        return _Workspace(ids, session_of, codes, matrix, int(ids[-1]))
    return _Workspace(
        np.concatenate([space.ids, ids]),
        np.concatenate([space.session_of, session_of]),
        codes,
        np.concatenate([space.matrix, matrix]),
        int(ids[-1]),
    )
