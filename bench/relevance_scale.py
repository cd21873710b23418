"""bench.relevance at scale (issue 29): each workspace diluted with generated distractor
sessions of the kinds people paste into agents.

``dilute(labelled, per_workspace)`` returns the labelled corpus with ``per_workspace``
more sessions in each workspace, appended to its stream (the needles, labels and stream
seqs of the 1x corpus are unchanged). Each distractor session aims at one labelled query
of its workspace (in turn, over a seed-shuffled order, so every label gets a share) and
is one of:

- ``docs``: a pasted documentation dump, 50-90 sections read one per tool call (100-180
  events), about two in three sections holding one or two of the query's words;
- ``long_output``: one to three logs of 8-48 KiB with the query's words on lines far
  apart, some several times, and the label's near-miss lines;
- ``tests``: test runs whose summaries name a failing test after two of the query's
  words and, for an error label, carry its near-miss error lines;
- ``near_miss``: short events holding most of the query: an error label's near-miss
  lines pasted by the user, repeated by a retry loop, quoted by the assistant; another
  label's near misses as messages (for ``rare_word``: the name and the common words),
  and messages holding half of its words;
- ``boilerplate``: the same preambles (agent instructions, licence headers, CI
  templates) repeated across sessions, with one of the query's words in the ask.

Words and near misses come from the label: its query's content words (for identifiers
and paths, their parts; a ``rare_word`` label's rare word never), the texts of its 1x
distractors and its spec's ``variants``. Generated text only, deterministic by seed.

The labels stay right: every event of a distractor is checked against every label of its
workspace and rewritten as generated filler when it holds a query verbatim (case aside),
a query's analysed terms in a row, or a reserved word (``holds_label``); the count of
rewritten events is reported. Session ids are UUID-like, as real ones are: they sort
before the needles' ids, so an exact tie never favours a needle.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from bench import corpus
from bench import relevance_corpus as rc
from bench import vocabulary as vocab
from bench.relevance_probes import doc_sections
from bench.relevance_reference import FUNCTION_WORDS, analyze, payload_text

DEFAULT_PER_WORKSPACE: Final = 400
KINDS: Final = ("docs", "long_output", "tests", "near_miss", "boilerplate")
_WEIGHTS: Final = (0.12, 0.2, 0.18, 0.35, 0.15)
# Categories whose labels distractors aim at: forks are about lineage, paraphrases share
# no word with their needle (lexical search cannot find them: hybrid's category).
# A question never answered (conv_absent) has no needle to aim at.
_NOT_AIMED: Final = frozenset({"fork", "paraphrase", "conv_absent"})
_NEAR_CHARS: Final = 600
# Categories whose near misses are error lines (test summaries carry them).
_ERRORS: Final = frozenset({"error_fragment", "pasted_error", "long_output"})
_WORD: Final = re.compile(r"[^\W_]+")
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

# Preambles repeated verbatim across sessions: what agents and CI paste at every start.
BOILERPLATE: Final = (
    "You are a coding agent working in this repository. Follow the contributing guide, run "
    "the linters before you commit, never push to main, and keep each change small and "
    "reviewed. Ask before deleting files.",
    "# Licensed under the Apache License, Version 2.0 (the 'License'); you may not use this "
    "file except in compliance with the License. Distributed on an 'AS IS' BASIS, WITHOUT "
    "WARRANTIES OR CONDITIONS OF ANY KIND.",
    "## Pull request checklist\n- [ ] tests added\n- [ ] docs updated\n- [ ] changelog entry"
    "\n- [ ] reviewed by an owner\n- [ ] migration notes",
    "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4"
    "\n      - run: make lint test\n      - run: make package",
)
_DOC_OPENINGS: Final = (
    "Here is the {} reference, pasted so you have it",
    "Docs dump for {} below, read it before you start",
    "Pasting the {} guide: sections follow",
)
_ASKS: Final = (
    "Can you look at {} today?",
    "Start with {} please.",
    "Quick one about {}.",
    "Next up: {}.",
)


@dataclass(frozen=True, slots=True)
class Target:
    """What one label gives the distractors aimed at it."""

    category: str
    query: str
    words: tuple[str, ...]  # surface words to scatter (never a reserved one)
    near: tuple[str, ...]  # near-miss texts


@dataclass(frozen=True, slots=True)
class Guard:
    """One label's terms, for ``holds_label``."""

    verbatim: str  # the query, case-folded, whitespace collapsed
    terms: tuple[str, ...]  # its analysed content terms in order
    reserved: frozenset[str]  # analysed terms no distractor may hold


