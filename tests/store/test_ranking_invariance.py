"""A search's reply is a pure function of the caller's workspace and the request (issue 29).

Over 400 lines: three properties over one generated corpus.

Property test over the generated corpus of ``_ranking_corpus`` (five workspaces over four
partitions, with exact ties built in), on real SQLite and real tantivy through the real
writer. For random requests of both search tools, the text the model reads is the same:

(a) with and without thousands of extra sessions in *other* workspaces;
(b) on one store holding every partition and on the shard holding the caller's;
(c) on replicas of the same stream that ingested it in other batch sizes (other tantivy
    segments and merges), were restarted, restored from a snapshot taken mid-stream and
    caught up, or had their search index deleted and rebuilt from the store; and on a
    store that received a third of the sessions late (another arrival order).

(a) and (b) fail when a score uses index-wide statistics (document count, average length:
other workspaces' documents move them); (c) fails when a tie, a cut or a "strongest
match" falls back on the engine's internal document order. The layouts are built once
per module and only read.
"""

from __future__ import annotations

import difflib
import shutil
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contracts.envelope import AgentIdentity, Execution
from contracts.harness import first_prompt
from contracts.partitions import PartitionSet
from tests.store import _ranking_corpus as corpus
from tests.store._corpus import writer_and_store
from worker.signals import ExecutionSignal
from worker.store.files import snapshot_manifest, snapshot_restore, snapshot_take
from worker.store.index.writer import SqliteIndexWriter
from worker.store.search.search_schema import search_index_path
from worker.store.sqlite import SqliteSessionStore
from worker.store.writer_protocol import IngestItem
from worker.tools import ToolConfig, ToolError, ToolSet, register_tools

in_module_loop = pytest.mark.asyncio(loop_scope="module")

NOISE_SESSIONS: Final = 2000
STREAM: Final = "SESSIONS_RANKING"
CREATED: Final = "2026-12-06T00:00:00+00:00"
# Batch sizes of the replicas: small and uneven, so their segments differ from the
# one-batch layouts' and from each other's.
REPLICA_BATCHES: Final = (1, 120, 7, 500, 40, 250)
RESTORED_BATCHES: Final = (500, 3, 250)

DIFF_LINES: Final = 40  # of a failure's diff, shown

Request = tuple[str, str, dict[str, Any]]  # (tool, caller session, arguments)

BASE: Final = corpus.base_sessions()
SESSIONS_OF: Final = corpus.by_workspace(BASE)
# Sessions whose events are the interesting ones for the event search: long, repeated,
# forked, opening with harness text.
_RICH: Final = {
    cwd: [
        s
        for s in ids
        if any(k in s for k in ("-long-", "-repeat-", "-fork-", "-cjk-", "-harness-", "-template-"))
    ]
    for cwd, ids in SESSIONS_OF.items()
}
_CWD_OF: Final = {s.session_id: s.cwd for s in BASE}
# Each session's lines of text, for queries that quote it.
_LINES: Final = {
    s.session_id: [
        line for ev in s.events for line in corpus.text_of(ev).splitlines() if line.split()
    ]
    for s in BASE
}
# Sessions holding more than a page of identical events.
_REPEATS: Final = {
    cwd: found for cwd, ids in SESSIONS_OF.items() if (found := [s for s in ids if "-repeat-" in s])
}


# -- the layouts ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Layout:
    """Where each workspace's requests go: one tool set per store, by workspace."""

    name: str
    tools: dict[str, ToolSet]

    async def answer(self, request: Request) -> str:
        """The text the model reads, or the error it reads."""
        tool, caller, arguments = request
        cwd = next(cwd for cwd in corpus.WORKSPACES if corpus.caller_of(cwd) == caller)
        definition = self.tools[cwd].get(tool)
        assert definition is not None
        execution = Execution(agent=AgentIdentity(session_id=caller))
        try:
            return await definition.run(arguments, execution, ExecutionSignal())
        except ToolError as error:
            return f"error {error.code.value}: {error.message}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints a failing example's arguments: the name, not every tool schema.
        printer.text(f"<layout {self.name}>")


