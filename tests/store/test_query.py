"""The allow-list query compiler and the text analysis, against a real search index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.store.errors import InvalidQuery
from worker.store.files import schema
from worker.store.index.writer import WriterCore
from worker.store.search import analysis
from worker.store.search.query import QueryPlan, compile_query
from worker.store.search.search_reader import QueryBuilder, SearchIndexReader, scope_clauses, top
from worker.store.search.search_schema import search_index_path

CWD = "/w/query"
WS = schema.workspace_token(CWD)
KNOWN_MESSAGES = (
    "The query is empty",
    "The query has no searchable words",
    "A query needs at least one word that is not excluded with -",
)


class TinyIndex:
    """Events written straight into the store, then taken by the real search follower."""

    def __init__(self, path: Path) -> None:
        self.core = WriterCore.open(path, text_cap_bytes=65536, max_event_bytes=1 << 20)
        self.reader = SearchIndexReader(search_index_path(path))
        self.core.conn.run(
            "INSERT INTO sessions (session_id, cwd, ws, availability, last_seq, event_count)"
            " VALUES ('s', ?, ?, 'live', 0, 0)",
            (CWD, WS),
        )
        self.seq = 0

    def put(self, body: str) -> int:
        self.seq += 1
        self.core.conn.run(
            "INSERT INTO events (session_id, seq, event_id, type, surface, time_ms,"
            " stream_seq, doc) VALUES ('s', ?, 'e', 't', 'user', 0, ?, ?)",
            (self.seq, self.seq, self.core.packer.pack(json.dumps({"payload": {"text": body}}))),
        )
        event_id = self.core.conn.value("SELECT last_insert_rowid()")
        self.core.conn.run("UPDATE meta SET value = ? WHERE key = 'stream_seq'", (self.seq,))
        assert event_id is not None
        self.core.catch_up_search()
        return int(event_id)

    def matches(self, text: str, *, partial: bool = False) -> set[int]:
        plan = compile_query(text)
        self.reader.refresh()
        view = self.reader.view()
        builder = QueryBuilder(plan, WS, view)
        scope, _ = scope_clauses(as_of_seq=self.seq)
        query = builder.partial(scope) if partial else builder.all_words(scope)
        return {c.event_id for c in top(view.searcher, query, 10_000)}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyIndex]:
    tiny = TinyIndex(tmp_path_factory.mktemp("query") / "index.sqlite")
    try:
        yield tiny
    finally:
        tiny.core.close()


def texts(plan: QueryPlan) -> tuple[list[list[str]], list[str]]:
    return [[t.text for t in g] for g in plan.groups], [t.text for t in plan.excluded]


# -- the syntax, case by case --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "groups", "excluded"),
    [
        ("flaky test", [["flaky"], ["test"]], []),
        ("a b OR c d", [["a"], ["b", "c"], ["d"]], []),
        ("a OR b OR c", [["a", "b", "c"]], []),
        ('"connection refused" retry', [["connection refused"], ["retry"]], []),
        ('"unbalanced to the end', [["unbalanced to the end"]], []),
        ("foo -bar", [["foo"]], ["bar"]),
        ('foo -"a phrase" -x', [["foo"]], ["a phrase", "x"]),
        ("NEAR(a b) AND c NOT d", [["NEAR(a"], ["b)"], ["c"], ["NOT"], ["d"]], []),
        ("refund AND ledger", [["refund"], ["ledger"]], []),  # a bare AND is implied
        ("or a", [["or"], ["a"]], []),
        ("a OR", [["a"]], []),
        ("OR a", [["a"]], []),
        ("a OR OR b", [["a", "b"]], []),
        ("a OR -b OR c", [["a"], ["c"]], ["b"]),
        ("a ! ... b", [["a"], ["b"]], []),
        ("a\x00b", [["a"], ["b"]], []),
    ],
)
def test_compiles(text: str, groups: list[list[str]], excluded: list[str]) -> None:
    assert texts(compile_query(text)) == (groups, excluded)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The query is empty"),
        ("   \t\n", "The query is empty"),
        ("!!! ... ::", "The query has no searchable words"),
        ('"" "  "', "The query has no searchable words"),
        ("OR", "The query has no searchable words"),
        ("* ^ - --", "The query has no searchable words"),
        ("\u0301", "The query has no searchable words"),
        ("-foo", "A query needs at least one word that is not excluded with -"),
        ('-foo -"bar baz" OR', "A query needs at least one word that is not excluded with -"),
    ],
)
def test_nothing_searchable_is_a_precise_error(text: str, message: str) -> None:
    with pytest.raises(InvalidQuery) as info:
        compile_query(text)
    assert str(info.value).startswith(message)


def test_function_words_are_never_required() -> None:
    plan = compile_query("where did we fix the flaky date parsing test")
    assert [t.text for g in plan.required for t in g] == ["fix", "flaky", "date", "parsing", "test"]
    assert plan.natural_language
    only = compile_query("where did we")  # nothing else: then they are the content
    assert [t.text for g in only.required for t in g] == ["where", "did", "we"]
    assert not compile_query("flaky_test").natural_language


# -- analysis ------------------------------------------------------------------------------


def test_identifiers_split_into_stemmed_parts() -> None:
    (word,) = analysis.words("SqliteVectorIndex")
    assert word.exact == "sqlitevectorindex"
    assert word.derived == ("sqlite", "vector", "index")
    (word,) = analysis.words("max_attempts")
    assert word.derived == ("max", "attempt")
    (word,) = analysis.words("HTTPServer")
    assert word.derived == ("http", "server")
    assert [w.exact for w in analysis.words("src/worker/store.py")] == [
        "src",
        "worker",
        "store",
        "py",
    ]


def test_cjk_runs_become_bigrams_and_word_forms_stem() -> None:
    (word,) = analysis.words("这个测试在持续集成里不稳定")
    assert word.cjk and "测试" in word.derived
    assert [w.exact for w in analysis.words("このテストはCIで")] == ["このテストは", "ci", "で"]
    assert analysis.words("analyzed")[0].derived == analysis.words("analyze")[0].derived
    assert analysis.words("тестов")[0].derived == analysis.words("тесты")[0].derived
    assert analysis.words("Café")[0].exact == "cafe"


# -- matching against the real index -------------------------------------------------------


def test_identifiers_paths_and_forms_are_findable(index: TinyIndex) -> None:
    doc = index.put("Traceback: src/worker/store.py line 3 in flaky_test: foo.bar() failed")
    other = index.put("py src worker store, test flaky, bar foo: the same words apart")
    ident = index.put("we built SqliteVectorIndex with maxAttempts set to three")
    assert index.matches("src/worker/store.py") == {doc}
    assert index.matches("flaky_test") == {doc}
    assert index.matches("foo.bar()") == {doc}
    assert {doc, other} <= index.matches("store worker")
    assert doc not in index.matches("store -traceback")
    assert other in index.matches("store -traceback")
    assert index.matches("SqliteVector") == {ident}
    assert index.matches("attempts") == {ident}


def test_cjk_words_inside_unspaced_text(index: TinyIndex) -> None:
    zh = index.put("这个测试在持续集成里不稳定")
    ja = index.put("このテストはCIで不安定です")
    assert index.matches("测试") == {zh}
    assert index.matches("テスト") == {ja}
    assert index.matches("持续集成") == {zh}
    assert index.matches('"这个测试在持续集成里不稳定"') == {zh}


def test_or_exclusion_and_partial_semantics(index: TinyIndex) -> None:
    ab = index.put("alpha bravo")
    ac = index.put("alpha charlie")
    bc = index.put("bravo charlie")
    assert index.matches("alpha bravo OR charlie") >= {ab, ac}
    assert bc not in index.matches("alpha bravo OR charlie")
    assert bc in index.matches("charlie -alpha")
    assert ac not in index.matches("charlie -alpha")
    assert ac in index.matches('"alpha charlie"')
    assert ab not in index.matches('"alpha charlie"')
    assert index.matches("alpha bravo zulu") == set()
    assert {ab, ac, bc} <= index.matches("alpha bravo zulu", partial=True)


def test_many_terms_and_exclusions_stay_valid(index: TinyIndex) -> None:
    doc = index.put(" ".join(f"w{i}" for i in range(300)))
    assert doc in index.matches(" ".join(f"w{i}" for i in range(300)))
    excluded = " ".join(f"-x{i}" for i in range(1000))
    assert doc in index.matches(f"w1 {excluded}")
    assert doc in index.matches(" OR ".join(f"w{i}" for i in range(1000)))


# -- properties over arbitrary input -------------------------------------------------------

SYNTAX = st.sampled_from(
    ['"', "(", ")", "*", "^", ":", "-", "+", "NEAR", "AND", "OR", "NOT", "{", "}", " ", "\x00",
     "a", "b", "é", "_", "/", ".", "\u0301", "ws", "body", "NEAR(", "''", "\\", "测试", "テ"]
)  # fmt: skip
ANY_TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=60),
    st.lists(SYNTAX, max_size=25).map("".join),
    st.lists(SYNTAX, max_size=12).map(" ".join),
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
OPERATORS = frozenset({"OR", "AND"})
PLAIN_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters='"-'), max_size=60
).filter(lambda t: not OPERATORS.intersection(t.split()))


@SETTINGS
@given(text=ANY_TEXT)
def test_no_input_breaks_the_engine(index: TinyIndex, text: str) -> None:
    try:
        compile_query(text)
    except InvalidQuery as exc:
        assert str(exc).startswith(KNOWN_MESSAGES)
        return
    index.matches(text)  # raises on any query the engine refuses
    index.matches(text, partial=True)


@SETTINGS
@given(text=PLAIN_TEXT)
def test_plain_text_finds_itself(index: TinyIndex, text: str) -> None:
    """Never "no results" for words that exist: any text without syntax finds a copy."""
    try:
        compile_query(text)
    except InvalidQuery:
        assert not analysis.words(text)
        return
    doc = index.put(text)
    assert doc in index.matches(text)


# -- pasted identifiers (issue 42) ---------------------------------------------------------

# Key-shaped strings, built here (no real key): one ``\w`` run longer than a word.
STRIPE_LIKE = "sk_live_51" + "Qx7Lm2Zp" * 12
GITHUB_LIKE = "github_pat_11AB2CD3EF0" + "_" + "k9Tz" * 20
DIGITALOCEAN_LIKE = "dop_v1_" + "3f9a0c7e" * 8
BASE64_LIKE = "QUJD" * 40


@pytest.mark.parametrize("token", [STRIPE_LIKE, GITHUB_LIKE, DIGITALOCEAN_LIKE, BASE64_LIKE])
def test_a_pasted_identifier_of_any_length_is_a_searchable_word(token: str) -> None:
    plan = compile_query(token)
    (word,) = [w for g in plan.groups for t in g for w in t.words]
    assert word.exact == token.lower()[: analysis.MAX_WHOLE_CHARS]
    assert word.derived  # its parts
    assert compile_query(f'"{token}"').groups


def test_a_long_words_parts_are_its_derived_words() -> None:
    (word,) = analysis.words(DIGITALOCEAN_LIKE)
    assert word.derived[:2] == ("dop", "v1")
    assert word.derived[2:] == analysis.words("3f9a0c7e" * 8)[0].derived
    (word,) = analysis.words(GITHUB_LIKE)
    assert word.derived[:2] == ("github", "pat")
    assert word.derived[-1] == ("k9tz" * 20)  # a part past the word length: one token
    (word,) = analysis.words("x" * 5000)
    assert len(word.exact) == analysis.MAX_WHOLE_CHARS


def test_pasted_identifiers_are_found_whole_and_by_parts(index: TinyIndex) -> None:
    stripe = index.put(f"export STRIPE_KEY={STRIPE_LIKE} then restart")
    github = index.put(f"the token {GITHUB_LIKE} expired")
    ocean = index.put(f"DO_TOKEN={DIGITALOCEAN_LIKE}")
    blob = index.put(f"payload: {BASE64_LIKE}==")
    assert index.matches(STRIPE_LIKE) == {stripe}
    assert index.matches(f'"{STRIPE_LIKE}"') == {stripe}
    assert index.matches("sk_live") == {stripe}
    assert index.matches(GITHUB_LIKE) == {github}
    assert index.matches("github_pat") == {github}
    assert index.matches("k9Tz" * 20) == {github}
    assert index.matches(DIGITALOCEAN_LIKE) == {ocean}
    assert index.matches("3f9a0c7e" * 8) == {ocean}
    assert index.matches(BASE64_LIKE) == {blob}


@pytest.mark.parametrize(
    ("term", "bare"),
    [
        ("Caroline's", "Caroline"),
        ("grandma’s", "grandma"),
        ("parents'", "parents"),
        ("Jon's?", "Jon?"),
        ("don't", "don't"),
        ("O'Neil", "O'Neil"),
        ("it's", "it"),
    ],
)
def test_a_possessive_term_is_its_owner(term: str, bare: str) -> None:
    assert analysis.without_possessive(term) == bare


def test_a_russian_plural_counts_its_other_plural_forms_as_exact() -> None:
    (plural,) = analysis.words("тесты")
    assert "тестов" in analysis.exact_forms(plural)
    assert "тест" not in analysis.exact_forms(plural)
    (single,) = analysis.words("тест")
    assert analysis.exact_forms(single) == ("тест",)
    (english,) = analysis.words("tests")
    assert analysis.exact_forms(english) == ("tests",)
