"""A small, hand-written, deterministic sample corpus that ships with the package.

Two workspaces. ``/home/dev/payments`` holds a lineage (a root session, a child, a live
grandchild and a sibling), a compaction that replaces earlier positions, and citations
across its sessions. ``/home/dev/website`` holds two sessions the payments callers must
never see. ``serve --sample-corpus`` and ``demo`` publish it; tests use it as a fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import orjson

PAYMENTS: Final = "/home/dev/payments"
WEBSITE: Final = "/home/dev/website"

# The sessions by role, for the demo, the CLI example and the tests.
PAY_ROOT: Final = "s-pay-refund-flake"
PAY_CHILD: Final = "s-pay-webhook-retry"
PAY_GRANDCHILD: Final = "s-pay-retry-docs"
PAY_SIBLING: Final = "s-pay-invoice-rounding"
WEB_ROOT: Final = "s-web-static-migration"
WEB_CHILD: Final = "s-web-image-paths"

# The first workspace's live session: the demo calls every tool as this caller.
DEMO_CALLER: Final = PAY_GRANDCHILD

_BASE: Final = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class _Session:
    session_id: str
    start: datetime
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        type_: str,
        surface: str,
        payload: dict[str, Any],
        *,
        minutes: float = 1.0,
        replaces: list[int] | None = None,
        cites: list[tuple[str, int]] | None = None,
    ) -> int:
        seq = len(self.events) + 1
        time = self.start + timedelta(minutes=minutes * (seq - 1))
        event: dict[str, Any] = {
            "session_id": self.session_id,
            "seq": seq,
            "event_id": f"e-{self.session_id}-{seq}",
            "type": type_,
            "surface": surface,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "payload": payload,
        }
        if replaces:
            event["replaces"] = replaces
        if cites:
            event["cites"] = [{"session_id": s, "seq": q} for s, q in cites]
        self.events.append(event)
        return seq

    def begin(self, cwd: str, title: str, parent: str | None = None) -> None:
        self.add("session/start", "system", {"cwd": cwd, "parent_session_id": parent})
        self.add("session/title", "system", {"title": title})

    def user(self, text: str) -> int:
        self.add("step/start", "system", {})
        return self.add("message/user", "user", {"text": text})

    def say(self, text: str, **kw: Any) -> int:
        return self.add("message/assistant", "assistant", {"text": text}, **kw)

    def run(self, tool: str, args: dict[str, Any], output: str, **kw: Any) -> int:
        self.add("tool/call", "tool", {"tool": tool, "arguments": args})
        return self.add("tool/result", "tool", {"tool": tool, "output": output}, **kw)


_PYTEST_FAIL = """\
============================= test session starts ==============================
collected 14 items

tests/test_refunds.py ......F.......                                     [100%]

=================================== FAILURES ===================================
_________________________ test_refund_idempotency ______________________________

    def test_refund_idempotency(ledger, clock):
        ledger.apply(Refund(id="rf_1001", amount=Decimal("12.50")))
>       ledger.apply(Refund(id="rf_1001", amount=Decimal("12.50")))

tests/test_refunds.py:88:
payments/refunds.py:142: in apply
    self._post(entry, at=self._clock.now())
E   AssertionError: duplicate ledger entry rf_1001 (posted 2 times)
=========================== short test summary info ============================
FAILED tests/test_refunds.py::test_refund_idempotency - AssertionError: duplicate
========================= 1 failed, 13 passed in 0.41s =========================
"""

_PYTEST_PASS = """\
============================= test session starts ==============================
collected 14 items

tests/test_refunds.py ..............                                     [100%]

============================== 14 passed in 0.38s ==============================
"""

_REFUNDS_DIFF = """\
--- a/payments/refunds.py
+++ b/payments/refunds.py
@@ -136,9 +136,12 @@ class RefundLedger:
     def apply(self, refund: Refund) -> LedgerEntry:
-        entry = self._entry_for(refund)
-        self._post(entry, at=self._clock.now())
+        # Idempotency: a retried refund must not post a second ledger entry.
+        with self._lock:
+            if (existing := self._by_refund_id.get(refund.id)) is not None:
+                return existing
+            entry = self._entry_for(refund)
+            self._post(entry, at=self._clock.now())
+            self._by_refund_id[refund.id] = entry
         return entry
