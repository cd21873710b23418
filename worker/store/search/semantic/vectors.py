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
vector, a quarter of float32, with cosine scores within ~0.01 of the float ones. They stay
int8 in memory too (a workspace's matrix is scanned in blocks turned to float32 one at a
time), so loaded vectors take what they take on disk; ``bench/semantic.py`` measures the
recall that costs against float32 vectors (bench/README.md).

The model's identity (``model.ModelIdentity``) is recorded in the file, beside the last
failure of the embedder (status says it): a file holds the vectors of one model only.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from worker.store.search.semantic.model import ModelIdentity, Vector

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCHEMA_VERSION: Final = 1
MIN_CENTRED: Final = 200  # vectors a workspace needs before its scores are centred
_SCALE: Final = 127.0
# Rows turned to float32 at once by a scan, into one buffer (1.5 MiB at 384 dims): small
# enough to stay in the CPU's cache, so the int8 scan costs what a float32 one does
# (8,192-row blocks, which do not, made it 3-5x slower).
_BLOCK_ROWS: Final = 1024

_DDL: Final = """
CREATE TABLE IF NOT EXISTS vectors (
    event_id   INTEGER PRIMARY KEY,
    ws         TEXT NOT NULL,
    session_id TEXT NOT NULL,
    vec        BLOB NOT NULL,
    digest     BLOB  -- of the chunk embedded (``digest``): a rebuild reuses the vector
);
CREATE INDEX IF NOT EXISTS vectors_ws ON vectors (ws, event_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS model (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- The vectors of the store file before a rebuild, by chunk digest, until the follower has
-- caught up with the new file: an unchanged event is not embedded again.
CREATE TABLE IF NOT EXISTS reusable (digest BLOB PRIMARY KEY, vec BLOB NOT NULL);
"""
_DIGEST_BYTES: Final = 16


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
        columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(vectors)")}
        if "digest" not in columns:  # a file made before the column: its rows reuse nothing
            conn.execute("ALTER TABLE vectors ADD COLUMN digest BLOB")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def digest(chunk: str) -> bytes:
    """What a vector is reused by: the chunk's text (the model is the file's own)."""
    return hashlib.sha256(chunk.encode()).digest()[:_DIGEST_BYTES]


