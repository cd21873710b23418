"""Three categories of bench.relevance that probe how search fails at scale (issue 29):

- ``pasted_error``: a whole error line pasted as the query, without quotes. The needle
  session holds the exact message in a command's output; near-miss messages (another
  repository, another module, another errno) hold most of its words in another order.
- ``focused``: a question whose content words all sit in one message of the needle, while
  noisy sessions hold them spread (one or two per event of a pasted documentation dump).
- ``rare_word``: a partial match where only a rare word separates the needle from the
  distractors: "did Priya check the planetarium again" against a needle saying "Priya went
  to the planetarium" (``check`` and ``again`` are elsewhere in it) and distractors saying
  "Priya, check the config again": they match more of the query's words, all of them
  common ones; the needle matches its one rare word.

Every text here is written for the bench (error messages of common tools, in their usual
wording, and invented sentences); nothing comes from transcripts. Each spec's ``variants``
and ``reserved`` words feed the at-scale distractors (``bench.relevance_scale``).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from bench import vocabulary as vocab

if TYPE_CHECKING:
    from bench.relevance_corpus import Spec, Turn

# (the line in a command's output, the query pasted unquoted, near-miss lines)
PASTED_ERRORS: Final = (
    (
        "fatal: not a git repository (or any of the parent directories): .git",
        "fatal: not a git repository",
        (
            "fatal: 'origin' does not appear to be a git repository",
            "fatal: repository 'https://git.example.com/acme/app.git/' not found",
            "fatal: 'upstream' does not appear to be a git repository",
        ),
    ),
    (
        "ImportError: cannot import name 'soft_unicode' from 'markupsafe' "
        "(/usr/lib/python3/dist-packages/markupsafe/__init__.py)",
        "ImportError: cannot import name 'soft_unicode' from 'markupsafe'",
        (
            "ImportError: cannot import name 'soft_str' from 'markupsafe'",
            "ImportError: cannot import name 'escape' from 'jinja2' (unknown location)",
        ),
    ),
    (
        "psycopg2.OperationalError: connection to server at 127.0.0.1, port 5432 failed: "
        "FATAL:  password authentication failed for user 'app'",
        "FATAL: password authentication failed for user 'app'",
        (
            "FATAL:  password authentication failed for user 'postgres'",
            "FATAL:  Peer authentication failed for user 'app'",
            "FATAL:  role 'app' does not exist",
        ),
    ),
    (
        "RuntimeError: Event loop is closed",
        "RuntimeError: Event loop is closed",
        (
            "RuntimeError: This event loop is already running",
            "RuntimeError: no running event loop",
            "RuntimeError: Event loop stopped before Future completed.",
        ),
    ),
    (
        "ValueError: too many values to unpack (expected 2)",
        "ValueError: too many values to unpack (expected 2)",
        (
            "ValueError: not enough values to unpack (expected 2, got 1)",
            "ValueError: too many values to unpack (expected 3)",
        ),
    ),
    (
        "AttributeError: 'NoneType' object has no attribute 'group'",
        "AttributeError: 'NoneType' object has no attribute 'group'",
        (
            "AttributeError: 'NoneType' object has no attribute 'get'",
            "AttributeError: 'str' object has no attribute 'group'",
        ),
    ),
    (
        "OSError: [Errno 98] Address already in use",
        "OSError: [Errno 98] Address already in use",
        (
            "OSError: [Errno 99] Cannot assign requested address",
            "ERROR: [Errno 98] error while attempting to bind on address "
            "('127.0.0.1', 8000): address already in use",
        ),
    ),
    (
        "TypeError: 'NoneType' object is not subscriptable",
        "TypeError: 'NoneType' object is not subscriptable",
        (
            "TypeError: 'int' object is not subscriptable",
            "TypeError: 'NoneType' object is not iterable",
            "TypeError: 'NoneType' object is not callable",
        ),
    ),
    (
        "E: Unable to locate package libssl1.1",
        "E: Unable to locate package libssl1.1",
        (
            "E: Package 'libssl1.1' has no installation candidate",
            "E: Unable to locate package libssl-dev",
        ),
    ),
    (
        "Get https://registry.example.com/v2/: net/http: TLS handshake timeout",
        "net/http: TLS handshake timeout",
        (
            "net/http: request canceled while waiting for connection "
            "(Client.Timeout exceeded while awaiting headers)",
            "http: TLS handshake error from 10.0.4.17:53312: EOF",
        ),
    ),
    (
        "error: failed to push some refs to 'github.com:acme/api.git'",
        "error: failed to push some refs to 'github.com:acme/api.git'",
        (
            "error: failed to push some refs to 'github.com:acme/web.git'",
            "error: failed to fetch some refs from 'github.com:acme/api.git'",
        ),
    ),
    (
        "Error: Cannot find module 'webpack-cli/package.json'",
        "Error: Cannot find module 'webpack-cli/package.json'",
        (
            "Error: Cannot find module 'webpack/package.json'",
            "Error: Cannot find module './package.json' from 'cli'",
        ),
    ),
    (
        "git@github.com: Permission denied (publickey).",
        "git@github.com: Permission denied (publickey).",
        (
            "git@gitlab.com: Permission denied (publickey,keyboard-interactive).",
            "Permission denied (publickey,password) for github.com",
        ),
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        (
            "RuntimeError: CUDA error: out of memory",
            "Tried to allocate 512.00 MiB (GPU 0; 2.00 GiB total capacity; CUDA memory)",
        ),
    ),
)

# (question, the one message of the needle holding all its content words)
FOCUSED: Final = (
    (
        "why does the nightly export skip archived invoices",
        "Found why the nightly export skips archived invoices: its query filters on status "
        "'open' before it writes the file.",
    ),
    (
        "how do we rotate the tls certificates on the edge proxies",
        "To rotate the TLS certificates on the edge proxies, run the renew playbook; it "
        "reloads each proxy after the swap.",
    ),
    (
        "which migration added the refunds ledger index",
        "Migration 0031 added the index on the refunds ledger (ledger_id, created_at).",
    ),
    (
        "what limits the upload size on the media endpoint",
        "The upload size on the media endpoint is limited by client_max_body_size in the "
        "proxy, not by the app.",
    ),
    (
        "where do we seed the demo tenant with sample orders",
        "The demo tenant is seeded with sample orders by scripts/seed_demo.py at startup.",
    ),
    (
        "why is the search reindex job paused on weekends",
        "The search reindex job is paused on weekends because the warehouse sync runs then.",
    ),
    (
        "how are feature flags cached in the mobile client",
        "Feature flags are cached in the mobile client for ten minutes and refreshed on launch.",
    ),
    (
        "who approves schema changes for the billing database",
        "Schema changes for the billing database are approved by the data platform team.",
    ),
    (
        "what retention do we keep for audit events in cold storage",
        "We keep audit events in cold storage with a retention of seven years.",
    ),
    (
        "why did the canary deploy roll back on friday",
        "The canary deploy rolled back on Friday: error rates on the checkout path crossed 2%.",
    ),
    (
        "how do we throttle outbound emails per domain",
        "Outbound emails are throttled per domain to 50 a minute by the mailer.",
    ),
    (
        "where is the retry budget for push notifications configured",
        "The retry budget for push notifications is configured in notify.yaml.",
    ),
)

# (question, the needle's sentence: the name and the rare word, without the common words;
#  another sentence of the needle with the common words; distractor sentences: the name
#  and the common words, never the rare one; the rare word). In the first five the common
#  words are two of the corpus's most frequent (``vocabulary.PROSE``: check, again, see,
#  first, need, test, run, look), so a distractor matches one word of the query more than
#  the needle does and only the rare word's weight puts the needle first; in the last five
#  the common word is one, and needle and distractors match as many words.
RARE_WORDS: Final = (
    (
        "did Priya check the planetarium again",
        "Priya went to the planetarium on Saturday with the interns.",
        "Let me check it again tomorrow.",
        ("Priya, check the config again.", "Priya will check the logs again after standup."),
        "planetarium",
    ),
    (
        "what did Tomasz see first in the flamegraph",
        "Tomasz shared a flamegraph of the parser hot path.",
        "See the first comment on the thread.",
        ("Tomasz will see the first draft.", "Tomasz, see the first failure on CI."),
        "flamegraph",
    ),
    (
        "did Ingrid need to test escrow",
        "Ingrid explained how the escrow release works for marketplace sellers.",
        "We need a test for that.",
        ("Ingrid will need a test account.", "Ingrid, we need the test results by noon."),
        "escrow",
    ),
    (
        "did Marta run the check for the auditors",
        "Marta walked the auditors through the access logs.",
        "Run the check again later.",
        ("Marta, run the check before merging.", "Marta will run the lint check."),
        "auditors",
    ),
    (
        "did Sven look at the kanban again",
        "Sven walked us through the kanban on the wall screen.",
        "Look at it again tomorrow.",
        ("Sven, look at the logs again.", "Sven will look at the diff again."),
        "kanban",
    ),
    (
        "where did Kenji fix the sitemap",
        "Kenji regenerated the sitemap after the route rename.",
        "I will fix the lint warnings next.",
        ("Kenji, fix the flaky login check please.", "Kenji said the fix is merged."),
        "sitemap",
    ),
    (
        "what did Oluwaseun decide about the honeypot",
        "Oluwaseun added a honeypot field to the signup form.",
        "We can decide on naming later.",
        ("Oluwaseun will decide after lunch.", "Let Oluwaseun decide on the release name."),
        "honeypot",
    ),
    (
        "how did Dmitri speed up the autocompleter",
        "Dmitri rewrote the autocompleter around a trie.",
        "The speed is fine for now.",
        ("Dmitri wants more speed on the runners.", "Speed matters, says Dmitri."),
        "autocompleter",
    ),
    (
        "what did Aiko find in the pcap",
        "Aiko spotted retransmissions in the pcap from the gateway.",
        "Did you find the runbook?",
        ("Aiko could not find the dashboard link.", "Did Aiko find time to review?"),
        "pcap",
    ),
    (
        "what did Farah write about the quorum",
        "Farah documented why the quorum needs three voters.",
        "I will write the summary tonight.",
        ("Farah will write the release notes.", "Farah can write the tests for it."),
        "quorum",
    ),
)


def command_log(rng: random.Random, line: str) -> str:
    """A command's output of a few generated lines that ends in ``line``."""
    lines = [
        f"[{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}] "
        f"{rng.choice(('INFO', 'DEBUG', 'WARN'))} {vocab.dotted(rng)}: "
        f"{' '.join(vocab.words(rng, rng.randint(3, 8)))}"
        for _ in range(rng.randint(2, 6))
    ]
    return "\n".join([*lines, line])


