"""bench.relevance's hybrid engine (issues 21 and 34): the store with semantic search on,
after the embedding follower has embedded the whole corpus, and the targets hybrid
answers to."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bench import relevance_corpus as rc
from bench.report import Absolute

if TYPE_CHECKING:
    from bench.relevance import Answer  # relevance imports this module

# "Ahead" on the questions in other words: at least one question in 20 more ranked first.
AHEAD: Final = 0.05
# Filled by ask_hybrid: how long embedding the corpus took (reported with the scores), and
# how many of the questions the model was asked to embed (issue 42: a page the lexical
# evidence decides never embeds its question).
EMBEDDING: dict[str, float] = {}


class _Counting:
    """The model, counting the questions a search asks it to embed."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.asked = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def query_soon(self, text: str) -> Any:
        self.asked += 1
        return self._model.query_soon(text)


async def ask_hybrid(
    db: Path,
    queries: Sequence[rc.LabelledQuery],
    prompts: Mapping[str, str | None],
    ask_store: Callable[..., Awaitable[list[Answer]]],
) -> list[Answer]:
    """Every query through the store with semantic search on; no answers (every query a
    miss, flagged in the output) when the extra is not installed."""
    from worker.store.search import semantic

    if not semantic.available():
        from bench.relevance import Answer

        return [Answer((), error="semantic extra not installed") for _ in queries]
    from worker.store.search.semantic.embedder import Embedder
    from worker.store.search.semantic.follower import SemanticFollower

    embedder = Embedder(threads=2)  # the bench has the machine: both cores
    follower = SemanticFollower(db, embedder)
    t0 = time.perf_counter()
    try:
        await asyncio.to_thread(follower.catch_up)
        lag = follower.lag()
    finally:
        follower.close()
    EMBEDDING.update(seconds=time.perf_counter() - t0, vectors=lag.vectors)
    counting = _Counting(embedder)
    try:
        return await ask_store(db, queries, prompts, counting)
    finally:
        EMBEDDING.update(questions_embedded=counting.asked, questions=len(queries))
        embedder.close()


def hybrid_checks(scores: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[Absolute]:
    """Issue 34's targets (issue 21's paraphrase targets, 0.9 and 0.95, are retired): hybrid
    success@1 never below lexical-only in any category, and ahead of it on the questions
    asked in other words (paraphrase, conv_meaning)."""
    hybrid, lexical = scores["hybrid"], scores["new"]
    checks = []
    for category, s in hybrid.items():
        gain = s["success_at_1"] - lexical[category]["success_at_1"]
        checks.append(Absolute(f"hybrid - lexical success@1 {category}", gain, "share", "min", 0.0))
        if category in rc.IN_OTHER_WORDS:
            checks.append(
                Absolute(f"hybrid ahead of lexical {category}", gain, "share", "min", AHEAD)
            )
    return checks
