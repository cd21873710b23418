"""The store tests' usual pair: a corpus builder and the store reading the same file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.store._corpus import Corpus, corpus_and_store
from worker.store.sqlite import SqliteSessionStore


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Corpus, SqliteSessionStore]]:
    async with corpus_and_store(tmp_path) as pair:
        yield pair
