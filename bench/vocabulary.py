"""Word lists for the corpus generator and for realistic queries drawn from the same text.

Kept apart from ``corpus.py`` so queries (bench/store.py, bench/loadgen.py) and events use
exactly one vocabulary: a query term is always something the corpus can contain.
"""

from __future__ import annotations

import random
from itertools import accumulate
from typing import Final


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


PROSE: Final = _split(
    """the a to of and in is it that for on with this we be not as are by at can from or
    but if so then when there should now let check look run see try need fix test case
    again still because after before first next about into also just only seems maybe
    error failure flaky timeout slow fast retry cache config setting value default path
    file line function method class module package import build deploy release branch
    commit merge review change patch diff change update remove add rename move split
    query search index cursor page result session event stream worker reader writer
    connection pool lock queue thread task loop signal cancel deadline backoff budget
    memory leak crash restart replay duplicate order batch flush sync schema migration
    table column row key token hash digest payload header title parent child tree chain
    compile parse render format encode decode serialize validate normalize escape quote
    user assistant tool system model prompt reply request response client server cluster
    node replica leader follower partition shard workspace directory permission denied
    refused reset closed broken missing unknown invalid unexpected expected actual
    passes fails green red works breaks regress benchmark profile latency throughput
    percentile histogram trace span log metric alert dashboard incident outage rollback
    careful simple small large whole partial exact approximate stable unstable noisy
    quickly slowly carefully probably definitely likely clearly mostly rarely usually"""
)

VERBS: Final = _split(
    "parse load build fetch resolve flush retry open close read write apply render "
    "compile encode decode validate normalize merge split scan index search sync"
)
NOUNS: Final = _split(
    "config session index cursor buffer token header title event stream batch record "
    "query page reader writer pool lock queue signal deadline payload schema lineage "
    "relation citation snippet excerpt window generation epoch spill manifest"
)
PACKAGES: Final = _split(
    "core api store runtime tools cli web server client utils models ingest search "
    "render auth cache jobs metrics"
)
LANG_DIRS: Final = ("src", "lib", "pkg", "app", "internal")
TOOLS: Final = ("bash", "read_file", "edit_file", "grep", "list_dir", "run_tests")
PROJECTS: Final = _split(
    "atlas borealis cinder dynamo ember falcon granite harbor iris juniper kestrel lumen "
    "meridian nimbus onyx polaris quartz raven sierra tundra umbra vortex willow zephyr "
    "aurora beacon cobalt delta"
)
USERS: Final = ("dev", "alice", "bob", "ci", "build")
EXCEPTIONS: Final = (
    "TimeoutError",
    "ConnectionRefusedError",
    "KeyError",
    "AssertionError",
    "ValueError",
    "TypeError",
    "PermissionError",
    "FileNotFoundError",
    "sqlite3.OperationalError",
    "asyncio.CancelledError",
    "json.decoder.JSONDecodeError",
    "RuntimeError",
)
EXCEPTION_MESSAGES: Final = (
    "database is locked",
    "connection refused",
    "deadline exceeded",
    "no such table: events",
    "unexpected end of input",
    "assert 3 == 4",
    "permission denied",
    "maximum recursion depth exceeded",
    "cursor is stale",
    "invalid token",
)


def zipf_weights(n: int, s: float = 0.9) -> list[float]:
    """Cumulative weights of a Zipf-like distribution: few words are common, most rare."""
    return list(accumulate(1.0 / (rank**s) for rank in range(1, n + 1)))


PROSE_CUM: Final = zipf_weights(len(PROSE))


