"""Credentials in event text: the one redactor that applies the rules (``redaction_rules``).

The worker's writer runs it on every payload string before an event is stored or indexed,
and the importers run it before publishing, so both use this module (importers may import
only ``contracts`` and ``transport``). A found credential becomes ``[redacted:<kind>]``; the
words around it stay, so ``export OPENAI_API_KEY=sk-...`` is still found by its name.

Two tiers. *Definite* rules match provider-shaped credentials (a fixed prefix, a length, an
alphabet). *Candidate* rules match a value assigned to a name that says secret (``.env``,
shell, YAML, JSON, TOML, HTTP headers, command-line flags), redacted only when the value
looks random enough (Shannon entropy, a digit, not a placeholder or an identifier path).

Each rule has a positive example (text around a credential generated at run time from its
shape, never a real one) and a negative example that must come out unchanged; the tests
run both. Speed (the writer runs this on every event): one gate over the event's payload
JSON (``payload_might_hold``, never wrong the other way: ``tests/test_redaction_gate.py``)
lets through only events that hold a definite rule's keyword, a candidate's word followed
by an assignment, a run of 16 token characters starting with a prefix, or a %XX escape;
their strings are walked, and in each a rule runs only when the text holds what it needs,
a lowercase keyword (names, ``bearer``, ``://``) or, for token-shaped rules, such a run.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, quote_plus, unquote

import orjson

from contracts.redaction_rules import (
    ALPHABETS,
    MARKER_PREFIX,
    RULES,
    Example,
    Rule,
    Tier,
    candidate_gate,
    candidate_pattern,
    generate,
    marker,
)

__all__ = [
    "MARKER_PREFIX",
    "REDACTION_ON",
    "RULES",
    "Example",
    "RedactionSpec",
    "Redactor",
    "Rule",
    "Tier",
    "generate",
    "make_redactor",
    "marker",
    "parse_patterns",
]

# -- what is never a credential ----------------------------------------------------------------

# Providers' documented example values.
DOCUMENTED_EXAMPLES: Final = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AKIAI44QH8DHBEXAMPLE",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        # jwt.io's example token
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    }
)
# Words that make a value a placeholder. None shorter than five letters: a random token
# of 40 characters holds a given four letters about once in 30,000 (``fake`` was found in
# generated bech32 keys), five or more far less often.
_PLACEHOLDER_WORDS: Final = (
    "xxxxx",
    "****",
    "....",
    "your_",
    "your-",
    "<",
    ">",
    "${",
    "$(",
    "{{",
    "example",
    "placeholder",
    "changeme",
    "redacted",
    "replace_me",
    "replace-me",
    "sample",
    "0000000000",
)
_PLACEHOLDER_VALUES: Final = frozenset(
    {"password", "pass", "secret", "token", "passwd", "admin", "root", "test", "none", "null"}
)
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_DIGEST_PREFIXES: Final = (
    "sha1:",
    "sha256:",
    "sha384:",
    "sha512:",
    "sha1-",
    "sha256-",
    "sha384-",
    "sha512-",
    "md5:",
)
# A dotted/underscored identifier (``process.env.API_KEY``, ``settings.secret_key``) or a
# shell/template reference: a name, not a value.
_IDENTIFIER: Final = re.compile(
    r"[$%@]?[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+[%]?"
)

# A part of a dotted value that no one names a thing with: 12 characters or more mixing
# upper and lower case letters and digits.
_RANDOM_PART: Final = re.compile(r"(?=[^.]*[0-9])(?=[^.]*[a-z])(?=[^.]*[A-Z])[A-Za-z0-9_]{12,}")


def _is_identifier(value: str) -> bool:
    """A name, not a value: a dotted identifier none of whose parts looks random (a
    Vault token ``s.<24 random>`` or Terraform's ``<14>.atlasv1.<67>`` is dotted too)."""
    if not _IDENTIFIER.fullmatch(value):
        return False
    return not any(_RANDOM_PART.fullmatch(part) for part in re.split(r"\.|::", value))


def is_placeholder(value: str) -> bool:
    low = value.lower()
    if low in _PLACEHOLDER_VALUES or value in DOCUMENTED_EXAMPLES:
        return True
    # A placeholder's word is written in one case (your_key, YOUR_KEY, Example); a random
    # token holds one in mixed case far more often (``...YOUr_...``: 1 in ~10^5 of 120
    # characters), and is no placeholder.
    if any(w in value or w.upper() in value or w.capitalize() in value for w in _PLACEHOLDER_WORDS):
        return True
    # one character repeated (``aaaaaaaa``), or the value is masked already
    return len(set(value)) <= 2


def shannon_entropy(value: str) -> float:
    """Bits per character."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _candidate_value_ok(value: str, min_entropy: float, uuid_ok: bool = False) -> bool:
    """Whether an assigned value is random enough to be a credential."""
    value = value.strip()
    low = value.lower()
    if len(value) < 8 or low.startswith(_DIGEST_PREFIXES) or "://" in value:
        return False
    if value[0] in "/~." or value.isdigit() or low in ("true", "false"):
        return False
    if (not uuid_ok and _UUID.fullmatch(value)) or _is_identifier(value):
        return False
    if not any(c.isdigit() for c in value):
        return False
    return shannon_entropy(value) >= min_entropy


def _prose(value: str) -> bool:
    """A quoted value may hold spaces (``"p@ss w0rd"``); one holding two words of letters
    only is prose ("the value is in vault 2"): only its first word may be a credential."""
    return " " in value and sum(w.isalpha() for w in value.split()) >= 2


_WORD_CHARS: Final = frozenset(ALPHABETS["A"])
# How far back a candidate's name is read (a longer one is cut: the check still sees its
# end, where the secret word is).
MAX_NAME_CHARS: Final = 128
_NAME_SET: Final = frozenset(ALPHABETS["A"] + "_.-")


def _name_start(text: str, at: int) -> str:
    """The name a candidate match's secret word ends: from the first name character."""
    start = at
    stop = max(0, at - MAX_NAME_CHARS)
    while start > stop and text[start - 1] in _NAME_SET:
        start -= 1
    return text[start:at]


def _opener(text: str, name: str, at: int) -> str:
    """What stands before a candidate's name (``name``, ending at ``at``): ``?``, ``&``,
    ``#`` or ``&amp;`` open a URL's query parameter (``?api_key=...``); else ``""``."""
    start = at - len(name)
    if text.startswith("&amp;", start - 5):
        return "&"
    return text[start - 1] if start and text[start - 1] in "?&#" else ""


def _value(rule: Rule, m: re.Match[str], value: str | None) -> str | None:
    """A match's value as far as it goes: a candidate's in a URL's query runs to the next
    ``&`` or ``#`` (``?key=<value>&page=2``); a quoted one that reads as prose ("x9k2...
    is the new one") is its first word, judged alone."""
    if not value or rule.tier != "candidate" or "sep" not in rule.pattern.groupindex:
        return value
    if m.string[m.start("secret") - 1] in "\"'" and _prose(value):
        return _FIRST_WORD.match(value).group()  # type: ignore[union-attr]
    if not _opener(m.string, _name_start(m.string, m.start()), m.start()):
        return value
    return _QUERY_END.split(value, 1)[0]


_QUERY_END: Final = re.compile(r"[&#]")
# What an unquoted value would be: up to a space or the punctuation that ends one.
_FIRST_WORD: Final = re.compile(r"[^\s\"'\\`,;{}()<>\[\]]*")


def _accept(rule: Rule, m: re.Match[str], value: str | None, allow: frozenset[str]) -> bool:
    """Whether a rule's match is a credential to redact."""
    if not value or MARKER_PREFIX in value or value in allow or is_placeholder(value):
        return False
    if rule.tier == "definite":
        at = m.start()
        text = m.string
        if not rule.boundary or not at or text[at - 1] not in _WORD_CHARS:
            return True
        # ``\n``, ``\t``, ``\r`` in JSON-escaped text end a word too
        return at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrt"
    # ``name value`` (no = or :) only as a command-line flag: ``--password s3cr3t...``;
    # in prose ("the token abc...") a name and a word are not an assignment.
    sep = m.group("sep") if "sep" in rule.pattern.groupindex else None
    before = _name_start(m.string, m.start())
    if sep is not None and not sep.strip() and not before.startswith("-"):
        return False
    if rule.name is not None:
        # the name as written, after a query's ?, & or # if it opens one (``?key=``)
        tail = m.string[m.start() : m.start("sep")]
        if not rule.name.search(_opener(m.string, before, m.start()) + before + tail):
            return False
    return _candidate_value_ok(value, rule.min_entropy, rule.uuid_ok)


# Payload fields never redacted, by event type (``Redactor.redact_payload``).
IDENTITY_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "session/start": frozenset({"cwd", "parent_session_id"})
}


