"""Issue 42: hybrid search that never loses. The question's distinctive groups (names,
rare terms), ``ranking.decided`` and ``ranking.keep_distinctive`` as pure functions, and
the fusion that applies them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from hypothesis import given
from hypothesis import strategies as st

from tests.store._corpus import corpus_and_store, search
from worker.store.search import ranking
from worker.store.search.query import compile_query
from worker.store.search.semantic.fusion import Lexical, fuse
from worker.store.sqlite import SqliteSessionStore

KEY = "w1:"
_USER: Final[dict[str, Any]] = {"type_": "message/user", "surface": "user"}


def _doc_freq(counts: dict[str, int], events: int = 1000) -> ranking.DocFreq:
    def doc_freq(field: str, token: str) -> int:
        if token == KEY:
            return events
        return counts.get(token[len(KEY) :], 0)

    return doc_freq


def test_names_and_rare_terms_are_distinctive() -> None:
    plan = compile_query("Which relatives did Jon invite to the reunion cabin?")
    words = [group[0].text for group in plan.required]
    # "jon" is in half the events (a name all the same), "reunion" in 3 of 1000 (rare),
    # "relatives" in 40 (common enough), "invite" nowhere (nothing holds it: no evidence).
    counts = {"jon": 500, "relat": 40, "relative": 40, "reunion": 3, "cabin": 30}
    weights = ranking.weights(plan, KEY, _doc_freq(counts))
    distinctive = {w for w, d in zip(words, weights.distinctive, strict=True) if d}
    assert distinctive == {"Jon", "reunion"}, (words, weights.distinctive)
    assert weights.distinctive_mask != 0


def test_the_first_word_capital_is_no_name() -> None:
    plan = compile_query("Refund retries in the ledger")
    weights = ranking.weights(plan, KEY, _doc_freq({"refund": 400, "retri": 300, "ledger": 200}))
    assert not any(weights.distinctive)


def test_decided_only_when_the_lexical_first_alone_holds_every_distinctive_group() -> None:
    assert ranking.decided("a", ["a"], 0b11)
    assert not ranking.decided("a", ["a", "b"], 0b11)  # another holds them too: open
    assert not ranking.decided("a", ["b"], 0b11)  # the holder is not the lexical first
    assert not ranking.decided("a", [], 0b11)
    assert not ranking.decided("a", ["a"], 0)  # no distinctive word: always open


def test_a_semantic_hit_never_rises_above_a_hit_holding_a_distinctive_word_it_lacks() -> None:
    # bench.relevance's conv_other_speaker: Maya's turn holds the event's rare words, Jon's
    # turn (asked about) means much the same; the model puts Jon's first.
    plan = compile_query("Which relatives did Jon invite to the reunion cabin?")
    lexical = [Lexical("event", 0.4), Lexical("alike", 0.3)]
    unconstrained = [key for key, _ in fuse(plan, lexical, ["alike", "event"])]
    assert unconstrained[0] == "alike"  # issue 34's fusion: the loss issue 42 is about
    held = {"event": 0b1100, "alike": 0b0011}
    order = [key for key, _ in fuse(plan, lexical, ["alike", "event"], held)]
    assert order == ["event", "alike"]
    # A semantic-only hit holding no distinctive group stays below both.
    order = [key for key, _ in fuse(plan, lexical, ["meaning", "alike"], held)]
    assert order.index("event") < order.index("meaning")


def test_meaning_reorders_where_the_distinctive_words_leave_the_question_open() -> None:
    plan = compile_query("What pet did Maya bring home recently?")
    lexical = [Lexical("small_talk", 0.3), Lexical("answer", 0.3)]
    held = {"small_talk": 0b1, "answer": 0b1}  # both turns hold only the name
    order = [key for key, _ in fuse(plan, lexical, ["answer"], held)]
    assert order[0] == "answer"


_MASKS = st.integers(min_value=0, max_value=15)


@given(
    st.lists(_MASKS, min_size=1, max_size=12),
    st.randoms(use_true_random=False),
    st.integers(min_value=0, max_value=12),
)
def test_keep_distinctive_moves_nothing_above_a_higher_holder(
    masks: list[int], rng: object, lexical_count: int
) -> None:
    import random

    assert isinstance(rng, random.Random)
    keys = list(range(len(masks)))
    lexical = keys[: min(lexical_count, len(keys))]
    proposed = keys[:]
    rng.shuffle(proposed)
    held = dict(zip(keys, masks, strict=True))
    order = ranking.keep_distinctive(proposed, lexical, held)
    assert sorted(order) == keys
    rank = {k: i for i, k in enumerate(lexical)}
    at = {k: i for i, k in enumerate(order)}
    for y in lexical:
        for x in keys:
            if rank.get(x, len(lexical)) > rank[y] and held[y] & ~held[x]:
                assert at[y] < at[x], (y, x, order)
    # Without distinctive groups, fusion's order is kept as it is.
    assert ranking.keep_distinctive(proposed, lexical, {}) == proposed


_PREAMBLE = "Run the billing deploy checklist before merging anything."


async def test_the_shared_prompt_check_read_once_per_commit_answers_as_a_fresh_store(
    tmp_path: Path,
) -> None:
    """Issue 42's brief: a workspace whose titles and first prompts share no paragraph
    skips the shared-prompt reads (once per commit); when a later commit brings shared
    ones, the same store answers as one opened afterwards (the discount applies)."""
    query = "billing deploy checklist"
    async with corpus_and_store(tmp_path) as (corpus, store):
        corpus.start("own")
        corpus.say("own", f"{_PREAMBLE}\n\nAlso rename the invoice job.", **_USER)
        corpus.start("later")
        corpus.say("later", "Fixed the flaky test.", **_USER)
        corpus.say("later", "Went over the billing deploy checklist again, all green.")
        await corpus.flush()
        before = await search(store, query)
        assert before.hits[0].header.session_id == "own"  # its first prompt
        for n in range(12):
            sid = f"template{n:02d}"
            corpus.start(sid)
            corpus.say(sid, f"{_PREAMBLE}\n\nTask {n}: tidy module {n}.", **_USER)
        await corpus.flush()
        after = await search(store, query)
        fresh = await SqliteSessionStore.open(corpus.path, readers=1)
        try:
            again = await search(fresh, query)
        finally:
            await fresh.close()
    order = [h.header.session_id for h in after.hits]
    assert order == [h.header.session_id for h in again.hits]
    assert [h.score for h in after.hits] == [h.score for h in again.hits]
    # Thirteen sessions now open with the preamble: it earns no title bonus, and the
    # session that said the words on its own ranks first.
    assert order[0] == "later", order
