"""The allow-list FTS query compiler, against a real FTS5 table with the index's tokenizer."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.store import schema
from worker.store.errors import InvalidQuery
from worker.store.fts_query import compile_query, has_tokens

WS = schema.workspace_token("/w/fts")
KNOWN_MESSAGES = (
    "The query is empty",
    "The query has no searchable words",
    "A query needs at least one word that is not excluded with -",
)


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    schema.create(conn)
    try:
        yield conn
    finally:
        conn.close()


def put(conn: sqlite3.Connection, body: str) -> int:
    """One event row and its FTS row, as the writer stores them."""
    cur = conn.execute(
        "INSERT INTO events (session_id, seq, event_id, type, surface, time_ms, stream_seq,"
        " ws, body, raw_json) VALUES ('s', (SELECT coalesce(max(seq), 0) + 1 FROM events),"
        " 'e', 't', 'user', 0, 0, ?, ?, '{}')",
        (WS, body),
    )
    rowid = cur.lastrowid
    assert rowid is not None
    conn.execute("INSERT INTO events_fts (rowid, ws, body) VALUES (?, ?, ?)", (rowid, WS, body))
    return rowid


def matches(conn: sqlite3.Connection, expression: str) -> set[int]:
    """Rows matching ``expression`` through the provider's exact wrapping."""
    rows = conn.execute(
        "SELECT rowid FROM events_fts WHERE events_fts MATCH ?",
        (f'ws:"{WS}" AND body:({expression})',),
    ).fetchall()
    return {r[0] for r in rows}