def _items(events: Sequence[dict[str, Any]]) -> list[IngestItem]:
    """The events as a stream's messages, numbered from 1."""
    return [IngestItem(stream_seq=n, data=orjson.dumps(ev)) for n, ev in enumerate(events, 1)]


def _batches(items: Sequence[IngestItem], sizes: Iterable[int]) -> Iterator[list[IngestItem]]:
    at = 0
    for size in cycle(sizes):
        if at >= len(items):
            return
        yield list(items[at : at + size])
        at += size


async def _apply(
    writer: SqliteIndexWriter, items: Sequence[IngestItem], sizes: Iterable[int]
) -> None:
    for batch in _batches(items, sizes):
        result = await writer.apply(batch)
        assert not result.rejected, result.rejected


async def _open(stack: AsyncExitStack, path: Path) -> SqliteSessionStore:
    _, store = await stack.enter_async_context(writer_and_store(path))
    return store


def _everywhere(name: str, store: SqliteSessionStore) -> Layout:
    tools = register_tools(store, ToolConfig())
    return Layout(name, {cwd: tools for cwd in corpus.WORKSPACES})


async def _one_batch(
    stack: AsyncExitStack, path: Path, items: Sequence[IngestItem]
) -> SqliteSessionStore:
    path.parent.mkdir(parents=True)
    writer, store = await stack.enter_async_context(writer_and_store(path))
    await _apply(writer, items, [len(items)])
    return store


async def _replica(root: Path, items: Sequence[IngestItem]) -> tuple[Path, Path]:
    """A replica fed in small uneven batches and closed (its restart is the reopening);
    and, from a snapshot it took halfway, a restored home that catches up on its own."""
    path = root / "replica" / "index.sqlite"
    path.parent.mkdir(parents=True)
    half = len(items) // 2
    archive = root / "half.tar"
    writer = await SqliteIndexWriter.open(path)
    try:
        await writer.bind_stream(STREAM, CREATED, 1)
        await _apply(writer, items[:half], REPLICA_BATCHES)
        with archive.open("wb") as sink:
            taken = snapshot_take.take(
                path, sink, partitions=PartitionSet.all(corpus.PARTITION_COUNT)
            )
        await _apply(writer, items[half:], REPLICA_BATCHES)
    finally:
        await writer.close()
    restored = root / "restored" / "index.sqlite"
    restored.parent.mkdir(parents=True)
    expect = snapshot_manifest.Expectation(
        stream_name=STREAM,
        stream_created=CREATED,
        first_seq=1,
        last_seq=len(items),
        partitions=PartitionSet.all(corpus.PARTITION_COUNT),
    )
    snapshot_restore.restore(archive, taken.sha256, restored, expect=expect)
    writer = await SqliteIndexWriter.open(restored)
    try:
        await _apply(writer, items[half:], RESTORED_BATCHES)
    finally:
        await writer.close()
    return path, restored


async def _rebuilt(root: Path, items: Sequence[IngestItem]) -> Path:
    """A store whose search index is deleted after ingestion: reopening rebuilds it."""
    path = root / "rebuilt" / "index.sqlite"
    path.parent.mkdir(parents=True)
    writer = await SqliteIndexWriter.open(path)
    try:
        await _apply(writer, items, [len(items)])
    finally:
        await writer.close()
    shutil.rmtree(search_index_path(path))
    return path


async def _late(root: Path, events: Sequence[dict[str, Any]]) -> Path:
    """Another arrival order of the same sessions: every third session (and every one
    opening with harness text) is published after all the others, as late sessions after a
    snapshot are, in uneven batches."""
    late = {s.session_id for n, s in enumerate(BASE) if n % 3 == 1 or "-harness-" in s.session_id}
    ordered = [ev for ev in events if ev["session_id"] not in late]
    ordered += [ev for ev in events if ev["session_id"] in late]
    path = root / "late" / "index.sqlite"
    path.parent.mkdir(parents=True)
    writer = await SqliteIndexWriter.open(path)
    try:
        await _apply(writer, _items(ordered), (3, 300, 1, 60))
    finally:
        await writer.close()
    return path


