"""The search index beside one SQLite index file, as its readers open it."""

from __future__ import annotations

from worker.store.errors import StoreError
from worker.store.search.search_reader import SearchIndexReader


class SearchFile:
    """The search index beside one index file, opened on first use (the writer creates
    it)."""

    def __init__(self, location: str) -> None:
        self._location = location
        self._reader: SearchIndexReader | None = None

    def reader(self) -> SearchIndexReader | None:
        if self._reader is None:
            self._reader = SearchIndexReader.open(self._location)
        return self._reader

    def latest(self) -> SearchIndexReader:
        """The search index as of its latest commit."""
        reader = self.reader()
        if reader is None:
            raise StoreError("the search index is not built yet")
        reader.refresh()
        return reader