def fts5_tokens(conn: sqlite3.Connection, text: str) -> int:
    """How many tokens FTS5 itself finds in ``text`` (an independent oracle)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS oracle"
        f" USING fts5(body, tokenize = '{schema.TOKENIZER}')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS oracle_vocab USING fts5vocab(oracle, 'instance')"
    )
    conn.execute("DELETE FROM oracle")
    conn.execute("INSERT INTO oracle (rowid, body) VALUES (1, ?)", (text.replace("\x00", " "),))
    return int(conn.execute("SELECT count(*) FROM oracle_vocab").fetchone()[0])


# -- the syntax, case by case --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("flaky test", '"flaky" AND "test"'),
        ("a b OR c d", '"a" AND ("b" OR "c") AND "d"'),
        ("a OR b OR c", '("a" OR "b" OR "c")'),
        ('"connection refused" retry', '"connection refused" AND "retry"'),
        ('"unbalanced to the end', '"unbalanced to the end"'),
        ("foo -bar", '("foo") NOT "bar"'),
        ('foo -"a phrase" -x', '("foo") NOT "a phrase" NOT "x"'),
        ("src/worker/store.py", '"src/worker/store.py"'),
        ('foo.bar("x")', '"foo.bar(""x"")"'),
        ("NEAR(a b) AND c NOT d", '"NEAR(a" AND "b)" AND "c" AND "NOT" AND "d"'),
        ("refund AND ledger", '"refund" AND "ledger"'),  # a bare AND is implied, dropped
        ('"AND" and', '"AND" AND "and"'),  # quoted or lower case, it is a word
        ("a* ^b col:c {x}", '"a*" AND "^b" AND "col:c" AND "{x}"'),
        ("or a", '"or" AND "a"'),  # lower-case or is a word
        ("a OR", '"a"'),  # dangling OR has nothing to join
        ("OR a", '"a"'),
        ("a OR OR b", '("a" OR "b")'),
        ("a OR -b OR c", '("a" AND "c") NOT "b"'),
        ("a ! ... b", '"a" AND "b"'),  # punctuation-only terms are dropped
        ("flaky-test", '"flaky-test"'),  # a dash inside a word is text
        ("a\x00b", '"a" AND "b"'),  # NUL would end FTS5's string early
        ('x"y', '"x""y"'),  # a quote inside a word is literal
        ('"a"b', '"a" AND "b"'),
    ],
)
def test_compiles(text: str, expected: str) -> None:
    assert compile_query(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The query is empty"),
        ("   \t\n", "The query is empty"),
        ("!!! ... ::", "The query has no searchable words"),
        ('"" "  "', "The query has no searchable words"),
        ("OR", "The query has no searchable words"),
        ("OR OR", "The query has no searchable words"),
        ("* ^ - --", "The query has no searchable words"),
        ("\u0301", "The query has no searchable words"),  # a lone accent folds to nothing
        ("-foo", "A query needs at least one word that is not excluded with -"),
        ('-foo -"bar baz" OR', "A query needs at least one word that is not excluded with -"),
    ],
)
def test_nothing_searchable_is_a_precise_error(text: str, message: str) -> None:
    with pytest.raises(InvalidQuery) as info:
        compile_query(text)
    assert str(info.value).startswith(message)


def test_every_ascii_character_is_classified_like_fts5(db: sqlite3.Connection) -> None:
    for code in range(1, 128):
        char = chr(code)
        assert has_tokens(char) == (fts5_tokens(db, char) > 0), repr(char)


@pytest.mark.parametrize(
    "char", ["é", "\u0301", "\U0001e900", "\ue000", "²", "ⅷ", "٣", "_", "\u00ad", "\u200d", "€"]
)
def test_non_ascii_classified_like_fts5(db: sqlite3.Connection, char: str) -> None:
    assert has_tokens(char) == (fts5_tokens(db, char) > 0)


def test_identifiers_and_paths_are_findable(db: sqlite3.Connection) -> None:
    doc = put(db, "Traceback: src/worker/store.py line 3 in flaky_test: foo.bar() failed")
    other = put(db, "py src worker store, test flaky, bar foo: the same words apart")
    assert matches(db, compile_query("src/worker/store.py")) == {doc}
    assert matches(db, compile_query("flaky_test")) == {doc}
    assert matches(db, compile_query("foo.bar()")) == {doc}
    assert {doc, other} <= matches(db, compile_query("store worker"))
    assert doc not in matches(db, compile_query("store -traceback"))
    assert other in matches(db, compile_query("store -traceback"))


def test_or_and_exclusion_semantics(db: sqlite3.Connection) -> None:
    ab = put(db, "alpha bravo")
    ac = put(db, "alpha charlie")
    bc = put(db, "bravo charlie")
    assert matches(db, compile_query("alpha bravo OR charlie")) >= {ab, ac}
    assert bc not in matches(db, compile_query("alpha bravo OR charlie"))
    assert matches(db, compile_query("charlie -alpha")) >= {bc}
    assert ac not in matches(db, compile_query("charlie -alpha"))
    assert matches(db, compile_query('"alpha charlie"')) >= {ac}
    assert ab not in matches(db, compile_query('"alpha charlie"'))


def test_many_terms_and_exclusions_stay_valid(db: sqlite3.Connection) -> None:
    doc = put(db, " ".join(f"w{i}" for i in range(300)))
    assert doc in matches(db, compile_query(" ".join(f"w{i}" for i in range(300))))
    excluded = " ".join(f"-x{i}" for i in range(1000))
    assert doc in matches(db, compile_query(f"w1 {excluded}"))
    assert doc in matches(db, compile_query(" OR ".join(f"w{i}" for i in range(1000))))


# -- properties over arbitrary input -------------------------------------------------------

SYNTAX = st.sampled_from(
    ['"', "(", ")", "*", "^", ":", "-", "+", "NEAR", "AND", "OR", "NOT", "{", "}", " ", "\x00",
     "a", "b", "é", "_", "/", ".", "\u0301", "ws", "body", "NEAR(", "''", "\\"]
)  # fmt: skip
ANY_TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=60),
    st.lists(SYNTAX, max_size=25).map("".join),
    st.lists(SYNTAX, max_size=12).map(" ".join),
)
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(text=ANY_TEXT)
def test_no_input_produces_an_sqlite_error(db: sqlite3.Connection, text: str) -> None:
    try:
        expression = compile_query(text)
    except InvalidQuery as exc:
        assert str(exc).startswith(KNOWN_MESSAGES)
        return
    matches(db, expression)  # raises sqlite3.OperationalError on any syntax problem


@SETTINGS
@given(text=ANY_TEXT)
def test_text_without_tokens_is_refused(db: sqlite3.Connection, text: str) -> None:
    if fts5_tokens(db, text) == 0:
        with pytest.raises(InvalidQuery):
            compile_query(text)


OPERATORS = frozenset({"OR", "AND"})
WORD = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lo", "Nd"), max_codepoint=0x2FFF),
    min_size=1,
    max_size=8,
).filter(lambda w: w not in OPERATORS)
# Bare upper-case OR and AND are operators, not text.
PLAIN_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters='"-'), max_size=60
).filter(lambda t: not OPERATORS.intersection(t.split()))


@SETTINGS
@given(words=st.lists(WORD, min_size=1, max_size=6), joiner=st.sampled_from([" ", ".", "/", "_"]))
def test_a_document_with_the_words_is_found(
    db: sqlite3.Connection, words: list[str], joiner: str
) -> None:
    doc = put(db, "prefix " + joiner.join(words) + " suffix")
    assert doc in matches(db, compile_query(joiner.join(words)))
    assert doc in matches(db, compile_query(" ".join(reversed(words))))


@SETTINGS
@given(text=PLAIN_TEXT)
def test_plain_text_finds_itself(db: sqlite3.Connection, text: str) -> None:
    """Never "no results" for terms that exist: any text without syntax finds a copy."""
    try:
        expression = compile_query(text)
    except InvalidQuery:
        assert fts5_tokens(db, text) == 0
        return
    doc = put(db, text)
    assert doc in matches(db, expression)