def read_meta(conn: sqlite3.Connection) -> dict[str, int]:
    return {str(k): int(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def read_identity(conn: sqlite3.Connection) -> ModelIdentity | None:
    """The model the file's vectors are of; None before the follower's first step."""
    found = _model_rows(conn)
    if not {"name", "dims", "fingerprint"} <= found.keys():
        return None
    return ModelIdentity(found["name"], int(found["dims"]), found["fingerprint"])


def write_identity(conn: sqlite3.Connection, identity: ModelIdentity) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO model (key, value) VALUES (?, ?)",
        [
            ("name", identity.name),
            ("dims", str(identity.dims)),
            ("fingerprint", identity.fingerprint),
        ],
    )


def read_failure(conn: sqlite3.Connection) -> tuple[str, int] | None:
    """The embedder's failure since the last vectors were written: (reason, since ms)."""
    reason = _model_rows(conn).get("failing")
    since = read_meta(conn).get("failing_since_ms")
    return None if reason is None or since is None else (reason, since)


def _model_rows(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM model")}
    except sqlite3.OperationalError:  # a file of a version before the table, read-only
        return {}


def write_failure(conn: sqlite3.Connection, reason: str | None, now_ms: int) -> None:
    """Record the embedder failing (kept since its first failure), or clear it."""
    if reason is None:
        conn.execute("DELETE FROM model WHERE key = 'failing'")
        conn.execute("DELETE FROM meta WHERE key = 'failing_since_ms'")
        return
    conn.execute("INSERT OR REPLACE INTO model (key, value) VALUES ('failing', ?)", (reason,))
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('failing_since_ms', ?)", (now_ms,)
    )


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
    matrix: npt.NDArray[np.int8]  # (n, dims) as stored: each component times _SCALE
    through: int  # the highest event id loaded
    mean: npt.NDArray[np.float32] = field(init=False)
    norms: npt.NDArray[np.float32] = field(init=False)  # |row - mean|

    def __post_init__(self) -> None:
        import numpy as np

        dims = self.matrix.shape[1]
        # A handful of vectors has no common direction to speak of: their mean would be
        # themselves. Below MIN_CENTRED the scores are plain cosines (a zero mean).
        centred = len(self.matrix) >= MIN_CENTRED
        total = np.zeros(dims, np.float64)
        if centred:
            for _, block in self._blocks():
                total += block.sum(axis=0, dtype=np.float64)
        self.mean = (total / max(len(self.matrix), 1)).astype(np.float32)
        # |m - mean|^2 = |m|^2 - 2 m.mean + |mean|^2
        self.norms = np.empty(len(self.matrix), np.float32)
        mean_sq = float(self.mean @ self.mean)
        for rows, block in self._blocks():
            squared = np.einsum("ij,ij->i", block, block) - 2.0 * (block @ self.mean) + mean_sq
            self.norms[rows] = np.sqrt(np.maximum(squared, 1e-12))

    def _blocks(self) -> Iterator[tuple[slice, npt.NDArray[np.float32]]]:
        """The matrix as float32 a block of rows at a time (the whole never is), each
        block in the same buffer: use it before asking for the next."""
        import numpy as np

        buffer = np.empty((min(_BLOCK_ROWS, len(self.matrix)), self.matrix.shape[1]), np.float32)
        for start in range(0, len(self.matrix), _BLOCK_ROWS):
            part = self.matrix[start : start + _BLOCK_ROWS]
            block = buffer[: len(part)]
            np.copyto(block, part, casting="unsafe")
            block *= np.float32(1.0 / _SCALE)
            yield slice(start, start + len(part)), block

    def scores(self, query: Vector) -> npt.NDArray[np.float32]:
        """Cosine of each row and the query, both taken around the mean."""
        import numpy as np

        centred = (query - self.mean).astype(np.float32)
        size = max(float(np.linalg.norm(centred)), 1e-12)
        offset = float(self.mean @ centred)
        out = np.empty(len(self.matrix), np.float32)
        for rows, block in self._blocks():
            out[rows] = (block @ centred - offset) / (self.norms[rows] * size)
        return out


class VectorReader:
    """Exact scans of one workspace's vectors. Thread-safe; each workspace is loaded on its
    first query and extended with what the follower added since."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._cache: dict[str, _Workspace] = {}
        self._generation: int | None = None
        self._identity: ModelIdentity | None = None

    def nearest(
        self,
        ws: str,
        query: Vector,
        limit: int,
        session_id: str | None = None,
        model: ModelIdentity | None = None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` events of workspace ``ws`` (of one session when given) nearest to
        ``query``: (event id, cosine), best first. Candidates only: SQL confirms them.
        ``model``: the query's model; vectors of another one are never scored against it."""
        import numpy as np

        space = self._load(ws)
        if model is not None and model != self._identity:
            return []  # the file holds another model's space (being re-embedded)
        if space is None or len(space.ids) == 0 or space.matrix.shape[1] != query.shape[-1]:
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
                self._refresh(conn)
                space = self._cache.get(ws)
                added = _rows(conn, ws, space.through if space else 0)
                if added:
                    space = _extend(space, added)
                    self._cache[ws] = space
                return space
        finally:
            conn.close()

    def _refresh(self, conn: sqlite3.Connection) -> None:
        """A new generation (rebuilt, another model): start again. Holds the lock."""
        generation = read_meta(conn).get("generation", 0)
        if generation != self._generation:
            self._cache.clear()
            self._generation = generation
            self._identity = read_identity(conn)


def _rows(conn: sqlite3.Connection, ws: str, after: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT event_id, session_id, vec FROM vectors WHERE ws = ? AND event_id > ?"
        " ORDER BY event_id",
        (ws, after),
    ).fetchall()


def _extend(space: _Workspace | None, added: Sequence[tuple[Any, ...]]) -> _Workspace:
    import numpy as np

    ids = np.fromiter((r[0] for r in added), np.int64, len(added))
    dims = len(added[0][2])  # int8: a byte a dimension
    matrix = np.frombuffer(b"".join(r[2] for r in added), dtype=np.int8).reshape(len(added), dims)
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
