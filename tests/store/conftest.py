"""The store tests' usual pair, a corpus builder and the store reading the same file, and the
bundled embedding model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.store._corpus import Corpus, corpus_and_store
from worker.store.sqlite import SqliteSessionStore

if TYPE_CHECKING:
    from worker.store.search.semantic.embedder import Embedder


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Corpus, SqliteSessionStore]]:
    async with corpus_and_store(tmp_path) as pair:
        yield pair


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    """The bundled model, loaded once per module (the semantic extra's tests)."""
    from worker.store.search.semantic.embedder import Embedder

    model = Embedder()
    yield model
    model.close()
