"""A generated, deterministic corpus for the ranking-invariance property test (issue 29).

Over 400 lines: one generated corpus with its workspaces and queries.

Several workspaces of realistic agent-session text (short chats, long sessions with pasted
logs and stack traces, identifiers and paths, Chinese and Japanese), shaped so that a
ranking that leans on anything but the caller's workspace and an explicit total order
shows it:

- the workspaces differ a lot in size and event length, so one worker holding every
  workspace and a shard holding some of them have very different index-wide statistics;
- ``noise_sessions`` adds thousands of sessions in other workspaces, long and sharing the
  corpus's vocabulary, which move every index-wide statistic again;
- exact ties everywhere: forks copy their parent's events, sessions repeat a prompt or a
  message, more than 200 tiny sessions of a workspace say the same thing (past the
  session search's first candidate round, in two workspaces), and a session holds 130
  identical events (past the event search's candidate cut, in three workspaces); the
  repeated events are spread over hours, so a replica's batches put them in different
  segments.

Everything is drawn from ``random.Random`` with fixed seeds: the same events every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from contracts.partitions import partition_of_cwd
from worker.store.search.text import searchable_text

PARTITION_COUNT: Final = 4
# The shards of the sharded layout, as partition sets of PARTITION_COUNT.
SHARDS: Final = ((0, 1), (2, 3))

PAYMENTS: Final = "/home/dev/payments"  # partition 3: mid-size, the tie-heavy workspace
WEBSITE: Final = "/home/dev/website"  # partition 0: short English sessions
INFRA: Final = "/srv/infra"  # partition 1: few sessions, very long log dumps
CJK_WS: Final = "/home/dev/项目"  # partition 1: Chinese and Japanese beside identifiers
SEARCH: Final = "/home/dev/search"  # partition 2: mid-size, many identifiers
WORKSPACES: Final = (PAYMENTS, WEBSITE, INFRA, CJK_WS, SEARCH)

_BASE: Final = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)

SUBJECTS: Final = (
    "the refund webhook",
    "the flaky timezone test",
    "the database migration",
    "the rate limiter",
    "the cache invalidation",
    "the docker build",
    "the CI pipeline",
    "the auth token refresh",
    "the pagination cursor",
    "the search index",
    "the invoice rounding",
    "the retry backoff",
    "the museum booking page",
    "the nightly export",
)
VERBS: Final = (
    "fails",
    "times out",
    "retries twice",
    "breaks on CI",
    "returns 503",
    "drops events",
    "double charges the customer",
    "hangs after a restart",
    "passes locally",
    "leaks connections",
)
WHEN: Final = (
    "after the deploy",
    "on Mondays",
    "when the queue is full",
    "under load",
    "in the nightly run",
    "since the upgrade",
    "behind the proxy",
    "for customers in Tokyo",
)
IDENTIFIERS: Final = (
    "RefundLedger.apply",
    "max_attempts",
    "SqliteVectorIndex",
    "parse_cursor",
    "retryBackoffMs",
    "PaymentIntent",
    "test_refund_is_idempotent",
    "src/payments/refund.py",
    "worker/store/search/search_index.py",
    "useInvoiceTotals",
    "CACHE_TTL_SECONDS",
    "tz.localize",
    "deploy/k8s/api.yaml",
    "MuseumBookingForm",
)
ERRORS: Final = (
    "fatal: not a git repository (or any of the parent directories): .git",
    "fatal: 'origin' does not appear to be a git repository",
    "KeyError: 'customer_id'",
    "AssertionError: expected 200, got 503",
    "sqlite3.OperationalError: database is locked",
    "TimeoutError: webhook delivery timed out after 30s",
    "ModuleNotFoundError: No module named 'tantivy'",
    "error[E0308]: mismatched types",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    'ERROR: relation "refunds" does not exist',
    "npm ERR! code ERESOLVE unable to resolve dependency tree",
)
CJK: Final = (
    "数据库连接超时",
    "退款接口返回错误",
    "部署到生产环境之前先跑测试",
    "缓存没有及时失效",
    "テストが失敗しました",
    "キャッシュを無効化する",
    "東京の顧客だけ返金が二重になる",
    "分页游标解析失败",
)
FILLER: Final = (
    "I checked the logs again and nothing obvious stands out.",
    "Let me look at the config before changing anything.",
    "The change is small, but the tests around it are slow.",
    "This looks related to what we saw last week.",
    "I will run the whole suite once more to be sure.",
    "Maybe the fixture leaks state between tests.",
    "We should write this down in the runbook.",
    "The numbers look fine on staging.",
)
# What more than 200 tiny sessions of a workspace all say: a query for it ties them all.
TIE_LINE: Final = "ok, running the refund tests again"
TIE_LINE_2: Final = "thanks, that works now, please commit it"
# What a "repeat" session says in 130 separate events, past the event search's cut.
REPEATED_LINE: Final = "retrying webhook delivery to https://hooks.internal/refund (attempt failed)"
# Lines many events or sessions hold word for word (git's errors: every failed push).
REPEATED: Final = (TIE_LINE, TIE_LINE_2, REPEATED_LINE, ERRORS[0], ERRORS[1])

# Words a request draws from: everything above, split.
_VOCABULARY_SOURCES: Final = (
    *SUBJECTS,
    *VERBS,
    *WHEN,
    *FILLER,
    TIE_LINE,
    TIE_LINE_2,
    REPEATED_LINE,
)
WORDS: Final = tuple(
    sorted(
        {
            w.strip(".,;:?!()'\"").lower()
            for line in _VOCABULARY_SOURCES
            for w in line.split()
            if len(w.strip(".,;:?!()'\"")) > 2
        }
    )
)
QUESTIONS: Final = (
    "why does {s} {v}?",
    "how did we fix {s} {w}?",
    "when did {s} start to {v0}?",
    "what was the cause of {s} {v}",
    "is there a session where {s} {v} {w}?",
)


@dataclass
class Session:
    session_id: str
    cwd: str
    start: datetime
    parent: str | None = None
    step_s: int = 37  # between two events
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, type_: str, surface: str, payload: dict[str, Any], cites: int | None = None
    ) -> int:
        seq = len(self.events) + 1
        time = self.start + timedelta(seconds=self.step_s * (seq - 1))
        event = {
            "session_id": self.session_id,
            "seq": seq,
            "event_id": f"e-{self.session_id}-{seq}",
            "type": type_,
            "surface": surface,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "payload": payload,
        }
        if cites is not None:  # a tool result cites its call (the index's context)
            event["cites"] = [{"session_id": self.session_id, "seq": cites}]
        self.events.append(event)
        return seq

    def begin(self) -> None:
        payload: dict[str, Any] = {"cwd": self.cwd}
        if self.parent is not None:
            payload["parent_session_id"] = self.parent
        self.add("session/start", "system", payload)

    def user(self, text: str) -> None:
        self.add("message/user", "user", {"text": text})

    def assistant(self, text: str) -> None:
        self.add("message/assistant", "assistant", {"text": text})

    def tool(self, command: str, output: str) -> None:
        call = self.add("tool/call", "tool", {"tool": "bash", "arguments": {"command": command}})
        self.add("tool/result", "tool", {"tool": "bash", "output": output}, cites=call)

    def title(self, text: str) -> None:
        self.add("session/title", "system", {"title": text})

    def end(self) -> None:
        self.add("session/end", "system", {})


class _Writer:
    """Realistic lines from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, items: Sequence[str]) -> str:
        return items[self.rng.randrange(len(items))]

    def question(self) -> str:
        s, v, w = self.pick(SUBJECTS), self.pick(VERBS), self.pick(WHEN)
        return self.pick(QUESTIONS).format(s=s, v=v, w=w, v0=v.split()[0])

    def claim(self) -> str:
        r = self.rng.random()
        s, v, w, ident = (self.pick(x) for x in (SUBJECTS, VERBS, WHEN, IDENTIFIERS))
        if r < 0.3:
            return f"I think {s} {v} {w}; the code is in {ident}."
        if r < 0.55:
            return f"Fixed: {s} no longer {v}. {self.pick(FILLER)}"
        if r < 0.75:
            return f"{self.pick(FILLER)} {s.capitalize()} {v} {w}."
        return f"{ident} is where {s} {v}. {self.pick(FILLER)} {self.pick(FILLER)}"

    def prompt(self) -> str:
        r = self.rng.random()
        if r < 0.35:
            return self.question()
        if r < 0.6:
            return f"I get this: {self.pick(ERRORS)}"
        if r < 0.8:
            return f"can you fix {self.pick(SUBJECTS)}? it {self.pick(VERBS)} {self.pick(WHEN)}"
        return f"look at {self.pick(IDENTIFIERS)} and tell me why {self.pick(SUBJECTS)} fails"

    def test_log(self, lines: int) -> str:
        out = ["============================= test session starts ==============================",
               f"collected {lines * 3} items"]  # fmt: skip
        for n in range(lines):
            module = self.pick(("refund", "invoice", "cursor", "cache", "export", "booking"))
            status = "FAILED" if self.rng.random() < 0.15 else "PASSED"
            out.append(f"tests/test_{module}.py::test_{module}_{n % 17} {status}")
            if status == "FAILED":
                out.append(f"E       {self.pick(ERRORS)}")
        out.append(f"{self.rng.randrange(1, 9)} failed, {lines} passed in 12.3s")
        return "\n".join(out)

    def traceback(self) -> str:
        frames = [
            f'  File "{self.pick(IDENTIFIERS).replace(".", "/")}.py", line '
            f"{self.rng.randrange(10, 400)}, in {self.pick(('apply', 'run', 'handle', 'parse'))}"
            for _ in range(self.rng.randrange(2, 6))
        ]
        return "\n".join(["Traceback (most recent call last):", *frames, self.pick(ERRORS)])

    def cjk(self) -> str:
        return f"{self.pick(CJK)}，{self.pick(CJK)}。{self.pick(IDENTIFIERS)} {self.pick(CJK)}"


