"""The files beside one SQLite index file that its searches read: the search index and,
with semantic search on, the vector file with the model that embeds each query."""

from __future__ import annotations

from worker.store.errors import StoreError
from worker.store.search.hybrid import SemanticQuery
from worker.store.search.query import QueryPlan
from worker.store.search.search_reader import SearchIndexReader
from worker.store.search.semantic.fusion import skips_semantic
from worker.store.search.semantic.model import SemanticModel
from worker.store.search.semantic.vectors import VectorReader, vectors_path


class SearchFiles:
    """The search index beside one index file, opened on first use (the writer creates
    it), and its vector file once semantic search is attached (issue 21)."""

    def __init__(self, location: str, embedder: SemanticModel | None = None) -> None:
        self._location = location
        self._reader: SearchIndexReader | None = None
        self._semantic: tuple[SemanticModel, VectorReader] | None = None
        if embedder is not None:
            self.attach_semantic(embedder)

    def reopened(self) -> SearchFiles:
        """The files now at the same path (a rebuild put new ones there), searched the same
        way: the same model embeds the queries."""
        return SearchFiles(self._location, None if self._semantic is None else self._semantic[0])

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

    def attach_semantic(self, embedder: SemanticModel) -> None:
        """Hybrid search from now on: the model embeds each query, the vector file beside
        the index (``<db>.vectors``, filled by ``SemanticFollower``) answers."""
        self._semantic = (embedder, VectorReader(vectors_path(self._location)))

    def warm_semantic(self) -> int:
        """Load every workspace's vectors into memory (blocking; run it on a thread)."""
        return 0 if self._semantic is None else self._semantic[1].warm()

    def semantic_query(self, query: str, plan: QueryPlan) -> SemanticQuery | None:
        """The query's semantic side (embedded only when the lexical search leaves it open,
        ``worker.store.search.hybrid``); None when semantic search is off or the query is an
        identifier (``fusion.skips_semantic``)."""
        if self._semantic is None or skips_semantic(plan):
            return None
        embedder, reader = self._semantic
        return SemanticQuery(embedder, reader, query, early=False)