@dataclass(frozen=True, slots=True)
class Dilution:
    corpus: rc.RelevanceCorpus
    sessions: int  # distractor sessions added
    events: int  # their events
    rewritten: int  # events rewritten as filler because they held a label
    kinds: dict[str, int]  # sessions per kind
    made: dict[str, tuple[str, str]]  # session id -> (kind, the query it aims at)


def dilute(labelled: rc.RelevanceCorpus, per_workspace: int, seed: int | None = None) -> Dilution:
    """The corpus with ``per_workspace`` distractor sessions more in each workspace."""
    seed = labelled.config.seed if seed is None else seed
    by_cwd: dict[str, list[rc.LabelledQuery]] = {}
    for q in labelled.queries:
        by_cwd.setdefault(q.cwd, []).append(q)
    events: list[dict[str, Any]] = []
    kinds = dict.fromkeys(KINDS, 0)
    made: dict[str, tuple[str, str]] = {}
    rewritten = 0
    for w, cwd in enumerate(labelled.workspaces):
        queries = by_cwd.get(cwd, [])
        guards = [guard(q.query, labelled.reserved.get(q.expected, ())) for q in queries]
        # A word that is a whole query on its own (``stall`` of ``StallDetector``) is never
        # scattered: it would make a right answer to that query.
        alone = {g.terms[0] for g in guards if len(g.terms) == 1}
        targets = [_target(q, labelled, alone) for q in queries if q.category not in _NOT_AIMED]
        rng = random.Random(f"{seed}:scale:{w}")
        rng.shuffle(targets)
        for i in range(per_workspace):
            kind = rng.choices(KINDS, weights=_WEIGHTS)[0]
            kinds[kind] += 1
            aim = targets[i % len(targets)] if targets else None
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            start = corpus.ORIGIN_MS + rng.randrange(420 * 86_400_000)
            session = rc.Session(sid, cwd, start, random.Random(f"{seed}:{sid}"))
            _MAKERS[kind](session, aim)
            made[sid] = (kind, aim.query if aim else "")
            session.end()
            rewritten += _keep_labels_right(session, guards)
            events.extend(session.events)
    diluted = replace(labelled, events=[*labelled.events, *events])
    sessions = per_workspace * len(labelled.workspaces)
    return Dilution(diluted, sessions, len(events), rewritten, kinds, made)


# --- what a label gives ---------------------------------------------------------------------


def _target(q: rc.LabelledQuery, labelled: rc.RelevanceCorpus, alone: set[str]) -> Target:
    """Words to scatter: the query's content words, a code token (path, identifier,
    dotted or snake name) as its parts; none for a query of one term (scattering it would
    make a right answer) or a CJK one (its characters would form its bigrams again); never
    a reserved word."""
    reserved = {w.lower() for w in labelled.reserved.get(q.expected, ())}
    words: list[str] = []
    if len(analyze(q.query, query=True)) > 1 and not _CJK.search(q.query):
        for token in q.query.split():
            token = token.strip("?.,:;()[]'`")
            if token.lower() in FUNCTION_WORDS or token.lower() in reserved:
                continue
            parts = [p for w in _WORD.findall(token) for p in _CAMEL.findall(w) or [w]]
            words += [p.lower() for p in parts if len(p) > 1] if len(parts) > 1 else [token]
    # A near miss longer than a line or two (a whole log) gives its last lines.
    near = tuple(
        text if len(text) <= _NEAR_CHARS else "\n".join(text.splitlines()[-2:])[-_NEAR_CHARS:]
        for text in labelled.near_misses.get(q.expected, ())
    )
    words = [w for w in words if w and not alone.intersection(analyze(w))]
    return Target(q.category, q.query, tuple(dict.fromkeys(words)), near)