def doc_sections(rng: random.Random, words: list[list[str]]) -> list[str]:
    """Generated documentation sections, one per item of ``words``, each holding that
    item's words at random places."""
    out = []
    for held in words:
        prose = vocab.words(rng, rng.randint(20, 40))
        for word in held:
            prose.insert(rng.randrange(len(prose) + 1), word)
        out.append(f"## {rng.choice(vocab.NOUNS).capitalize()}\n\n{' '.join(prose)}.")
    return out


def pasted_error_specs(rng: random.Random) -> list[Spec]:
    from bench.relevance_corpus import Spec

    return [
        Spec(
            turns=(("run", command_log(rng, line)),),
            queries=(query,),
            distractors=((("run", command_log(rng, variants[0])),),),
            variants=variants[1:],
        )
        for line, query, variants in PASTED_ERRORS
    ]


def focused_specs(rng: random.Random) -> list[Spec]:
    from bench.relevance_corpus import Spec
    from bench.relevance_reference import FUNCTION_WORDS

    specs = []
    for i, (question, message) in enumerate(FOCUSED):
        words = [w for w in question.split() if w.lower() not in FUNCTION_WORDS]
        # The words spread over a pasted documentation dump: one per section (event).
        spread: tuple[Turn, ...] = (
            ("user", "Pasting the runbook sections so you have them."),
            *(("code", section) for section in doc_sections(rng, [[w] for w in words])),
        )
        turns: tuple[Turn, ...] = (
            ("user" if i % 2 else "assistant", message),
            ("assistant", "Noted."),
        )
        specs.append(Spec(turns=turns, queries=(question,), distractors=(spread,)))
    return specs


def rare_word_specs(rng: random.Random) -> list[Spec]:
    from bench.relevance_corpus import Spec

    return [
        Spec(
            turns=(("user", common), ("assistant", needle)),
            queries=(question,),
            distractors=tuple((("user", other),) for other in others),
            reserved=(rare,),
        )
        for question, needle, common, others, rare in RARE_WORDS
    ]