"""


def _payments_root() -> _Session:
    s = _Session(PAY_ROOT, _BASE)
    s.begin(PAYMENTS, "Fix flaky refund idempotency test")
    s.user(
        "test_refund_idempotency fails about one run in five on CI. Can you find out why "
        "RefundLedger.apply posts the same refund twice?"
    )
    s.say("I'll run the refund tests a few times to reproduce the flake first.")
    s.run("bash", {"command": "pytest tests/test_refunds.py -x -q --count 5"}, _PYTEST_FAIL)
    s.run(
        "read_file",
        {"path": "payments/refunds.py", "start_line": 120, "end_line": 150},
        "class RefundLedger:\n    def apply(self, refund: Refund) -> LedgerEntry:\n"
        "        entry = self._entry_for(refund)\n"
        "        self._post(entry, at=self._clock.now())\n        return entry\n",
    )
    s.say(
        "RefundLedger.apply has no idempotency check: when the webhook retry fires while the "
        "first call is still posting, both calls post an entry. I'll key entries by refund id "
        "under the ledger lock."
    )
    s.run("apply_patch", {"path": "payments/refunds.py", "patch": _REFUNDS_DIFF}, "patched 1 file")
    fixed = s.run("bash", {"command": "pytest tests/test_refunds.py -q --count 20"}, _PYTEST_PASS)
    # Positions 5-14 (the reproduction and the fix) are folded into one summary.
    s.add(
        "compaction",
        "system",
        {
            "summary": "Reproduced the flaky test_refund_idempotency (duplicate ledger entry "
            "rf_1001 from payments/refunds.py:142). Fixed RefundLedger.apply with an "
            "idempotency map keyed by refund id under the ledger lock; 20 runs pass."
        },
        replaces=list(range(5, fixed + 1)),
    )
    s.user("Great. Please also check the webhook sender, it retries without backoff.")
    s.say(
        "The webhook sender retries immediately in payments/webhooks/sender.py. I'll start a "
        "child session for the retry backoff so this one stays about the refund fix."
    )
    s.add("session/end", "system", {"reason": "completed"})
    return s


def _payments_child() -> _Session:
    s = _Session(PAY_CHILD, _BASE + timedelta(hours=2))
    s.begin(PAYMENTS, "Add exponential backoff to webhook retries", parent=PAY_ROOT)
    s.user(
        "WebhookSender.deliver retries at once on a 5xx. Add exponential backoff with jitter, "
        "capped at 60 s, and keep the refund idempotency fix in mind."
    )
    s.say(
        "Because RefundLedger.apply is now idempotent, retrying a refund webhook is safe; the "
        "backoff only has to protect the merchant endpoint.",
        cites=[(PAY_ROOT, 10)],
    )
    s.run(
        "apply_patch",
        {"path": "payments/webhooks/sender.py"},
        "patched 1 file: added RetryPolicy(base=0.5, factor=2.0, cap=60.0, jitter=0.1)",
    )
    s.run(
        "bash",
        {"command": "pytest tests/webhooks -q"},
        "tests/webhooks/test_sender.py::test_backoff_is_capped PASSED\n"
        "tests/webhooks/test_sender.py::test_retry_after_header_wins PASSED\n"
        "tests/webhooks/test_sender.py::test_gives_up_after_max_attempts PASSED\n"
        "3 passed in 0.12s",
    )
    # An edit: the assistant corrects its earlier summary in place.
    s.say("Done: WebhookSender.deliver now uses RetryPolicy; 3 tests cover it.")
    s.say(
        "Done: WebhookSender.deliver now uses RetryPolicy and honours Retry-After; "
        "3 tests in tests/webhooks/test_sender.py cover it.",
        replaces=[10],
    )
    s.add("session/end", "system", {"reason": "completed"})
    return s


def _payments_grandchild() -> _Session:
    s = _Session(PAY_GRANDCHILD, _BASE + timedelta(hours=4))
    s.begin(PAYMENTS, "Document webhook retry behaviour", parent=PAY_CHILD)
    s.user("Write docs/webhooks.md explaining the retry schedule merchants should expect.")
    s.say(
        "The schedule comes from RetryPolicy(base=0.5, factor=2.0, cap=60.0): 0.5 s, 1 s, 2 s, "
        "... up to 60 s, and Retry-After wins when the merchant sends it.",
        cites=[(PAY_CHILD, 7), (PAY_CHILD, 11)],
    )
    s.run("write_file", {"path": "docs/webhooks.md"}, "wrote 46 lines to docs/webhooks.md")
    # Live: the current step has started and has no end yet.
    s.user("Now check how earlier sessions handled the flaky refund test, and link it.")
    return s


def _payments_sibling() -> _Session:
    s = _Session(PAY_SIBLING, _BASE + timedelta(hours=3))
    s.begin(PAYMENTS, "Investigate currency rounding in invoice totals", parent=PAY_ROOT)
    s.user("Invoice totals in JPY are off by one yen against the line items. Why?")
    s.run(
        "bash",
        {"command": "pytest tests/test_invoices.py -q -k rounding"},
        "E   assert Decimal('1001') == Decimal('1000')\n"
        "payments/invoices.py:77: in total\n"
        "    return sum(line.amount.quantize(self.currency.exponent) for line in self.lines)\n"
        "1 failed, 6 passed in 0.09s",
    )
    s.say(
        "Invoice.total rounds each line before summing (payments/invoices.py:77). For "
        "zero-decimal currencies like JPY that accumulates; round once, after the sum, with "
        "ROUND_HALF_EVEN."
    )
    s.add("session/end", "system", {"reason": "completed"})
    return s


def _website_root() -> _Session:
    s = _Session(WEB_ROOT, _BASE + timedelta(hours=1))
    s.begin(WEBSITE, "Migrate the blog to a static site generator")
    s.user("Move the blog from the Django app to Hugo; keep every /blog/<slug>/ URL working.")
    s.run(
        "bash",
        {"command": "python scripts/export_posts.py --out content/blog"},
        "exported 84 posts to content/blog (3 drafts skipped)",
    )
    s.run(
        "bash",
        {"command": "hugo --minify"},
        'WARN  found no layout file for "HTML" for kind "taxonomy"\n'
        "Pages | 212\nStatic files | 37\nTotal in 1480 ms",
    )
    s.say("Added layouts/_default/taxonomy.html; the build is clean and /blog/<slug>/ is kept.")
    s.add("session/end", "system", {"reason": "completed"})
    return s


def _website_child() -> _Session:
    s = _Session(WEB_CHILD, _BASE + timedelta(hours=5))
    s.begin(WEBSITE, "Fix broken image paths after the Hugo migration", parent=WEB_ROOT)
    s.user("Images in old posts 404 after the migration, e.g. /media/2019/flaky-test.png.")
    s.say(
        "The export wrote content/blog without copying /media; the 84 exported posts still "
        "point there.",
        cites=[(WEB_ROOT, 6)],
    )
    s.run(
        "bash",
        {"command": "rsync -a legacy/media/ static/media/ && hugo --minify"},
        "sent 41.2M bytes\nPages | 212\nStatic files | 1094\nTotal in 1710 ms",
    )
    s.add("session/end", "system", {"reason": "completed"})
    return s


def _sessions() -> Iterator[_Session]:
    yield _payments_root()
    yield _website_root()
    yield _payments_child()
    yield _payments_sibling()
    yield _payments_grandchild()
    yield _website_child()


def sample_events() -> list[dict[str, Any]]:
    """Every event of the sample corpus, in a publishable order (per session, seq order)."""
    return [event for session in _sessions() for event in session.events]


def write_jsonl(path: Path) -> int:
    """Write the sample corpus as JSON lines; returns the number of events."""
    events = sample_events()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for event in events:
            out.write(orjson.dumps(event) + b"\n")
    return len(events)


def message_id(event: dict[str, Any]) -> str:
    """The ``Nats-Msg-Id`` that makes publishing the same event twice a no-op."""
    return f"{event['session_id']}:{event['seq']}"