def guard(query: str, reserved: Sequence[str]) -> Guard:
    return Guard(
        verbatim=" ".join(query.casefold().split()),
        terms=tuple(analyze(query, query=True)),
        reserved=frozenset(t for word in reserved for t in analyze(word)),
    )


def holds_label(text: str, guards: Sequence[Guard]) -> bool:
    """Whether ``text`` would be a right answer to one of the guards' queries (or holds a
    word reserved to its needle): the query verbatim, its analysed terms in a row, a
    reserved term."""
    folded = " ".join(text.casefold().split())
    sequence = analyze(text, query=True)
    held = frozenset(sequence)
    for guard in guards:
        if guard.verbatim in folded or guard.reserved & held:
            return True
        terms = guard.terms
        if not terms or not held.issuperset(terms):
            continue
        n = len(terms)
        if any(
            tuple(sequence[i : i + n]) == terms for i, t in enumerate(sequence) if t == terms[0]
        ):
            return True
    return False


def _keep_labels_right(session: rc.Session, guards: Sequence[Guard]) -> int:
    """Rewrite each event of ``session`` that holds a label as generated filler; the count."""
    count = 0
    for event in session.events:
        payload = event["payload"]
        text = payload_text(payload)
        if not text or not holds_label(text, guards):
            continue
        count += 1
        filler = session.text.sentence()
        if "text" in payload:
            payload["text"] = filler
        elif "output" in payload:
            payload["output"] = filler
        elif "arguments" in payload:
            payload["arguments"] = {"command": "true"}
        elif "title" in payload:
            payload["title"] = session.text.title()
    return count


# --- the kinds of sessions --------------------------------------------------------------------


def _words(rng: random.Random, aim: Target | None, k: int) -> list[str]:
    if aim is None or not aim.words:
        return []
    return rng.sample(aim.words, k=min(k, len(aim.words)))


def _opening(session: rc.Session) -> None:
    """Half the sessions are titled; the others show their first prompt."""
    if session.rng.random() < 0.5:
        session.add("session/title", "system", {"title": session.text.title()})


def _docs(session: rc.Session, aim: Target | None) -> None:
    rng = session.rng
    _opening(session)
    topic = f"{rng.choice(vocab.PACKAGES)} {rng.choice(vocab.NOUNS)} {rng.randint(2, 999)}"
    session.user(rng.choice(_DOC_OPENINGS).format(topic) + ".")
    sections = rng.randint(50, 90)
    words = [
        _words(rng, aim, rng.choice((1, 1, 2))) if rng.random() < 0.65 else []
        for _ in range(sections)
    ]
    for section in doc_sections(rng, words):
        path = f"docs/{rng.choice(vocab.PACKAGES)}/{rng.choice(vocab.NOUNS)}.md"
        session.tool("read_file", {"path": path}, section, 0)
    session.assistant(session.text.assistant_message())


def _log_line(rng: random.Random) -> str:
    return (
        f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}."
        f"{rng.randint(100, 999)} {rng.choice(('INFO', 'DEBUG', 'WARN'))} "
        f"{vocab.dotted(rng)} {vocab.snake(rng)}={rng.randint(0, 9999)} "
        f"{' '.join(vocab.words(rng, rng.randint(2, 6)))}"
    )


def _long_output(session: rc.Session, aim: Target | None) -> None:
    rng = session.rng
    _opening(session)
    session.user(session.text.user_message())
    for _ in range(rng.randint(1, 3)):
        size = rng.randint(8, 48) * 1024
        lines: list[str] = []
        total = 0
        while total < size:
            lines.append(_log_line(rng))
            total += len(lines[-1]) + 1
        if aim is not None:
            for word in aim.words:
                for _ in range(rng.choice((1, 1, 2, 4))):
                    at = rng.randrange(len(lines))
                    lines[at] += f" {word}"
            for near in aim.near:
                for _ in range(rng.randint(1, 3)):
                    lines.insert(rng.randrange(len(lines) + 1), near)
        command = (
            f"{rng.choice(('journalctl -u', 'kubectl logs', 'tail -n 2000'))} {vocab.snake(rng)}"
        )
        session.tool("bash", {"command": command}, "\n".join(lines), rng.choice((0, 1)))
        session.assistant(session.text.assistant_message())


