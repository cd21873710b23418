"""Fuzzed tool arguments against a real Worker over NATS, real SQLite.

Over 400 lines: every argument of every tool, hostile, in one place.

Three properties, each for every tool:

- arguments generated from the tool's own JSON Schema (from the manifest) and arbitrary
  JSON (wrong types, ~100 KB strings, deep nesting, unicode, NUL, FTS5 syntax everywhere)
  always get an ok reply or a known code with a readable message, never TOOL_FAILED, never
  SQLite/FTS5 error text, and leave no error-level or unexpected service-failure log line;
- a word that is indexed in the caller's workspace, wrapped in hostile syntax, is always
  found (never "no results").
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from contracts.errors import ErrorCode
from contracts.subjects import TOOL_NAMES
from tests.hostile._harness import (
    A_ROOT,
    A_SESSIONS,
    B_SESSIONS,
    CALLER,
    MISSING,
    NO_MATCH_MARKERS,
    Corpus,
    LiveWorker,
    LogWatch,
    LoopThread,
    encode,
    live_worker,
    reply_problems,
    two_workspace_corpus,
)
from worker.tools.input import MAX_SEQ

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

EXAMPLES = 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    database=None,
)

CORPUS: Corpus = two_workspace_corpus()
KNOWN_IDS = (*A_SESSIONS, *B_SESSIONS, MISSING)
WORDS = tuple(sorted(CORPUS.words))
GOOD_ARGUMENTS: dict[str, dict[str, Any]] = {
    "session_search": {"query": "zebrafish"},
    "session_event_search": {"query": "zebrafish", "session_id": A_ROOT},
    "session_trace": {"session_id": A_ROOT},
    "session_event_trace": {"session_id": A_ROOT, "seq": 3},
    "session_event_read": {"session_id": A_ROOT, "seq": 3},
}

# FTS5 syntax and SQL-looking fragments, to be placed in every position.
FTS_FRAGMENTS = (
    '"',
    '""',
    "'",
    "(",
    ")",
    "()",
    "NEAR",
    "NEAR(",
    "NEAR/3",
    "*",
    "^",
    ":",
    "-",
    "+",
    "AND",
    "OR",
    "NOT",
    "@",
    "#",
    "=",
    "&",
    "/",
    "?",
    "{",
    "}",
    "[",
    "]",
    "\\",
    "%",
    "_",
    ";",
    "--",
    "/*",
    "*/",
    "body:",
    "ws:",
    "rowid",
    "MATCH",
    "'); DROP TABLE events; --",
    "\x00",
    "\u0301",
    "é",
    "\u200b",
    "日本語",
    "🦀",
)
HOSTILE_CHARS = "\"'()*^:-+@#=&/?{}[]\\%_;.,!~<>|`$\x00 \t\n"


def hostile_text(max_pieces: int = 12) -> st.SearchStrategy[str]:
    piece = st.one_of(
        st.sampled_from(FTS_FRAGMENTS),
        st.sampled_from(WORDS),
        st.text(alphabet=HOSTILE_CHARS, max_size=6),
        st.text(max_size=8),
    )
    joiner = st.sampled_from(("", " ", "  ", "\t"))
    return st.tuples(st.lists(piece, max_size=max_pieces), joiner).map(
        lambda parts: parts[1].join(parts[0])
    )


def huge_text() -> st.SearchStrategy[str]:
    """~50-120 KB of text: words, FTS syntax and NUL bytes repeated."""
    return st.tuples(
        st.integers(min_value=50_000, max_value=120_000),
        st.sampled_from(("zebrafish ", 'NEAR("x" ', "\x00^*:", "é日本 ", "(((( ", "- - -")),
    ).map(lambda t: (t[1] * (t[0] // len(t[1]) + 1))[: t[0]])


# -- a strategy builder from a tool's JSON Schema ------------------------------------------


def _timestamps() -> st.SearchStrategy[str]:
    zones = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
        lambda minutes: timezone(timedelta(minutes=minutes))
    )
    instants = st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.one_of(st.just(UTC), zones),
    )
    near = st.datetimes(
        min_value=datetime(2026, 11, 30),
        max_value=datetime(2026, 12, 2),
        timezones=st.just(UTC),
    )
    return st.one_of(instants, near).map(lambda d: d.isoformat().replace("+00:00", "Z"))


def from_schema(schema: Mapping[str, Any], name: str = "") -> st.SearchStrategy[Any]:
    """Values valid for ``schema`` (the subset pydantic emits: types, enums, formats,
    patterns, lengths, bounds, arrays and closed objects), biased toward the corpus."""
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {key: from_schema(sub, key) for key, sub in properties.items() if key in required},
            optional={
                key: from_schema(sub, key) for key, sub in properties.items() if key not in required
            },
        )
    if kind == "array":
        items = from_schema(schema.get("items", {}), name)
        return st.lists(items, max_size=min(int(schema.get("maxItems", 6)), 6))
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low = schema.get("minimum")
        high = schema.get("maximum")
        small = st.integers(min_value=low if low is not None else -5, max_value=12)
        if high is not None:
            small = st.integers(min_value=low if low is not None else -5, max_value=high)
        # The edges of SQLite's 64-bit integers, which JSON (and the schema) allow past.
        edges = [2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30]
        edges = [n for n in edges if (low is None or n >= low) and (high is None or n <= high)]
        choices = [small, st.integers(min_value=low, max_value=high)]
        if edges:
            choices.append(st.sampled_from(edges))
        return st.one_of(*choices)
    if kind == "string":
        if schema.get("format") == "date-time":
            return _timestamps()
        if "pattern" in schema:
            return st.one_of(
                st.sampled_from(KNOWN_IDS),
                st.from_regex(schema["pattern"], fullmatch=True),
            )
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", 200))
        if name == "query":
            return hostile_text().filter(lambda s: low <= len(s) <= high)
        return st.one_of(
            st.sampled_from(("message/assistant", "tool/result", "session/title", "compaction")),
            st.text(min_size=low, max_size=min(high, 40)),
        )
    raise AssertionError(f"schema construct the builder does not know: {schema}")


# -- arbitrary JSON ------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**66),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(KNOWN_IDS),
    hostile_text(),
    st.text(),
)
ARBITRARY_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def arbitrary_arguments(properties: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    known = sorted(properties)
    value = st.one_of(ARBITRARY_JSON, huge_text())
    return st.one_of(
        # The right names with wrong (or right) values.
        st.dictionaries(st.sampled_from(known), value, max_size=len(known)),
        # Unknown names beside known ones: a model-supplied workspace or cursor.
        st.dictionaries(
            st.sampled_from((*known, "cwd", "workspace", "cursor", "limit", "offset", "")),
            value,
            max_size=4,
        ),
        # Not an object at all.
        ARBITRARY_JSON,
    )


def deep_nesting(depth: int, key: str) -> bytes:
    """A request whose argument is nested ``depth`` levels (past orjson's own limits)."""
    head = b'{"request_id":"r-deep","execution":{"agent":{"session_id":"' + CALLER.encode()
    head += b'"}},"arguments":{"' + key.encode() + b'":'
    return head + b"[" * depth + b'"x"' + b"]" * depth + b"}}"


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def logs() -> Iterator[LogWatch]:
    with LogWatch() as watch:
        yield watch


@pytest.fixture(scope="module")
def live(
    loop: LoopThread, logs: LogWatch, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveWorker]:
    with live_worker(
        loop, nats_url, tmp_path_factory.mktemp("hostile-args"), events=CORPUS.events
    ) as worker:
        yield worker


@pytest.fixture(scope="module")
def schemas(live: LiveWorker, loop: LoopThread) -> dict[str, dict[str, Any]]:
    async def manifest() -> dict[str, Any]:
        msg = await live.nc.request(live.subjects.manifest, b"", timeout=10)
        return dict(orjson.loads(msg.data))

    tools = loop.run(manifest())["tools"]
    return {tool["name"]: tool["input_schema"] for tool in tools}


# -- the checks ----------------------------------------------------------------------------


def check_argument_fuzz(
    live: LiveWorker, loop: LoopThread, logs: LogWatch, tool: str, arguments: Any
) -> str:
    """Send one fuzzed request and check its reply; its outcome (``ok`` or the code)."""
    assume(live.fits(arguments))
    mark = logs.mark()
    reply = loop.run(live.call(tool, arguments, caller=CALLER, step_start_seq=CORPUS.caller_step))
    request_text = encode(arguments).decode()
    assert reply_problems(reply, request_text) == [], (tool, arguments, reply.body)
    # Bad arguments are the model's fault, never the tool's.
    assert reply.code != ErrorCode.TOOL_FAILED.value, (tool, arguments)
    assert logs.unhandled(mark) == [], (tool, arguments)
    return "ok" if reply.ok else str(reply.code)


def outcomes_line(outcomes: Counter[str]) -> str:
    return ", ".join(f"{code} {n}" for code, n in outcomes.most_common())


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_schema_generated_arguments_get_a_known_reply(
    tool: str,
    live: LiveWorker,
    loop: LoopThread,
    logs: LogWatch,
    schemas: dict[str, dict[str, Any]],
) -> None:
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(arguments=from_schema(schemas[tool]))
    def run(arguments: Any) -> None:
        outcomes[check_argument_fuzz(live, loop, logs, tool, arguments)] += 1

    run()
    seen = outcomes.total()
    print(f"\n{tool}: {seen} schema-generated requests: {outcomes_line(outcomes)}")
    assert seen >= EXAMPLES // 2


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_arbitrary_json_arguments_get_a_known_reply(
    tool: str,
    live: LiveWorker,
    loop: LoopThread,
    logs: LogWatch,
    schemas: dict[str, dict[str, Any]],
) -> None:
    properties = schemas[tool].get("properties", {})
    sent: list[int] = []
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(arguments=arbitrary_arguments(properties))
    def run(arguments: Any) -> None:
        outcomes[check_argument_fuzz(live, loop, logs, tool, arguments)] += 1
        sent.append(len(encode(arguments)))

    run()
    print(
        f"\n{tool}: {len(sent)} arbitrary requests, largest arguments {max(sent)} bytes:"
        f" {outcomes_line(outcomes)}"
    )
    assert len(sent) >= EXAMPLES // 2


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_deep_nesting_and_raw_garbage_get_invalid_arguments(
    tool: str, live: LiveWorker, loop: LoopThread, logs: LogWatch
) -> None:
    mark = logs.mark()
    bodies = [
        deep_nesting(200, "query"),
        deep_nesting(5000, "session_id"),
        b"",
        b"\x00\xff\xfe not json",
        b'{"request_id": "r-1", "arguments": {"query": "\\ud800"}}',
        b'{"request_id": "r-2", "execution": {"agent": {"session_id": "s-a-caller"}},'
        b' "arguments": {"seq": 18446744073709551616}}',
        b"[" * 100_000,
    ]
    for data in bodies:
        reply = loop.run(live.call_raw(tool, data))
        assert reply_problems(reply, "") == [], (tool, data[:80], reply.body)
        assert reply.code == ErrorCode.INVALID_ARGUMENTS.value, (tool, data[:80], reply.body)
    assert logs.unhandled(mark) == []


# -- terms that exist are found, whatever syntax wraps them ---------------------------------

# Characters that make no tokens; '-' and '"' are left out of what touches the word (a
# leading '-' excludes a term, and an unbalanced quote would swallow it into a phrase).
_WRAP = "()*^:@#=&/?'{}[]+.,;!~<>|`$%\\"
_NOISE = st.one_of(
    st.text(alphabet=_WRAP + "-", min_size=1, max_size=4),
    st.sampled_from(("OR", "-", "--", "-qqqxyzzy", '"()"', '"*:^"', "\x00", "«»", "…")),
)


@st.composite
def wrapped_word(draw: st.DrawFn) -> tuple[str, str]:
    word = draw(st.sampled_from(WORDS))
    before = draw(st.text(alphabet=_WRAP, max_size=4))
    after = draw(st.text(alphabet=_WRAP + "-", max_size=4))
    # Case variants only for ASCII: the tokenizer folds case by simple rules, not Python's.
    variants = (word, word.upper(), word.capitalize()) if word.isascii() else (word,)
    term = before + draw(st.sampled_from(variants)) + after
    if draw(st.booleans()):
        term = '"' + term + '"'
    if draw(st.booleans()):
        term = term + " OR " + draw(st.sampled_from(("nothingsuchzz", "NEAR(", "^absent*")))
    noise_before = draw(st.lists(_NOISE, max_size=3))
    noise_after = draw(st.lists(_NOISE, max_size=3))
    return word, " ".join([*noise_before, term, *noise_after])


@FUZZ
@given(case=wrapped_word())
def test_an_indexed_word_in_hostile_syntax_is_found(
    case: tuple[str, str], live: LiveWorker, loop: LoopThread, logs: LogWatch
) -> None:
    word, query = case
    session_id, seq = CORPUS.words[word]
    mark = logs.mark()
    found = loop.run(
        live.call(
            "session_search", {"query": query}, caller=CALLER, step_start_seq=CORPUS.caller_step
        )
    )
    assert found.ok, (query, found.body)
    assert session_id in found.text, (query, found.text)
    assert not any(marker in found.text for marker in NO_MATCH_MARKERS), (query, found.text)

    inside = loop.run(
        live.call(
            "session_event_search",
            {"query": query, "session_id": session_id},
            caller=CALLER,
            step_start_seq=CORPUS.caller_step,
        )
    )
    assert inside.ok, (query, inside.body)
    assert f"seq {seq} " in inside.text, (query, inside.text)
    assert logs.unhandled(mark) == []


def test_the_corpus_words_are_distinct_per_workspace() -> None:
    # The found-property relies on each word sitting in one known alpha event.
    assert len(set(CORPUS.words.values())) == len(CORPUS.words)
    assert all(session in A_SESSIONS and session != CALLER for session, _ in CORPUS.words.values())
    assert A_ROOT in {session for session, _ in CORPUS.words.values()}
    assert any(not word.isascii() for word in WORDS)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_a_request_at_the_payload_limit_is_refused_and_the_worker_keeps_serving(
    tool: str, live: LiveWorker, loop: LoopThread, logs: LogWatch
) -> None:
    """A search is re-published to the work queue with headers: a body just under the
    server's max_payload must be refused politely, not get the worker's connection closed."""
    mark = logs.mark()
    limit = live.nc.max_payload
    sizes = (limit - 600, limit - 200, limit - 40)
    for size in sizes:
        prefix: dict[str, Any] = {
            "request_id": "r-" + uuid.uuid4().hex[:12],
            "execution": {"agent": {"session_id": CALLER}},
        }
        skeleton = encode({**prefix, "arguments": {"query": ""}})
        data = encode({**prefix, "arguments": {"query": "z" * (size - len(skeleton))}})
        assert len(data) == size
        reply = loop.run(live.call_raw(tool, data, within=15))
        assert reply.code == ErrorCode.INVALID_ARGUMENTS.value, (tool, size, reply.body)
        assert reply_problems(reply, "") == []
    still = loop.run(
        live.call(tool, GOOD_ARGUMENTS[tool], caller=CALLER, step_start_seq=CORPUS.caller_step)
    )
    assert still.ok, still.body
    assert live.nc.is_connected
    assert logs.unhandled(mark) == []
    print(f"\n{tool}: bodies of {sizes} bytes (max_payload {limit}) refused INVALID_ARGUMENTS")


@pytest.mark.parametrize("seq", [MAX_SEQ - 1, MAX_SEQ, 2**63 - 1, 2**63, 2**64 - 1, 2**64])
@pytest.mark.parametrize("tool", ["session_event_trace", "session_event_read"])
def test_a_seq_past_sqlite_integers_is_not_found_or_invalid(
    tool: str, seq: int, live: LiveWorker, loop: LoopThread, logs: LogWatch
) -> None:
    mark = logs.mark()
    arguments: dict[str, Any] = {"session_id": A_ROOT, "seq": seq}
    if tool == "session_event_read":
        arguments.update(before=2, after=2)  # the window's ends are seq -/+ 2
    reply = loop.run(live.call(tool, arguments, caller=CALLER))
    expected = ErrorCode.NOT_FOUND if seq <= MAX_SEQ else ErrorCode.INVALID_ARGUMENTS
    assert reply.code == expected.value, reply.body
    ranged = loop.run(
        live.call(
            "session_event_search",
            {"query": "zebrafish", "session_id": A_ROOT, "from_seq": seq},
            caller=CALLER,
        )
    )
    assert ranged.code in (None, ErrorCode.INVALID_ARGUMENTS.value), ranged.body
    assert logs.unhandled(mark) == []


ENVELOPES: tuple[tuple[str, Any, str | None], ...] = (
    ("agent id too long", {"agent": {"session_id": CALLER, "agent_id": "x" * 200}}, "INVALID"),
    ("session id not a string", {"agent": {"session_id": 5}}, "INVALID"),
    ("session id with a subject wildcard", {"agent": {"session_id": "s-a-*"}}, "INVALID"),
    ("execution not an object", "nope", "INVALID"),
    ("no agent", {"agent": None}, "NO_IDENTITY"),
    ("unknown caller", {"agent": {"session_id": "s-nobody"}}, "NO_IDENTITY"),
    (
        "step_start_seq past 64 bits",
        {"agent": {"session_id": CALLER}, "step_start_seq": 2**64},
        "INVALID",
    ),
    ("deadline past 64 bits", {"agent": {"session_id": CALLER}, "deadline_ms": 2**64 - 1}, None),
    ("a workspace in execution", {"agent": {"session_id": CALLER}, "cwd": "/work/beta"}, "INVALID"),
)


@pytest.mark.parametrize(
    ("name", "execution", "expected"), ENVELOPES, ids=[e[0] for e in ENVELOPES]
)
@pytest.mark.parametrize("tool", ["session_search", "session_event_read"])
def test_a_hostile_envelope_gets_a_known_reply(
    tool: str,
    name: str,
    execution: Any,
    expected: str | None,
    live: LiveWorker,
    loop: LoopThread,
    logs: LogWatch,
) -> None:
    mark = logs.mark()
    data = encode(
        {
            "request_id": "r-" + uuid.uuid4().hex,
            "execution": execution,
            "arguments": GOOD_ARGUMENTS[tool],
        }
    )
    reply = loop.run(live.call_raw(tool, data))
    assert reply_problems(reply, "") == [], (name, reply.body)
    if expected is None:
        assert reply.ok, (name, reply.body)
    else:
        assert reply.code is not None and expected in reply.code, (name, reply.body)
    assert logs.unhandled(mark) == []


@pytest.mark.parametrize("tool", ["session_event_search", "session_event_read"])
def test_a_step_start_past_the_index_expires_at_its_deadline(
    tool: str, live: LiveWorker, loop: LoopThread, logs: LogWatch
) -> None:
    """Read-your-writes waits for the caller's session to reach step_start_seq - 1; a step
    the index never gets to is answered TIMEOUT at the deadline, never left hanging."""
    mark = logs.mark()
    for step in (100, 2**63 - 1):
        data = encode(
            {
                "request_id": "r-" + uuid.uuid4().hex,
                "execution": {
                    "agent": {"session_id": CALLER},
                    "step_start_seq": step,
                    "deadline_ms": int(time.time() * 1000) + 300,
                },
                "arguments": {"query": "warming"} if "search" in tool else {"seq": 1},
            }
        )
        reply = loop.run(live.call_raw(tool, data, within=20))
        assert reply.code == ErrorCode.TIMEOUT.value, (step, reply.body)
    assert logs.unhandled(mark) == []
