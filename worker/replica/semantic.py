"""``--semantic on`` (issue 21): the model loaded once, attached to every store the worker
opens, and the embedding follower as an actor beside ingestion.

The follower runs on a thread of its own at a lower CPU priority (nice +10 for that thread
alone), one model thread: ingestion and searches come first, embedding takes what is left
and reports its own lag. It follows the file the store path names now, so after a rebuild
swapped in a new file it starts on that one (keeping the old file's vectors of unchanged
events: ``follower.py``). With ``--embedder URL`` the model is a remote OpenAI-compatible
server (``store/search/semantic/remote.py``); when it fails, the follower says so once,
waits and tries again, and searches go on lexical only meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import structlog

from worker import retry
from worker.config import WorkerConfig
from worker.settings import ConfigError
from worker.store.sqlite import SqliteSessionStore

log = structlog.get_logger("sessionquery.semantic")

SEMANTIC_ACTOR: Final = "semantic-follower"
_IDLE_S: Final = 0.5  # caught up: look again after this
_NICE: Final = 10
MISSING_EXTRA: Final = (
    "--semantic on needs the semantic extra: pip install 'session-query-worker[semantic]'"
)


def describe(config: WorkerConfig) -> str:
    """The one line ``serve`` prints about semantic search."""
    from worker.store.search import semantic

    if config.semantic == "on" and config.embedder:
        model = f" {config.embedder_model}" if config.embedder_model else ""
        return f"semantic search: on (the remote embedder{model}, --embedder; lexical + semantic)"
    if config.semantic == "on":
        return "semantic search: on (multilingual-e5-small, 4-bit, local; lexical + semantic)"
    extra = "installed" if semantic.available() else "not installed"
    return f"semantic search: off (--semantic on to turn it on; the semantic extra is {extra})"


def load_embedder(config: WorkerConfig) -> Any:
    """The model, or None when semantic search is off; a missing extra is a config error."""
    from worker.store.search import semantic

    if config.semantic != "on":
        return None
    if not semantic.available(bundled=not config.embedder):
        raise ConfigError(MISSING_EXTRA)
    if config.embedder:
        from worker.store.search.semantic.remote import RemoteEmbedder, RemoteSettings

        return RemoteEmbedder(
            RemoteSettings(
                url=config.embedder,
                model=config.embedder_model,
                timeout_s=config.embedder_timeout_ms / 1000,
                batch=config.embedder_batch,
                concurrency=config.embedder_concurrency,
            )
        )
    from worker.store.search.semantic.embedder import Embedder

    return Embedder(threads=1)


class EmbeddingFollower:
    """The actor body: step the follower until cancelled."""

    def __init__(self, db_path: Path, embedder: Any, store: SqliteSessionStore) -> None:
        self._db_path = db_path
        self._embedder = embedder
        self._store = store  # warmed first: the vectors of every workspace in memory
        self._follower: Any = None
        self._inode: int | None = None

    async def run(self) -> None:
        from worker.store.errors import EmbedderUnavailable

        loaded = await asyncio.to_thread(self._store.warm_semantic)
        log.info("semantic vectors loaded", vectors=loaded)
        failures = 0
        try:
            while True:
                try:
                    done = await asyncio.to_thread(self._step)
                except EmbedderUnavailable as exc:
                    failures += 1
                    if failures == 1:  # one line per outage, its fixed reason only
                        log.warning(
                            "embedder failing; semantic search falls behind", reason=str(exc)
                        )
                    await asyncio.sleep(retry.EMBEDDER_OUTAGE.wait(failures))
                    continue
                if failures:
                    log.info("embedder answering again", failures=failures)
                    failures = 0
                if done == 0:
                    await asyncio.sleep(_IDLE_S)
        finally:
            await asyncio.to_thread(self._close)

    def _step(self) -> int:
        # Each step may run on another thread of the pool: nice the one it runs on.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)
        follower = self._current()
        return 0 if follower is None else int(follower.step())

    def _current(self) -> Any:
        """The follower of the file the path names now (a rebuild swaps the file)."""
        from worker.store.search.semantic.follower import SemanticFollower

        try:
            inode = os.stat(self._db_path).st_ino
        except FileNotFoundError:
            return None
        if inode != self._inode:
            self._close()
            self._follower = SemanticFollower(self._db_path, self._embedder)
            self._inode = inode
            log.info("embedding follower started", index=str(self._db_path))
        return self._follower

    def _close(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None


def lag_report(path: Path) -> dict[str, Any] | None:
    """The embedding follower's lag, from its vector file (issue 21)."""
    from worker.store.search.semantic.follower import read_lag

    lag = read_lag(path)
    if lag is None:
        return None
    return {
        "through_event_id": lag.through_event_id,
        "last_event_id": lag.last_event_id,
        "behind_events": lag.behind,
        "vectors": lag.vectors,
        "vector_bytes": vectors_bytes(path),
        "model": lag.model,
        "failing": lag.failing,
        "failing_since_ms": lag.failing_since_ms,
    }


def vectors_bytes(path: Path) -> int:
    from worker.store.search.semantic.vectors import vectors_path

    found = vectors_path(path)
    return sum(p.stat().st_size for p in found.parent.glob(found.name + "*") if p.is_file())


def status_line(semantic: dict[str, Any] | None) -> str:
    """The ``status`` line about the embedding follower."""
    if not semantic:
        return "no vectors (the worker runs without --semantic on)"
    line = (
        f"embedded through event id {semantic['through_event_id']} of"
        f" {semantic['last_event_id']} ({semantic['behind_events']} behind),"
        f" {semantic['vectors']} vectors"
    )
    if semantic.get("model"):
        line += f" of {semantic['model']}"
    if semantic.get("failing"):
        since = datetime.fromtimestamp(semantic["failing_since_ms"] / 1000, UTC)
        line += (
            f"; embedder failing since {since:%Y-%m-%d %H:%M:%S} UTC ({semantic['failing']}):"
            " semantic search is behind, lexical search is unaffected"
        )
    return line
