"""The fusion rule and the chunking bound (issue 21): pure functions, no model needed."""

from __future__ import annotations

from worker.store.search.query import compile_query
from worker.store.search.semantic.chunks import MESSAGE_CHARS, OUTPUT_HEAD_CHARS, chunk
from worker.store.search.semantic.fusion import (
    SEMANTIC_MARGIN,
    SEMANTIC_SHARE,
    SHARE_TIERS,
    Lexical,
    fuse,
    semantic_share,
    skips_semantic,
    tier,
    within_margin,
)


def test_identifiers_paths_errors_and_phrases_skip_the_semantic_path() -> None:
    for query in (
        "build_retry_policy_v2",
        "SqliteVectorIndex",
        "worker/store/search/search_ops.py",
        "ConnectionResetError: [Errno 104]",
        '"connection refused"',
        "test_vat_rounding",
        "maxAttempts",
    ):
        assert skips_semantic(compile_query(query)), query
    for query in (
        "where did we make the payment retries less aggressive",
        "flaky refund test",
        "测试",
        "тест падает",
        "attempts",
    ):
        assert not skips_semantic(compile_query(query)), query


def test_an_all_words_hit_ranks_above_every_semantic_only_hit() -> None:
    plan = compile_query("where did we fix the refund test")
    lexical = [Lexical("all", 1.0), Lexical("partial", 1 / len(plan.required))]
    order = fuse(plan, lexical, ["meaning", "partial"])
    assert order[0] == ("all", False)  # pinned, though the semantic list never named it
    assert ("meaning", True) in order and ("partial", False) in order


def test_a_hit_lexical_ranks_above_an_all_words_hit_keeps_its_place() -> None:
    # bench.relevance's natural_language: the answer (most of the words, near each other,
    # in a message) ranks above a log holding every word scattered; meaning must not move
    # the log above it (issue 21's fusion pinned the log alone, and the answer fell).
    plan = compile_query("where did we fix the flaky date parsing test")
    lexical = [Lexical("answer", 0.8), Lexical("fork", 0.6), Lexical("log", 1.0)]
    order = [key for key, _ in fuse(plan, lexical, ["fork", "meaning"])]
    assert order[:3] == ["answer", "fork", "log"]


def test_with_an_identifier_in_the_query_every_lexical_hit_is_pinned() -> None:
    plan = compile_query("why did build_retry_policy_v2 fail for payments")
    order = fuse(plan, [Lexical("weak", 0.2), Lexical("weaker", 0.2)], ["meaning", "weak"])
    assert [key for key, _ in order] == ["weak", "weaker", "meaning"]
    assert order[-1] == ("meaning", True)


def test_a_hit_in_both_lists_rises_above_one_in_either() -> None:
    plan = compile_query("payment retries aggressive backoff")  # four groups
    lexical = [Lexical("both", 0.5), Lexical("lex-only", 0.5)]
    order = fuse(plan, lexical, ["sem-only", "both"])
    assert order[0] == ("both", False)
    flags = dict(order)
    assert flags["sem-only"] is True and flags["lex-only"] is False


def test_a_hit_holding_most_of_the_rare_words_stays_above_the_models_first_choice() -> None:
    # Issue 34: "when is Jon's daughter's birthday": the turn holding "daughter" and
    # "birthday" (most of the weight) against the model's favourite, a turn naming Jon.
    plan = compile_query("when is the birthday of the daughter of Jon")
    strong = SEMANTIC_SHARE + 2 / SHARE_TIERS  # a tier above the model's best
    lexical = [Lexical("birthday-daughter", strong), Lexical("names-jon", 0.1)]
    order = [key for key, _ in fuse(plan, lexical, ["names-jon", "elsewhere"])]
    assert order[0] == "birthday-daughter"
    # Equal evidence: the semantic list decides inside the tier.
    level = lexical[0].share
    even = [Lexical("a", level), Lexical("b", level)]
    assert [key for key, _ in fuse(plan, even, ["b"])][:2] == ["b", "a"]


def test_meaning_lifts_a_hit_over_weak_lexical_evidence_only() -> None:
    plan = compile_query("where did we make the payment retries less aggressive")
    weak = SEMANTIC_SHARE - 2 / SHARE_TIERS  # a tier below the model's best
    order = fuse(plan, [Lexical("one-common-word", weak)], ["meaning"])
    assert order == [("meaning", True), ("one-common-word", False)]
    # Further down the semantic list a hit counts for less: the weak hit keeps its place
    # above the model's tenth choice.
    assert tier(semantic_share(10)) < tier(weak) <= tier(semantic_share(1))
    tenth = [f"m{i}" for i in range(10)]
    ranked = [key for key, _ in fuse(plan, [Lexical("one-common-word", weak)], tenth)]
    assert ranked.index("one-common-word") < ranked.index("m9")


def test_semantic_hits_are_kept_within_the_margin_of_the_best() -> None:
    kept = within_margin([(1, 0.9), (2, 0.9 - SEMANTIC_MARGIN + 0.01), (3, 0.89 - SEMANTIC_MARGIN)])
    assert [key for key, _ in kept] == [1, 2]


def test_chunks_are_the_bounded_head_of_conversation_and_tool_output() -> None:
    long = "word " * 1000
    message = chunk("message/user", long)
    output = chunk("tool/result", long)
    assert message is not None and len(message) == MESSAGE_CHARS
    assert output is not None and len(output) == OUTPUT_HEAD_CHARS
    assert chunk("tool/call", long) is None  # identifiers and paths: lexical search's
    assert chunk("message/assistant", "  \n ") is None
    assert chunk("session/title", "Payment   retries\n\ntuned") == "Payment retries tuned"