@dataclass(frozen=True, repr=False)
class Layouts:
    whole: Layout  # one store, every workspace, one batch
    noisy: Layout  # the same, beside NOISE_SESSIONS sessions of other workspaces
    shards: Layout  # each workspace on the store of its shard only
    replicas: tuple[Layout, ...]  # restarted, restored, rebuilt, late sessions

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("<the module's layouts>")


def _partition_of_event(event: dict[str, Any]) -> int:
    return corpus.partition_of(_CWD_OF[event["session_id"]])


@asynccontextmanager
async def build_layouts(root: Path) -> AsyncIterator[Layouts]:
    """Every layout of the same stream, open until the context ends."""
    events = corpus.stream(BASE)
    items = _items(events)
    # The noise interleaved with the workspaces' events, in one stream of its own.
    noisy_items = _items(corpus.stream([*BASE, *corpus.noise_sessions(NOISE_SESSIONS)]))
    async with AsyncExitStack() as stack:
        whole = await _one_batch(stack, root / "whole" / "index.sqlite", items)
        noisy = await _one_batch(stack, root / "noisy" / "index.sqlite", noisy_items)
        shard_tools: dict[str, ToolSet] = {}
        for n, parts in enumerate(corpus.SHARDS):
            held = [
                item
                for item, ev in zip(items, events, strict=True)
                if _partition_of_event(ev) in parts
            ]
            store = await _one_batch(stack, root / f"shard{n}" / "index.sqlite", held)
            tools = register_tools(store, ToolConfig())
            shard_tools.update(
                {cwd: tools for cwd in corpus.WORKSPACES if corpus.shard_of(cwd) == n}
            )
        replica, restored = await _replica(root, items)
        rebuilt = await _rebuilt(root, items)
        late = await _late(root, events)
        yield Layouts(
            whole=_everywhere("whole", whole),
            noisy=_everywhere("noisy", noisy),
            shards=Layout("shards", shard_tools),
            replicas=(
                _everywhere("restarted replica", await _open(stack, replica)),
                _everywhere("restored replica", await _open(stack, restored)),
                _everywhere("rebuilt index", await _open(stack, rebuilt)),
                _everywhere("late sessions", await _open(stack, late)),
            ),
        )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def layouts(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Layouts]:
    async with build_layouts(tmp_path_factory.mktemp("ranking")) as built:
        yield built


# -- the requests --------------------------------------------------------------------------


def _fragment(text: str) -> st.SearchStrategy[str]:
    """A run of up to 8 whole words of ``text`` (a pasted piece of a line)."""
    words = text.split()
    return st.tuples(st.integers(0, len(words) - 1), st.integers(1, 8)).map(
        lambda ab: " ".join(words[ab[0] : ab[0] + ab[1]])
    )