# -- the redactor -------------------------------------------------------------------------------


@dataclass
class Redactor:
    """Applies ``rules`` (and an operator's extra ones) to text; ``allow`` lists values that
    are never redacted. ``found`` counts redactions by kind since creation (never values)."""

    rules: tuple[Rule, ...] = RULES
    allow: frozenset[str] = frozenset()
    found: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        by_keyword: dict[str, list[Rule]] = {}
        for rule in self.rules:
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(rule)
        index = {id(rule): i for i, rule in enumerate(self.rules)}
        # Token-shaped rules by where their prefix sits in a run of token characters: its
        # first two characters (most), the text just before the run (``SG.``, ``hvs.``),
        # or inside it (``-us``).
        by_head: dict[str, set[int]] = {}
        self._before: list[tuple[str, int]] = []
        self._inside: list[tuple[str, int]] = []
        for i, rule in enumerate(self.rules):
            for prefix in rule.prefixes:
                if prefix.endswith("."):
                    self._before.append((prefix, i))
                elif prefix.startswith("-"):
                    self._inside.append((prefix, i))
                else:
                    by_head.setdefault(prefix.lstrip(":")[:2], set()).add(i)
        self._by_head = {head: frozenset(ix) for head, ix in by_head.items()}
        self._by_head_bytes = frozenset(head.encode() for head in by_head)
        self._before_bytes = tuple(prefix.encode() for prefix, _ in self._before)
        self._inside_bytes = tuple(inner.encode() for inner, _ in self._inside)
        self._by_keyword = tuple(
            (kw, tuple(index[id(r)] for r in rs)) for kw, rs in by_keyword.items()
        )
        # The event gate (``might_hold``): the word of a candidate rule (the only rule of
        # its keyword) opens it only where an assignment's shape follows the word
        # (``candidate_gate``); every other keyword by itself.
        shapes: list[tuple[str, re.Pattern[str], re.Pattern[str], re.Pattern[str] | None]] = []
        words: list[str] = []
        for kw, rs in by_keyword.items():
            rule, *others = rs
            derived = rule.tier == "candidate" and kw and rule.keywords == (kw,)
            if derived and not others and rule.pattern.pattern == candidate_pattern(kw).pattern:
                gate = candidate_gate(kw)
                shapes.append((kw, gate, re.compile(gate.pattern), rule.name))
            else:
                words.append(kw)
        # Each keyword is a substring test of every event's JSON (~0.15 µs, most events
        # holding none): those that share a probe (``_auth``, ``auths`` and
        # ``authorization`` hold ``auth``) are tested only where it is found.
        groups: dict[str, list[str]] = {}
        for word in words:
            probe = next((p for p in _GATE_PROBES if p in word and p != word), word)
            groups.setdefault(probe, []).append(word)
        self._gate_words = tuple((probe, tuple(ws)) for probe, ws in groups.items())
        self._gate_shapes = tuple(shapes)
        # No credential of the table fits in fewer characters (a candidate's value alone is
        # 8); an operator's rule may, so with one every string is looked at.
        self._shortest = 8 if all(rule.keywords != ("",) for rule in self.rules) else 0
        self._subs: dict[int, Callable[[re.Match[str]], str]] = {
            i: self._replacer(rule) for i, rule in enumerate(self.rules)
        }

    def _rows(self, rule: Rule, m: re.Match[str]) -> list[tuple[int, int, str]]:
        """A table rule's values to redact in its match's block: (start, end, value), the
        positions in the block."""
        assert rule.rows is not None
        out = []
        for row in rule.rows.finditer(m.group("secret")):
            value = row.group("secret")
            if MARKER_PREFIX in value or value in self.allow or is_placeholder(value):
                continue
            if rule.name is not None and not rule.name.search(row.group("name")):
                continue
            if rule.tier == "candidate" and not _candidate_value_ok(
                value, rule.min_entropy, rule.uuid_ok
            ):
                continue
            out.append((*row.span("secret"), value))
        return out

    def _replacer(self, rule: Rule) -> Callable[[re.Match[str]], str]:
        mark = marker(rule.kind)
        has_group = "secret" in rule.pattern.groupindex
        if rule.rows is not None:

            def sub_rows(m: re.Match[str]) -> str:
                found = self._rows(rule, m)
                if not found:
                    return m.group(0)
                block = m.group("secret")
                parts, last = [], 0
                for start, end, _ in found:
                    parts += [block[last:start], mark]
                    last = end
                    self.found[rule.kind] += 1
                parts.append(block[last:])
                whole, base = m.group(0), m.start()
                start, end = m.span("secret")
                return whole[: start - base] + "".join(parts) + whole[end - base :]

            return sub_rows

        def sub(m: re.Match[str]) -> str:
            whole = m.group(0)
            value = _value(rule, m, m.group("secret")) if has_group else whole
            if not _accept(rule, m, value, self.allow):
                return whole
            self.found[rule.kind] += 1
            if not has_group:
                return mark
            start = m.start("secret")
            end = start + len(value or "")
            base = m.start()
            return whole[: start - base] + mark + whole[end - base :]

        return sub

    def _token_rules(self, text: str) -> Iterator[int]:
        """The token-shaped rules whose prefix a run of 16 token characters in ``text``
        starts with (or follows, or holds), as found: most strings (prose, short values,
        paths) have no such run, and one character-class scan says so."""
        by_head = self._by_head
        for run in _TOKEN_RUN.finditer(text):
            start = run.start()
            found = by_head.get(text[start : start + 2])
            if found:
                yield from found
            if start and text[start - 1] == "\\" and text[start] in "nrt":
                # a JSON escape's letter begins the run (``\nghp_...``)
                found = by_head.get(text[start + 1 : start + 3])
                if found:
                    yield from found
            if start and text[start - 1] == ".":
                for prefix, i in self._before:
                    if text.startswith(prefix, start - len(prefix)):
                        yield i
            for inner, i in self._inside:
                if inner in run.group():
                    yield i

    def _rules_for(self, text: str, token_rules: set[int] | None = None) -> list[int]:
        chosen = set(self._token_rules(text)) if token_rules is None else token_rules
        low = text.lower()
        for keyword, indexes in self._by_keyword:
            if keyword in low:
                chosen.update(indexes)
        return sorted(chosen)

    def might_hold(self, json_text: str) -> bool:
        """Whether a credential could be in a string of the JSON document ``json_text``: a
        cheap test of the whole event (one gate, not one per string and key) that is never
        wrong the other way. A JSON string's text appears in the document as it is but for
        its escapes; ``\\n``-style escapes are handled by the gates, ``\\u`` and ``\\/``
        could hide a prefix or a keyword, so a document holding them is always walked. A
        candidate rule's word opens the gate only followed by an assignment (``token`` in
        "max tokens" or "token count", ``pass`` in pytest's "passed" do not)."""
        return self._might_hold(json_text, json_text.encode("utf-8", "surrogatepass"))

    def payload_might_hold(self, payload: dict[str, Any], json_text: str) -> bool:
        """``might_hold`` over the payload alone, written by orjson: the gate then reads
        only what the walk would (not the envelope's ids, each a run of token characters),
        and as orjson escapes (never ``\\/``, ``\\u`` only for control characters,
        whatever escapes the publisher used). ``json_text`` (the event's JSON) is read
        instead when orjson cannot write the payload (an integer past 64 bits)."""
        try:
            data = orjson.dumps(payload)
        except TypeError:
            return self.might_hold(json_text)
        return self._might_hold(data.decode(), data)

    def _might_hold(self, json_text: str, data: bytes) -> bool:
        """``might_hold``; ``data`` is ``json_text`` in UTF-8."""
        if "\\u" in json_text or "\\/" in json_text:
            return True
        low = json_text.lower()
        for probe, keywords in self._gate_words:
            if probe in low:
                for keyword in keywords:
                    if keyword in low:
                        return True
        if self._gate_shapes:
            # An ASCII document's lowered text has the same positions and matches the
            # lowercase gate as the text matches it ignoring case (faster: ~3x); any other
            # is matched as it is (``ſ``, ``K``, ``İ`` match letters ignoring case).
            ascii_text = json_text.isascii()
            for keyword, gate, lower_gate, name in self._gate_shapes:
                if keyword in low and (
                    self._assigned(low, lower_gate, name)
                    if ascii_text
                    else self._assigned(json_text, gate, name)
                ):
                    return True
        if self._token_gate(data):
            return True
        return "%" in json_text and _PERCENT.search(json_text) is not None

    def _token_gate(self, data: bytes) -> bool:
        """Whether a run of 16 token characters in ``data`` (UTF-8) starts with (or follows,
        or holds) a token-shaped rule's prefix: ``_token_rules`` for the gate, where most
        documents hold runs (ids) but none of the prefixes. The runs are found in C (the
        UTF-8 bytes mapped to two classes, then ``find``): a regex scan cost 4 µs an event.
        A run may begin with a JSON escape's letter (``\\nghp_...``): its next two
        characters are looked up too."""
        classes = data.translate(_TOKEN_CLASSES)
        by_head = self._by_head_bytes
        at = classes.find(_SIXTEEN)
        while at >= 0:
            end = classes.find(b".", at + 16)
            if end < 0:
                end = len(classes)
            if data[at : at + 2] in by_head:
                return True
            escaped = at and data[at - 1] == _BACKSLASH and data[at] in _ESCAPE_LETTERS
            if escaped and data[at + 1 : at + 3] in by_head:
                return True
            if at and data[at - 1] == _DOT:
                for prefix in self._before_bytes:
                    if data.startswith(prefix, at - len(prefix)):
                        return True
            run = data[at:end]
            for inner in self._inside_bytes:
                if inner in run:
                    return True
            at = classes.find(_SIXTEEN, end)
        return False

    @staticmethod
    def _assigned(text: str, gate: re.Pattern[str], name: re.Pattern[str] | None) -> bool:
        """Whether ``gate`` (``candidate_gate``) finds an assignment that ``_accept`` could
        take: a flag form needs a ``-`` before the name, a rule's ``name`` must match it.
        The name read back in the document holds the string's (a JSON escape's letter may
        precede it), so neither test is stricter here than in ``_accept``."""
        for m in gate.finditer(text):
            before = _name_start(text, m.start())
            if m.group("flag") is not None and "-" not in before:
                continue
            opener = _opener(text, before, m.start())
            if name is not None and not name.search(opener + before + m.group(0) + m.group("name")):
                continue
            return True
        return False

    def redact(self, text: str) -> str:
        """``text`` with every credential replaced by its marker."""
        if len(text) < self._shortest:
            return text  # a key, a tool name, a short value: nothing fits
        token_rules = set(self._token_rules(text))
        # a token split across lines begins with a run its prefix starts: found above
        if token_rules and ("\n" in text or "\\n" in text):
            wrapped = self._redact_wrapped(text)
            if wrapped != text:
                text = wrapped
                token_rules = set(self._token_rules(text))
        chosen = self._rules_for(text, token_rules)
        for i in chosen:
            text = self.rules[i].pattern.sub(self._subs[i], text)
        if "%" in text and _PERCENT.search(text):
            text = self._redact_url_encoded(text)
        return text

    def _redact_wrapped(self, text: str) -> str:
        """Provider-shaped tokens split across two lines: a terminal wrapped a long line
        inside one, or a shell line went on after a ``\\``. A run of 16 token characters
        that begins with a rule's prefix and ends a line of at least ``_WRAP_WIDTH``
        characters (any line, after a ``\\``) is joined with the run that begins the next
        line; when the rule matches the joined text past the line's end but not the first
        part alone, both parts are redacted. (The gate passes such a run as it is.) A first
        part the rule matches alone is redacted by itself, and the rest stays: joining it
        would take the next line's first word whenever a token ends a long line (an
        ``.env`` listing's next name)."""
        out: list[str] = []
        last = 0
        for w in _WRAPPED.finditer(text):
            head, brk, tail = w.group("head", "brk", "tail")
            rules = self._by_head.get(head[:2])
            if not rules or MARKER_PREFIX in head:
                continue
            # a shell's \ before the break (as it is, or JSON-escaped) says it goes on
            continued = brk.startswith("\\\\") or (brk[0] == "\\" and brk[1] in "\r\n")
            if not continued:
                at = w.start()
                line_end = max(text.rfind("\n", 0, at), text.rfind("\\n", 0, at) + 1)
                if w.end("head") - line_end - 1 < _WRAP_WIDTH:
                    continue
            joined = head + tail
            for i in sorted(rules):
                rule = self.rules[i]
                if rule.tier != "definite" or "secret" in rule.pattern.groupindex:
                    continue
                m = rule.pattern.match(joined)
                if m is None or m.end() <= len(head) or rule.pattern.fullmatch(head):
                    continue
                if not _accept(rule, m, m.group(0), self.allow):
                    continue
                self.found[rule.kind] += 1
                out += [text[last : w.start()], marker(rule.kind), brk]
                last = w.start("tail") + m.end() - len(head)
                break
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _redact_url_encoded(self, text: str) -> str:
        """Credentials URL-encoded once: each run of text holding a %XX escape is decoded and
        searched; each value found is replaced in the run in the encoding it appears in."""
        out: list[str] = []
        last = 0  # the end of what ``out`` holds
        scanned = 0  # the end of the last run looked at
        for escape in _PERCENT.finditer(text):
            if escape.start() < scanned:
                continue  # inside the run just looked at
            start = escape.start()
            while start > scanned and text[start - 1] not in _RUN_END:
                start -= 1
            stop = _RUN_STOP.search(text, escape.end())
            end = stop.start() if stop else len(text)
            scanned = end
            encoded = text[start:end]
            decoded = unquote(encoded)
            if decoded == encoded:
                continue
            replaced = encoded
            for kind, value in self.find(decoded):
                for form in (
                    quote(value, safe=""),
                    quote_plus(value, safe=""),
                    quote(value),
                    value,
                ):
                    if form and form in replaced:
                        replaced = replaced.replace(form, marker(kind))
                        self.found[kind] += 1
                        break
            if replaced == encoded:
                continue
            out.append(text[last:start])
            out.append(replaced)
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def find(self, text: str) -> list[tuple[str, str]]:
        """(kind, value) for each credential in ``text`` (for tests and the URL-encoded
        pass; never logged)."""
        out: list[tuple[str, str]] = []
        for i in self._rules_for(text):
            rule = self.rules[i]
            has_group = "secret" in rule.pattern.groupindex
            for m in rule.pattern.finditer(text):
                if rule.rows is not None:
                    out.extend((rule.kind, value) for _, _, value in self._rows(rule, m))
                    continue
                value = _value(rule, m, m.group("secret")) if has_group else m.group(0)
                if value and _accept(rule, m, value, self.allow):
                    out.append((rule.kind, value))
        return out

    def redact_payload(self, kind: str, payload: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """An event's payload redacted (``redact_tree``), but for the fields that are its
        identity: a session/start's cwd names its workspace (whose key the subject
        carries, checked against it) and its parent is an id."""
        kept = IDENTITY_FIELDS.get(kind)
        if not kept or not any(k in payload for k in kept):
            new: dict[str, Any]
            new, changed = self.redact_tree(payload)
            return new, changed
        rest = {k: v for k, v in payload.items() if k not in kept}
        redacted_rest, changed = self.redact_tree(rest)
        if not changed:
            return payload, False
        others = iter(redacted_rest.items())
        out = dict(item if item[0] in kept else next(others) for item in payload.items())
        return out, True

    def redact_tree(self, value: Any) -> tuple[Any, bool]:
        """A JSON tree with every string (keys too) redacted, and whether anything changed;
        unchanged subtrees are returned as they are (no copy)."""
        if isinstance(value, str):
            new = self.redact(value)
            return new, new != value
        if isinstance(value, dict):
            changed = False
            out: dict[str, Any] = {}
            for k, v in value.items():
                nk = self.redact(k) if isinstance(k, str) else k
                nv, c = self.redact_tree(v)
                changed = changed or c or nk != k
                out[nk] = nv
            return (out, True) if changed else (value, False)
        if isinstance(value, list):
            items = [self.redact_tree(v) for v in value]
            if any(c for _, c in items):
                return [v for v, _ in items], True
            return value, False
        return value, False


_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")
# Substrings several gate keywords share (``Redactor._gate_words``): speed only.
_GATE_PROBES: Final = ("auth", "pass", "-u", "-----", "sig")
# ``Redactor._token_gate``: each byte of a token character maps to ``a``, any other to ``.``
_TOKEN_CLASSES: Final = bytes(
    ord("a") if chr(b) in ALPHABETS["W"] else ord(".") for b in range(256)
)
_SIXTEEN: Final = b"a" * 16
_BACKSLASH: Final = ord("\\")
_DOT: Final = ord(".")
# The letters of the JSON escapes that can stand just before a token in a document
# (``\\n``, ``\\r``, ``\\t``, ``\\b``, ``\\f``); ``\\u`` makes the gate walk anyway.
_ESCAPE_LETTERS: Final = frozenset(b"nrtbf")
# Every token-shaped credential holds a run this long of these characters.
_TOKEN_RUN: Final = re.compile(r"[A-Za-z0-9_-]{16,}")
# A token split across two lines (``Redactor._redact_wrapped``): a run of 16 token
# characters (not inside a longer run, but for a JSON escape's letter), a line break (real,
# JSON-escaped, or a shell's ``\`` before either), and the run that begins the next line.
_WRAPPED: Final = re.compile(
    r"(?:(?<![A-Za-z0-9_\\-])|(?<=\\[nrt]))(?P<head>[A-Za-z0-9_-]{16,512}+)"
    r"(?P<brk>(?:\\\\|\\)?(?:\r?\n|(?:\\r)?\\n))(?P<tail>[A-Za-z0-9_-]{1,512}+)"
)
# The shortest line a terminal wraps: a first part ending a shorter line is not joined.
_WRAP_WIDTH: Final = 40
# A run of text around a %XX escape (one URL, query string or form body) ends at these.
_RUN_END: Final = frozenset(" \t\r\n\"'<>")
_RUN_STOP: Final = re.compile(r"[\s\"'<>]")


def compile_extra(patterns: Iterable[tuple[str, str]]) -> tuple[Rule, ...]:
    """Operators' extra rules, ``(kind, regex)``: definite, gated on nothing (they run on
    every string that reaches the rules), with group ``secret`` if the regex names one."""
    out = []
    for kind, pattern in patterns:
        rule = Rule(kind, "definite", re.compile(pattern), ("",), Example("", ""), "")
        out.append(dataclasses.replace(rule, boundary=False))  # the operator's regex decides
    return tuple(out)


def make_redactor(extra: Iterable[tuple[str, str]] = (), allow: Iterable[str] = ()) -> Redactor:
    return Redactor(RULES + compile_extra(extra), frozenset(allow))


@dataclass(frozen=True, slots=True)
class RedactionSpec:
    """What a process applies: on or off, an operator's extra ``(kind, regex)`` rules and
    allowed values. Plain data, so the writer's child process can be handed it."""

    on: bool = True
    extra: tuple[tuple[str, str], ...] = ()
    allow: tuple[str, ...] = ()

    def redactor(self) -> Redactor | None:
        return make_redactor(self.extra, self.allow) if self.on else None

    def to_json(self) -> str:
        import json

        return json.dumps({"on": self.on, "extra": self.extra, "allow": self.allow})

    def fingerprint(self) -> str:
        """A digest of what this spec redacts: on or off, the built-in table (each rule's
        kind, tier, patterns, gates, threshold), the extra rules and the allow-list. An
        index snapshot records its publisher's, so a worker under other rules replays the
        stream instead of restoring text redacted differently. One-way: the allow-list's
        values cannot be read back from it."""
        import hashlib
        import json

        table = [
            [r.kind, r.tier, r.pattern.pattern, r.pattern.flags, list(r.keywords),
             r.min_entropy, r.name.pattern if r.name else None, list(r.prefixes), r.uuid_ok,
             r.rows.pattern if r.rows else None]
            for r in RULES
        ]  # fmt: skip
        data = {"on": self.on, "extra": self.extra, "allow": sorted(self.allow)}
        if self.on:
            data["rules"] = table
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]

    @classmethod
    def from_json(cls, text: str) -> RedactionSpec:
        import json

        data = json.loads(text)
        return cls(
            on=bool(data["on"]),
            extra=tuple((str(k), str(p)) for k, p in data["extra"]),
            allow=tuple(str(v) for v in data["allow"]),
        )


def parse_patterns(text: str) -> tuple[tuple[str, str], ...]:
    """Operators' extra rules as written in a setting: ``kind=regex`` entries, one a line
    (or separated by ``;;``). Raises ``ValueError`` on a bad entry or regex."""
    out = []
    for entry in re.split(r"\n|;;", text):
        entry = entry.strip()
        if not entry:
            continue
        kind, sep, pattern = entry.partition("=")
        kind = kind.strip()
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", kind) or not pattern:
            raise ValueError("each entry is kind=regex, the kind in lowercase letters, digits, -")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"the pattern of {kind} does not compile: {exc}") from None
        out.append((kind, pattern))
    return tuple(out)


REDACTION_ON: Final = RedactionSpec()