def _chat(session: Session, w: _Writer, turns: int, *, cjk: float = 0.0) -> None:
    said: list[tuple[str, str]] = []
    for _ in range(turns):
        said.append(
            (
                w.cjk() if w.rng.random() < cjk else w.prompt(),
                w.cjk() if w.rng.random() < cjk else w.claim(),
            )
        )
        session.user(said[-1][0])
        session.assistant(said[-1][1])
    if w.rng.random() < 0.5:
        # The user pastes the same thing again and gets the same answer: a tie inside the
        # session for the strongest match.
        prompt, answer = said[0]
        session.user(prompt)
        session.assistant(answer)


def _long(session: Session, w: _Writer, steps: int, *, log_lines: int) -> None:
    for _ in range(steps):
        r = w.rng.random()
        if r < 0.3:
            session.tool("pytest -q", w.test_log(w.rng.randrange(log_lines // 4, log_lines)))
        elif r < 0.5:
            session.tool("python -m app", w.traceback())
        elif r < 0.6:
            session.tool("git push origin main", w.pick(ERRORS[:2]))
        else:
            session.assistant(w.claim())


# Text Claude Code writes into the user's turn (``contracts.harness``), as an older publisher
# left it: typed ``message/user``.
_CAVEAT: Final = (
    "Caveat: The messages below were generated by the user while running local commands."
    " DO NOT respond to these messages or otherwise consider them in your response unless"
    " the user explicitly asks you to."
)
_REMINDER: Final = "<system-reminder>\nThe user opened {arg} in the IDE.\n</system-reminder>"
_COMMAND: Final = (
    "<command-message>review is running</command-message>\n<command-name>/review</command-name>"
    "\n<command-args>{arg}</command-args>"
)


_TEMPLATE: Final = f"{FILLER[1]}\n{FILLER[4]}\n{FILLER[6]}"


def _harness(session: Session, w: _Writer) -> None:
    """A session whose first user events are harness text, one of them holding the words of
    the first prompt the user wrote, which comes many events later; the title comes last.
    Whether a replica's batch boundary falls between them must change no marker."""
    ask = f"{w.pick(SUBJECTS)} {w.pick(VERBS)}"
    session.user(_CAVEAT)
    session.user(w.pick((_REMINDER, _COMMAND)).format(arg=ask))
    for _ in range(w.rng.randrange(12, 30)):
        session.tool("pytest -q", w.test_log(w.rng.randrange(3, 8)))
    session.user(ask)
    # Shorter than the harness event and as close to the words: only a marker tells them apart.
    session.assistant(f"ok: {ask}")
    _long(session, w, w.rng.randrange(5, 20), log_lines=12)
    session.title(f"{w.pick(SUBJECTS)} {w.pick(VERBS)} {w.pick(WHEN)}")


def _workspace(
    cwd: str, name: str, seed: int, spec: dict[str, int], tie_line: str = TIE_LINE
) -> list[Session]:
    """One workspace's sessions, by kind: ``short`` chats, ``long`` sessions with logs,
    ``forks`` (children copying their parent's first events), ``cjk`` sessions, ``ties``
    tiny sessions saying ``tie_line``, ``harness`` sessions opening with harness text
    (``_harness``), ``template`` sessions opening with one shared preamble, ``repeat``
    sessions repeating one event."""
    w = _Writer(random.Random(seed))
    sessions: list[Session] = []

    def new(kind: str, n: int, parent: Session | None = None, step_s: int = 37) -> Session:
        start = _BASE + timedelta(minutes=w.rng.randrange(0, 60 * 24 * 30))
        sid = f"s-{name}-{kind}-{n:03d}"
        session = Session(sid, cwd, start, parent.session_id if parent else None, step_s)
        session.begin()
        sessions.append(session)
        return session

    for n in range(spec.get("short", 0)):
        s = new("short", n, step_s=1200)
        s.title(f"{w.pick(SUBJECTS)} {w.pick(VERBS)}")
        _chat(s, w, w.rng.randrange(1, 4))
        if w.rng.random() < 0.5:
            s.end()
    for n in range(spec.get("long", 0)):
        # Spread over hours: its events fall in many of a replica's batches (segments).
        s = new("long", n, step_s=600)
        s.user(w.prompt())
        _long(s, w, w.rng.randrange(20, spec.get("steps", 40)), log_lines=spec.get("log", 30))
        # The same message again, later in the session: ties inside one session.
        again = w.claim()
        for _ in range(3):
            s.assistant(again)
            s.tool("pytest -q", w.test_log(5))
        s.end()
    parents = [s for s in sessions if "-long-" in s.session_id]
    for n in range(spec.get("forks", 0)):
        parent = parents[n % len(parents)]
        child = new("fork", n, parent)
        # A fork copies its parent's first events word for word: exact ties across sessions.
        for ev in parent.events[1 : 1 + w.rng.randrange(3, 9)]:
            child.add(ev["type"], ev["surface"], dict(ev["payload"]))
        _chat(child, w, 2)
    for n in range(spec.get("cjk", 0)):
        s = new("cjk", n)
        s.title(w.pick(CJK))
        _chat(s, w, w.rng.randrange(2, 6), cjk=0.7)
    tie_numbers = list(range(spec.get("ties", 0)))
    w.rng.shuffle(tie_numbers)  # stream order is not session-id order
    for n in tie_numbers:
        s = new("tie", n)
        s.user(tie_line)
        s.assistant(w.pick(FILLER))
    for n in range(spec.get("template", 0)):
        # A pasted preamble many sessions open with, then their own ask: the shared-prompt
        # discount counts the paragraph's sessions (the same on every layout).
        s = new("template", n, step_s=900)
        s.user(f"{_TEMPLATE}\n\n{w.prompt()}")
        _long(s, w, w.rng.randrange(3, 8), log_lines=10)
    for n in range(spec.get("harness", 0)):
        _harness(new("harness", n, step_s=1800), w)
    for n in range(spec.get("repeat", 0)):
        s = new("repeat", n, step_s=3 * 3600)
        s.user("the refund webhook keeps retrying, what is going on?")
        for _ in range(130):
            s.add("tool/result", "tool", {"tool": "tail", "output": REPEATED_LINE})
        s.assistant(w.claim())
    return sessions


def base_sessions() -> list[Session]:
    """Every workspace's sessions, plus one caller session per workspace (first)."""
    specs: dict[str, tuple[str, dict[str, int]]] = {
        PAYMENTS: ("pay", {"short": 30, "long": 8, "steps": 40, "log": 30, "forks": 6,
                           "ties": 230, "template": 14, "repeat": 1}),
        WEBSITE: ("web", {"short": 40, "long": 2, "steps": 25, "log": 10, "forks": 2,
                           "harness": 8}),
        INFRA: ("infra", {"short": 6, "long": 10, "steps": 60, "log": 160, "forks": 3,
                          "harness": 4, "repeat": 1}),
        CJK_WS: ("cjk", {"short": 8, "long": 2, "steps": 25, "log": 20, "forks": 2, "cjk": 25}),
        SEARCH: ("search", {"short": 25, "long": 5, "steps": 35, "log": 40, "forks": 4,
                            "ties": 210, "repeat": 1}),
    }  # fmt: skip
    tie_lines = {SEARCH: TIE_LINE_2}
    sessions: list[Session] = []
    for seed, cwd in enumerate(WORKSPACES):
        name, spec = specs[cwd]
        caller = Session(caller_of(cwd), cwd, _BASE - timedelta(days=1))
        caller.begin()
        caller.user("caller session")
        sessions.append(caller)
        sessions.extend(_workspace(cwd, name, 1000 + seed, spec, tie_lines.get(cwd, TIE_LINE)))
    return sessions


def caller_of(cwd: str) -> str:
    return f"c-{WORKSPACES.index(cwd)}"


def noise_sessions(count: int, workspaces: int = 24) -> list[Session]:
    """``count`` sessions in other workspaces: a few long events each, in the corpus's own
    vocabulary, so every index-wide statistic (documents, lengths) moves a lot."""
    w = _Writer(random.Random(7))
    sessions: list[Session] = []
    for n in range(count):
        cwd = f"/noise/team-{n % workspaces}"
        start = _BASE + timedelta(minutes=w.rng.randrange(0, 60 * 24 * 30))
        s = Session(f"s-noise-{n:05d}", cwd, start)
        s.begin()
        s.user(w.prompt())
        s.tool("pytest -q", w.test_log(w.rng.randrange(10, 60)))
        s.assistant(" ".join(w.claim() for _ in range(w.rng.randrange(1, 6))))
        sessions.append(s)
    return sessions


def stream(sessions: Iterable[Session]) -> list[dict[str, Any]]:
    """The sessions' events as one stream: by time, each session's events in seq order."""
    events = [ev for s in sessions for ev in s.events]
    events.sort(key=lambda ev: (ev["time"], ev["session_id"], ev["seq"]))
    return events


def text_of(event: dict[str, Any]) -> str:
    """The event's searchable text (what the store indexes: its payload's strings)."""
    return searchable_text(event["payload"], 1 << 20)


def partition_of(cwd: str) -> int:
    return partition_of_cwd(cwd, PARTITION_COUNT)


def shard_of(cwd: str) -> int:
    """The index in SHARDS of the shard holding ``cwd``."""
    part = partition_of(cwd)
    return next(i for i, parts in enumerate(SHARDS) if part in parts)


def by_workspace(sessions: Iterable[Session]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for s in sessions:
        found.setdefault(s.cwd, []).append(s.session_id)
    return found