def _quoted(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(text, text.map(lambda t: f'"{t}"'))


_WORD = st.sampled_from(corpus.WORDS)
QUERIES: Final = st.one_of(
    _WORD,
    st.lists(_WORD, min_size=2, max_size=4).map(" ".join),
    st.builds(
        lambda q, s, v, w: q.format(s=s, v=v, w=w, v0=v.split()[0]),
        st.sampled_from(corpus.QUESTIONS),
        st.sampled_from(corpus.SUBJECTS),
        st.sampled_from(corpus.VERBS),
        st.sampled_from(corpus.WHEN),
    ),
    _quoted(st.sampled_from(corpus.ERRORS)),
    _quoted(st.sampled_from(corpus.ERRORS).flatmap(_fragment)),
    st.sampled_from(corpus.IDENTIFIERS),
    st.sampled_from(["SqliteVector", "attempts", "refund.py", "Backoff", "cursor", "Invoice"]),
    st.sampled_from(corpus.CJK),
    st.sampled_from(corpus.CJK).flatmap(
        lambda t: st.integers(0, len(t) - 2).map(lambda a: t[a : a + 3])
    ),
    # Text many events or sessions hold word for word, whose order is all tie-breaks:
    # twice, so drawn twice as often.
    _quoted(st.sampled_from(corpus.REPEATED).flatmap(_fragment)),
    _quoted(st.sampled_from(corpus.REPEATED).flatmap(_fragment)),
)
_TYPES = st.lists(
    st.sampled_from(
        ["message/user", "message/assistant", "tool/call", "tool/result", "session/title"]
    ),
    min_size=1,
    max_size=2,
    unique=True,
)
_SURFACES = st.lists(
    st.sampled_from(["user", "assistant", "tool", "system"]), min_size=1, max_size=2, unique=True
)


def _said(session_ids: Iterable[str]) -> st.SearchStrategy[str]:
    """A piece of what these sessions said (a run of words of one line), maybe quoted: what
    a model that knows a session searches for."""
    lines = sorted({line for sid in session_ids for line in _LINES[sid]})
    return _quoted(st.sampled_from(lines).flatmap(_fragment))


def _session_search(cwd: str) -> st.SearchStrategy[Request]:
    arguments = st.fixed_dictionaries(
        {"query": st.one_of(QUERIES, _said(SESSIONS_OF[cwd]))},
        optional={"event_types": _TYPES, "event_surfaces": _SURFACES},
    )
    return arguments.map(lambda a: ("session_search", corpus.caller_of(cwd), a))


def _event_search(cwd: str) -> st.SearchStrategy[Request]:
    target = st.one_of(
        st.sampled_from(_REPEATS.get(cwd) or _RICH[cwd]),
        st.sampled_from(_RICH[cwd]),
        st.sampled_from(SESSIONS_OF[cwd]),
    )
    arguments = target.flatmap(
        lambda sid: st.fixed_dictionaries(
            {"query": st.one_of(QUERIES, _said([sid])), "session_id": st.just(sid)},
            optional={
                "event_types": _TYPES,
                "event_surfaces": _SURFACES,
                "from_seq": st.integers(1, 40),
            },
        )
    )
    return arguments.map(lambda a: ("session_event_search", corpus.caller_of(cwd), a))


_CALLERS: Final = st.sampled_from(corpus.WORKSPACES)
SESSION_SEARCHES: Final = _CALLERS.flatmap(_session_search)
EVENT_SEARCHES: Final = _CALLERS.flatmap(_event_search)

# Derandomized and without a database: the same requests every run, on every machine.
PROPERTY: Final = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


async def _same(reference: Layout, others: Sequence[Layout], request: Request) -> None:
    expected = await reference.answer(request)
    for other in others:
        found = await other.answer(request)
        if found != expected:
            diff = difflib.unified_diff(
                expected.splitlines(), found.splitlines(), reference.name, other.name, lineterm=""
            )
            shown = "\n".join(list(diff)[:DIFF_LINES])
            pytest.fail(f"{other.name} answers {request!r} unlike {reference.name}:\n{shown}")


# -- the properties ------------------------------------------------------------------------


def test_the_shards_split_the_workspaces() -> None:
    held = [[cwd for cwd in corpus.WORKSPACES if corpus.shard_of(cwd) == n] for n in range(2)]
    assert all(len(workspaces) >= 2 for workspaces in held), held


@in_module_loop
async def test_the_corpus_gives_the_properties_something_to_compare(layouts: Layouts) -> None:
    """Not vacuous: ties past the candidate cuts, and matches in every workspace."""
    whole = layouts.whole
    tied = await whole.answer(
        ("session_search", corpus.caller_of(corpus.PAYMENTS), {"query": corpus.TIE_LINE})
    )
    assert "Found 100 sessions" in tied and "Showing the first 100" in tied
    repeat = next(s for s in SESSIONS_OF[corpus.INFRA] if "-repeat-" in s)
    arguments = {"query": "retrying webhook delivery", "session_id": repeat}
    events = await whole.answer(("session_event_search", corpus.caller_of(corpus.INFRA), arguments))
    assert "Showing the first 100" in events
    for cwd in corpus.WORKSPACES:
        found = await whole.answer(("session_search", corpus.caller_of(cwd), {"query": "refund"}))
        assert found.startswith("Found "), (cwd, found)


def _sessions(cwd: str, query: str) -> Request:
    return ("session_search", corpus.caller_of(cwd), {"query": query})


def _events(session_id: str, query: str) -> Request:
    arguments = {"query": query, "session_id": session_id}
    return ("session_event_search", corpus.caller_of(_CWD_OF[session_id]), arguments)


# Requests whose replies differed before issue 29 (tantivy's BM25 over the whole index,
# ties in the engine's document order), kept as examples every run tries first. Index-wide
# statistics: a pasted error, questions, an identifier, a phrase inside a long session.
_PASTED = _sessions(corpus.PAYMENTS, "ModuleNotFoundError: No module named 'tantivy'")
_QUESTION = _sessions(
    corpus.CJK_WS,
    "is there a session where the rate limiter leaks connections when the queue is full?",
)
_QUESTION_2 = _sessions(
    corpus.WEBSITE, "what was the cause of the nightly export hangs after a restart"
)
_IDENTIFIER = _sessions(corpus.INFRA, "worker/store/search/search_index.py")
_IN_LONG = _events("s-infra-long-005", "running the refund tests again")
_IN_LONG_2 = _events("s-pay-long-003", "'origin' does not")
_IN_LONG_3 = _events("s-infra-long-005", "running")
# The engine's order: more tied sessions than the session search's first candidate round,
# more tied events than the event search's cut.
_TIED_SESSIONS = _sessions(corpus.PAYMENTS, '"running"')
_TIED_SESSIONS_2 = _sessions(corpus.SEARCH, '"now, please commit it"')
_TIED_EVENTS = _events("s-pay-repeat-000", "retrying webhook delivery")
# Words of a preamble 14 sessions open with: the shared-prompt discount's counts.
_SHARED_PREAMBLE = _sessions(corpus.PAYMENTS, "run the whole suite once more")
# A first prompt the user wrote many events after harness text holding its words (issue
# 42): whether the harness event was marked as the first prompt depended on the batch that
# brought the prompt, so a replica fed in other batches ranked it apart.
_HARNESS = [s for s in BASE if "-harness-" in s.session_id]
_AFTER_HARNESS = [
    _events(s.session_id, prompt)
    for s in _HARNESS
    if (
        prompt := first_prompt([corpus.text_of(e) for e in s.events if e["type"] == "message/user"])
    )
]


@in_module_loop
@PROPERTY
@given(sessions=SESSION_SEARCHES, events=EVENT_SEARCHES)
@example(sessions=_PASTED, events=_IN_LONG_2)
@example(sessions=_QUESTION, events=_IN_LONG)
async def test_other_workspaces_sessions_change_no_reply(
    layouts: Layouts, sessions: Request, events: Request
) -> None:
    """(a): thousands of sessions in other workspaces move no byte of a reply."""
    for request in (sessions, events):
        await _same(layouts.whole, [layouts.noisy], request)


@in_module_loop
@PROPERTY
@given(sessions=SESSION_SEARCHES, events=EVENT_SEARCHES)
@example(sessions=_IDENTIFIER, events=_IN_LONG)
@example(sessions=_QUESTION_2, events=_IN_LONG_3)
async def test_a_shard_answers_as_one_worker_holding_every_partition(
    layouts: Layouts, sessions: Request, events: Request
) -> None:
    """(b): the store of the caller's shard answers as the store of every partition."""
    for request in (sessions, events):
        await _same(layouts.whole, [layouts.shards], request)


@in_module_loop
@PROPERTY
@given(sessions=SESSION_SEARCHES, events=EVENT_SEARCHES)
@example(sessions=_TIED_SESSIONS, events=_TIED_EVENTS)
@example(sessions=_TIED_SESSIONS_2, events=_IN_LONG)
@example(sessions=_SHARED_PREAMBLE, events=_AFTER_HARNESS[0])
@example(sessions=_TIED_SESSIONS_2, events=_AFTER_HARNESS[1])
@example(sessions=_TIED_SESSIONS_2, events=_AFTER_HARNESS[2])
@example(sessions=_TIED_SESSIONS_2, events=_AFTER_HARNESS[3])
async def test_replicas_of_one_stream_answer_alike(
    layouts: Layouts, sessions: Request, events: Request
) -> None:
    """(c): other batch sizes and segments, a restart, a snapshot restore, a rebuild and
    another arrival order."""
    for request in (sessions, events):
        await _same(layouts.whole, layouts.replicas, request)
