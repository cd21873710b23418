"""The ranking's rules (``worker.store.search.ranking``), through the real store: what a reader
would put first when a workspace holds noise, and the pure parts on their own."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from tests.store._corpus import Corpus, search
from worker.store.protocol import SessionSearchPage
from worker.store.search import ranking
from worker.store.sqlite import SqliteSessionStore


def ids(page: SessionSearchPage) -> list[str]:
    return [hit.header.session_id for hit in page.hits]


def noise(corpus: Corpus, sessions: int, text: str, events: int = 1) -> None:
    for n in range(sessions):
        corpus.start(f"noise-{n}")
        for _ in range(events):
            corpus.say(f"noise-{n}", text)


async def test_a_rare_word_counts_for_more_than_a_common_one_in_a_partial_match(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("museum")
    corpus.say("museum", "Melanie went to the museum last Sunday")
    corpus.start("swim")
    corpus.say("swim", "Melanie, go swimming with us")
    # Two common words of the question, in one event, against its one rare word.
    corpus.start("common")
    corpus.say("common", "the parser crash again")
    corpus.start("rare")
    corpus.say("rare", "it only fails when the input holds unicode, a long story as usual")
    noise(corpus, 30, "we go to the parser after the crash report, then go home")
    await corpus.flush()
    page = await search(store, "When did Melanie go to the museum?")
    assert page.partial  # no event holds melanie, go and museum
    assert ids(page)[:2] == ["museum", "swim"]
    page = await search(store, "why does the parser crash on unicode")
    assert page.partial and ids(page)[0] == "rare"  # counting words put "common" first


async def test_the_pasted_error_as_written_beats_its_words_scattered(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("near-miss")
    corpus.say(
        "near-miss",
        "fatal: 'origin' does not appear to be a git repository",
        type_="tool/result",
        surface="tool",
    )
    corpus.start("exact")
    long_output = " ".join(f"modified: src/module_{n}.py" for n in range(80))
    corpus.say(
        "exact",
        f"$ git status\n{long_output}\nfatal: not a git repository (or any of the parent"
        " directories): .git",
        type_="tool/result",
        surface="tool",
    )
    await corpus.flush()
    # Unquoted: the exact message in a long output first, above a short near miss.
    page = await search(store, "fatal: not a git repository")
    assert ids(page) == ["exact", "near-miss"]


async def test_one_event_holding_the_question_beats_a_long_session_of_loose_matches(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("dump")
    for word in ("cache", "invalidation", "webhook", "retries") * 40:
        corpus.say("dump", f"docs: the {word} section of the manual, see also chapter four")
    corpus.start("focused")
    corpus.say("focused", "the cache invalidation broke webhook retries", type_="message/user",
               surface="user")  # fmt: skip
    await corpus.flush()
    page = await search(store, "why did cache invalidation break webhook retries")
    assert ids(page)[0] == "focused"


async def test_repeating_a_word_earns_nothing(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a-repeats")
    corpus.say("a-repeats", "timeout timeout timeout timeout in the deploy step")
    corpus.start("b-once")
    corpus.say("b-once", "a timeout in the deploy step right now")  # as long, said once
    await corpus.flush()
    page = await search(store, "timeout")
    # Equal evidence: the total order's session id decides, not the repetition.
    assert ids(page) == ["a-repeats", "b-once"]
    assert page.hits[0].score == page.hits[1].score


async def test_the_first_prompt_tells_what_a_session_was_about(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("a-mentions")
    corpus.say("a-mentions", "let us look at the logs", type_="message/user", surface="user")
    corpus.say("a-mentions", "flaky ledger test again")  # short: the closest match by length
    corpus.start("b-about")
    corpus.say(
        "b-about",
        "please fix the flaky ledger test in the payments service before the release today",
        type_="message/user",
        surface="user",
    )
    corpus.say("b-about", "looking at it now")
    corpus.start("c-titled")
    corpus.event("c-titled", "session/title", {"title": "the flaky ledger test"}, surface="system")
    corpus.say("c-titled", "done")
    await corpus.flush()
    page = await search(store, "flaky ledger test")
    assert set(ids(page)[:2]) == {"b-about", "c-titled"}  # the sessions about it first
    assert ids(page)[2] == "a-mentions"


async def test_a_sentence_in_other_word_forms_beats_a_paragraph_that_holds_the_words(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    filler = "the a review is so there lock key index case cursor exact and or because"
    corpus.start("paragraph")
    corpus.say("paragraph", f"{filler} request timeout {filler} {filler}")
    corpus.start("sentence")
    corpus.say("sentence", "Raised the timeouts of slow requests to thirty seconds.")
    await corpus.flush()
    page = await search(store, "timeout request")
    assert ids(page) == ["sentence", "paragraph"]


def test_shares_sum_to_the_units_and_follow_rarity() -> None:
    shares = ranking._shares([3.0, 1.0, 0.0], ranking.COVER_UNITS)
    assert sum(shares) == ranking.COVER_UNITS and min(shares) >= 1
    assert shares[0] > shares[1] > shares[2]


@given(st.lists(st.floats(min_value=0, max_value=20), min_size=1, max_size=12))
def test_shares_are_positive_and_exact_for_any_weights(values: list[float]) -> None:
    shares = ranking._shares(values, ranking.COVER_UNITS)
    assert sum(shares) == ranking.COVER_UNITS and all(s >= 1 for s in shares)


@given(
    st.integers(0, ranking.MAX_BASE - 1),
    st.integers(0, 2_000_000),
    st.integers(0, 2_000_000),
)
def test_the_prior_never_reorders_two_scores(base: int, tokens_a: int, tokens_b: int) -> None:
    """The engine multiplies a score by log2(2 + prior) in f32: a higher integer score stays
    higher whatever the two events' lengths, and its coverage reads back exactly."""

    def engine(score: int, tokens: int) -> float:
        factor = math.log2(2.0 + ranking.prior(tokens))
        return float(_f32(score * _f32(factor)))

    lower, higher = engine(base, tokens_a), engine(base + 1, tokens_b)
    assert higher > lower
    assert ranking.coverage_of(lower) == base // ranking.COVER_SCALE
    assert ranking.holds_all(lower) == bool(base // ranking.ALL_BIT % 2)


def test_shorter_events_get_a_higher_prior() -> None:
    assert ranking.prior(3) > ranking.prior(300) > ranking.prior(30_000) >= 0.0
    assert ranking.prior(0) == ranking.PRIOR_MAX


def _f32(value: float) -> float:
    import struct

    return float(struct.unpack("f", struct.pack("f", value))[0])
