"""The semantic half of a hybrid search, as the two searches use it: a query's vector and
the nearest events of the caller's workspace, each a candidate SQL confirms like any
lexical one. The rule that merges the two lists is ``semantic.fusion``; the model and the
vectors are only touched through here.

When the model runs: a search of all the query's words that finds hits is lexical alone
(those hits hold every word; a hit holding none would rank below all of them anyway), so
only a partial-match search (a question, or keywords no event holds together) uses the
semantic list, and only when the lexical evidence leaves the question open (issue 42,
``ranking.decided``: one candidate alone holds every distinctive word of the question, and
it is the lexical first). So the question is embedded after the lexical search, never
beside it: a decided page costs no model time (22-270 ms for a new question on the bundled
CPU model); an open one waits for the vector (cached when re-asked).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Final, Protocol

from worker.store.search.semantic.fusion import SEMANTIC_EVENTS, within_margin
from worker.store.search.semantic.model import ModelIdentity, Vector
from worker.store.search.semantic.vectors import VectorReader

# The query's vector normally comes in ~20 ms; a search never waits for it longer than
# this, and goes on lexical only.
_VECTOR_WAIT_S: Final = 2.0


class QueryEmbedder(Protocol):
    def query_soon(self, text: str) -> Future[Vector]: ...

    def known_identity(self) -> ModelIdentity | None: ...


@dataclass(slots=True)
class SemanticQuery:
    embedder: QueryEmbedder
    reader: VectorReader
    text: str
    early: bool  # a question: embed now, beside the lexical search
    _vector: Future[Vector] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.early:
            self._vector = self.embedder.query_soon(self.text)

    def needed(self, partial: bool) -> bool:
        """Whether semantic hits take part: only in a partial-match search the lexical
        evidence leaves open (the caller decides, see above)."""
        if not partial and self._vector is not None:
            self._vector.cancel()
        return partial

    def nearest(self, ws: str, session_id: str | None = None) -> list[tuple[int, float]]:
        """(event id, cosine) of the workspace (or one session), best first, within the
        margin of the best; empty when the vector did not come in time."""
        if self._vector is None:
            self._vector = self.embedder.query_soon(self.text)
        try:
            vector = self._vector.result(timeout=_VECTOR_WAIT_S)
        except Exception:  # the model failed or was slow: the search stays lexical
            return []
        # A model not known yet (a remote one never reached) has no vectors to compare.
        model = self.embedder.known_identity()
        if model is None:
            return []
        return within_margin(self.reader.nearest(ws, vector, SEMANTIC_EVENTS, session_id, model))