def snake(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def camel(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}{rng.choice(NOUNS).capitalize()}"


def class_name(rng: random.Random) -> str:
    return f"{rng.choice(NOUNS).capitalize()}{rng.choice(('Reader', 'Writer', 'Store', 'Error', 'Client', 'Service'))}"  # noqa: E501


def dotted(rng: random.Random) -> str:
    return f"{rng.choice(PACKAGES)}.{rng.choice(NOUNS)}.{snake(rng)}"


def module_path(rng: random.Random, packages: tuple[str, ...]) -> str:
    style = rng.random()
    pkg = rng.choice(packages)
    if style < 0.6:
        return f"{rng.choice(LANG_DIRS)}/{pkg}/{rng.choice(NOUNS)}.py"
    if style < 0.8:
        return f"tests/{pkg}/test_{rng.choice(NOUNS)}.py"
    if style < 0.9:
        return f"web/src/{pkg}/{rng.choice(NOUNS).capitalize()}View.tsx"
    return f"docs/{pkg}/{rng.choice(NOUNS)}.md"


def identifier(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return snake(rng)
    if r < 0.7:
        return camel(rng)
    if r < 0.85:
        return dotted(rng)
    return class_name(rng)


def words(rng: random.Random, n: int) -> list[str]:
    return rng.choices(PROSE, cum_weights=PROSE_CUM, k=n)


def sample_query(rng: random.Random) -> str:
    """A query of the kind a model writes: words, identifiers, paths, phrases, OR, -term."""
    r = rng.random()
    if r < 0.25:
        # two prose words; skip the most common ones, a model searches for content
        return " ".join(rng.choices(PROSE[20:], k=2))
    if r < 0.45:
        return identifier(rng)
    if r < 0.55:
        return module_path(rng, tuple(PACKAGES))
    if r < 0.7:
        exc = rng.choice(EXCEPTIONS).rsplit(".", 1)[-1]
        return f"{exc} {rng.choice(NOUNS)}"
    if r < 0.8:
        return f'"{rng.choice(EXCEPTION_MESSAGES)}"'
    if r < 0.9:
        return f"{snake(rng)} OR {camel(rng)}"
    return f"{rng.choice(PROSE[20:])} {rng.choice(NOUNS)} -{rng.choice(PROSE[20:])}"


# Query classes of the store and tools benches (issue 10's spike, plus questions).
QUERY_CLASSES: Final = ("rare_identifier", "common_word", "three_words", "natural_language")
# Two identifiers that rarely share one event: the partial-match path (bench.store checks
# the page's ``partial`` flag before a query counts as partial).
PAIR_CLASS: Final = "identifier_pair"

# Function words a model's question holds (none of them is ever required by the search).
_FUNCTION: Final = frozenset(
    _split(
        "the a to of and in is it that for on with this we be not as are by at can from or "
        "but if so then when there should now again because after before about into also "
        "just only"
    )
)
CONTENT: Final = tuple(w for w in PROSE if w not in _FUNCTION)
# The most frequent content words of the Zipf-like prose.
COMMON: Final = CONTENT[:24]
_QUESTION: Final = (
    "where did we {v} the {a} {n}",
    "how did we {v} the {n} {n2} {a}",
    "why was the {a} {n} {n2} so {q}",
    "what did we change in the {n} {n2} after the {a} {n3}",
    "when did the {n} {n2} start to {v2}",
    "which {n} did we {v} because of the {a} {n2}",
)
_QUALITIES: Final = ("slow", "flaky", "noisy", "unstable", "broken", "large")


def question(rng: random.Random) -> str:
    """A natural-language question a model asks, built from the corpus vocabulary: function
    words around a few content words of the prose and identifier nouns."""
    template = rng.choice(_QUESTION)
    return template.format(
        v=rng.choice(("fix", "change", "update", "remove", "add", "split", "move", "check")),
        v2=rng.choice(("fail", "break", "regress", "crash", "timeout", "leak")),
        a=rng.choice(CONTENT[20:]),
        n=rng.choice(NOUNS),
        n2=rng.choice(CONTENT[10:]),
        n3=rng.choice(("deploy", "merge", "release", "migration", "rollback", "restart")),
        q=rng.choice(_QUALITIES),
    )


def class_query(rng: random.Random, kind: str) -> str:
    """One query of the class ``kind`` (``QUERY_CLASSES`` or ``PAIR_CLASS``)."""
    if kind == "rare_identifier":
        return identifier(rng)
    if kind == "common_word":
        return rng.choice(COMMON)
    if kind == "three_words":
        return " ".join(rng.sample(CONTENT[10:], 3))
    if kind == "natural_language":
        return question(rng)
    if kind == PAIR_CLASS:
        return f"{class_name(rng)} {dotted(rng)}"
    raise ValueError(f"unknown query class {kind!r}")