def _tests(session: rc.Session, aim: Target | None) -> None:
    rng = session.rng
    _opening(session)
    session.user(session.text.user_message())
    for _ in range(rng.randint(2, 4)):
        passed = [
            f"tests/{rng.choice(vocab.PACKAGES)}/test_{rng.choice(vocab.NOUNS)}.py::"
            f"test_{vocab.snake(rng)} PASSED"
            for _ in range(rng.randint(15, 60))
        ]
        failed = []
        words = _words(rng, aim, 2)
        if words:
            name = "_".join(w.lower() for w in words if w.isascii() and w.isalnum())
            failed.append(f"FAILED tests/test_{vocab.snake(rng)}.py::test_{name or 'case'}")
        for near in (aim.near if aim and aim.category in _ERRORS else ())[:3]:
            failed.append(
                f"FAILED tests/test_{vocab.snake(rng)}.py::test_{vocab.snake(rng)} - {near}"
            )
        summary = [
            "============================= test session starts ==============================",
            *passed,
            "=========================== short test summary info ============================",
            *failed,
            f"==== {len(failed)} failed, {len(passed)} passed in {rng.randint(2, 90)}.5s ====",
        ]
        session.tool("run_tests", {"command": "pytest -q"}, "\n".join(summary), 1 if failed else 0)
        session.assistant(session.text.assistant_message())


def _near_miss(session: rc.Session, aim: Target | None) -> None:
    rng = session.rng
    _opening(session)
    session.filler(rng.randint(0, 1))
    if aim is None:
        session.filler(2)
        return
    for near in aim.near:
        if aim.category in _ERRORS:  # an error line: a retry loop prints it again and again
            retries = "\n".join(f"retry {i + 1}/5: {near}" for i in range(rng.randint(2, 5)))
            session.user(f"{near}\n\nSeeing this again.")
            session.tool("bash", {"command": f"make {vocab.snake(rng)}"}, retries, 1)
            session.assistant(f"That is `{near}`; {session.text.sentence(4, 10)}")
        else:
            session.user(near)
            session.assistant(session.text.sentence(4, 10))
    words = list(aim.words)
    if len(words) > 1:
        for _ in range(rng.randint(2, 4)):
            # Half the words at most: a message with all but one of a question's words in
            # no order would be as good an answer as the needle's two messages.
            most = rng.sample(words, k=max(1, len(words) // 2))
            prose = vocab.words(rng, rng.randint(2, 6))
            for word in most:
                prose.insert(rng.randrange(len(prose) + 1), word)
            session.user(" ".join(prose).capitalize() + ".")
            session.assistant(session.text.sentence(4, 10))
    session.filler(rng.randint(0, 1))


def _boilerplate(session: rc.Session, aim: Target | None) -> None:
    rng = session.rng
    session.add("session/title", "system", {"title": session.text.title()})
    ask = rng.choice(_ASKS).format(" ".join(_words(rng, aim, 1)) or session.text.path())
    session.user(f"{rng.choice(BOILERPLATE)}\n\n{ask}")
    for _ in range(rng.randint(1, 3)):
        session.tool(
            "read_file",
            {"path": session.text.path()},
            f"{BOILERPLATE[1]}\n\n{session.text.code()}",
            0,
        )
        session.assistant(session.text.assistant_message())
    session.filler(rng.randint(1, 3))


_MAKERS: Final = {
    "docs": _docs,
    "long_output": _long_output,
    "tests": _tests,
    "near_miss": _near_miss,
    "boilerplate": _boilerplate,
}
