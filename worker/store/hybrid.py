"""The semantic half of a hybrid search, as the two searches use it: a query's vector (being
computed while the lexical search runs) and the nearest events of the caller's workspace,
each a candidate SQL confirms like any lexical one. The rule that merges the two lists is
``semantic.fusion``; the model and the vectors are only touched through here."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Final

from worker.store.semantic.embedder import Vector
from worker.store.semantic.fusion import SEMANTIC_EVENTS, within_margin
from worker.store.semantic.vectors import VectorReader

# The query's vector is normally ready before the lexical search ends (~20 ms); a search
# never waits for it longer than this, and goes on lexical only.
_VECTOR_WAIT_S: Final = 2.0


@dataclass(frozen=True, slots=True)
class SemanticQuery:
    reader: VectorReader
    vector: Future[Vector]

    def needed(self, partial: bool, lexical: int, want: int) -> bool:
        """Whether semantic hits can reach the page: always for partial matches; for an
        all-words search only when it found fewer than the page wants (its hits are pinned
        above every semantic-only one, so with enough of them the page is lexical alone and
        nobody waits for the model)."""
        if partial or lexical < want:
            return True
        self.vector.cancel()
        return False

    def nearest(self, ws: str, session_id: str | None = None) -> list[tuple[int, float]]:
        """(event id, cosine) of the workspace (or one session), best first, within the
        margin of the best; empty when the vector did not come in time."""
        try:
            vector = self.vector.result(timeout=_VECTOR_WAIT_S)
        except Exception:  # the model failed or was slow: the search stays lexical
            return []
        return within_margin(self.reader.nearest(ws, vector, SEMANTIC_EVENTS, session_id))
