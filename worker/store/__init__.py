"""The session store: the sessionQuery protocol, its SQLite provider with a tantivy search
index, the index writer (ingestion, which feeds it, is the replica's).

The tools import the protocol and result types from here, and ``compile_query``, the pure
function that compiles a search's text before the store is asked; only composition code
(the CLI, the runtime, tests) imports the SQLite provider.
"""

from worker.store.errors import GenerationChanged, InvalidCursor, InvalidQuery, StoreError
from worker.store.marks import split_excerpt
from worker.store.protocol import (
    Availability,
    CompiledQuery,
    EventFilter,
    EventHit,
    EventRef,
    EventRelations,
    EventSearchPage,
    EventSummary,
    EventWindow,
    Generation,
    Lineage,
    LineageNode,
    LinkedEvent,
    ServiceLimits,
    SessionFilter,
    SessionHeader,
    SessionHit,
    SessionQueryService,
    SessionSearchPage,
    StoredEvent,
    SurfaceName,
    TitleObservation,
)
from worker.store.search.query import compile_query
from worker.store.writer_protocol import (
    ApplyResult,
    IngestItem,
    Rejected,
    SessionIndexWriter,
    Staged,
)

__all__ = [
    "ApplyResult",
    "Availability",
    "CompiledQuery",
    "EventFilter",
    "EventHit",
    "EventRef",
    "EventRelations",
    "EventSearchPage",
    "EventSummary",
    "EventWindow",
    "Generation",
    "GenerationChanged",
    "IngestItem",
    "InvalidCursor",
    "InvalidQuery",
    "Lineage",
    "LineageNode",
    "LinkedEvent",
    "Rejected",
    "ServiceLimits",
    "SessionFilter",
    "SessionHeader",
    "SessionHit",
    "SessionIndexWriter",
    "SessionQueryService",
    "SessionSearchPage",
    "Staged",
    "StoreError",
    "StoredEvent",
    "SurfaceName",
    "TitleObservation",
    "compile_query",
    "split_excerpt",
]
