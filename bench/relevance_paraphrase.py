"""The ``paraphrase`` category of bench.relevance (issue 21): questions that share no
content word with the session that answers them (synonyms, other phrasing, another
language for the same fact), each beside a distractor session that shares some of the
question's words but is about something else. Lexical search alone can only find the
distractor; the needle is found by meaning. Written for the bench; no transcripts.

``shared_words`` checks the premise for every label: the question's content words (as
stems, identifier parts and CJK bigrams) must be absent from the needle session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

# (user, assistant reply, questions, distractor user, distractor reply)
PARAPHRASES: Final = (
    (
        "The charge client hammers the gateway after a decline; calm it down.",
        "Reduced the backoff multiplier for the charge client from 3 to 1.5 and capped it at"
        " four attempts.",
        (
            "where did we soften the payment reattempts",
            "где мы сделали повторные попытки оплаты менее агрессивными",
        ),
        "The payment form shows the reattempts counter in red.",
        "Changed the colour of the payment reattempts badge to grey.",
    ),
    (
        "Our nightly job keeps dying because the box runs out of RAM halfway.",
        "Streamed the CSV rows instead of loading the file whole; peak usage fell from 9 GB"
        " to 400 MB.",
        ("how did we stop the overnight loader from exhausting memory",),
        "The overnight loader prints memory figures nobody reads.",
        "Removed the figures from the overnight loader output.",
    ),
    (
        "Users complain that signing in takes ages on the first visit of the day.",
        "The auth service was cold-starting; kept one warm instance and authentication"
        " latency dropped to 200 ms.",
        ("why were logins sluggish at dawn",),
        "Show a banner on the logins page when the network is sluggish.",
        "Added the banner to the logins page.",
    ),
    (
        "Customers in Tokyo see tomorrow's date on their invoices.",
        "Invoices were stamped with UTC midnight; now we convert to the customer's zone before"
        " formatting.",
        (
            "bill shows the wrong day for Japanese buyers",
            "请求书上的日期对日本客户不对",
        ),
        "Japanese translation of the wrong password message is missing.",
        "Added the Japanese string for the wrong password message.",
    ),
    (
        "The container image is huge, pushes take forever.",
        "Switched to a multi-stage Dockerfile on a slim base; the image went from 1.9 GB to"
        " 180 MB.",
        ("how did we make the shipped docker artefact lighter",),
        "The docker artefact is shipped without a label.",
        "Added an OCI label to the shipped docker artefact.",
    ),
    (
        "Two workers sometimes grab the same queue message and both send the e-mail.",
        "Added a unique idempotency key per message and a row lock, so duplicates are skipped.",
        (
            "customers received the notification twice",
            "клиенты получали уведомление дважды",
        ),
        "Customers asked for a notification sound setting.",
        "Added a toggle for the notification sound to the settings page.",
    ),
    (
        "Search results page flickers when you type fast.",
        "Debounced the input by 250 ms and cancelled stale fetches with an AbortController.",
        ("why did the hits jitter during rapid keystrokes",),
        "Rapid keystrokes in the hits table should move the selection.",
        "Arrow keys now move the selection in the hits table.",
    ),
    (
        "The coverage number dropped after we moved the helpers.",
        "The moved helpers were no longer under the measured source roots; added the new"
        " package to the coverage configuration.",
        ("instrumentation percentage sank once utilities were relocated",),
        "Which utilities print the instrumentation percentage?",
        "None of our utilities prints an instrumentation percentage.",
    ),
    (
        "Our API keys were sitting in the repository history.",
        "Rotated every key, purged them from history with filter-repo and moved secrets to the"
        " vault.",
        (
            "credentials leaked into git, what did we do",
            "秘密の鍵がリポジトリに漏れた件",
        ),
        "git log is slow on the big repository; what can we do?",
        "Enabled the commit-graph and fsmonitor; git log is fast again.",
    ),
    (
        "The mobile app drains the phone battery in the background.",
        "Location updates ran every second; switched to significant-change monitoring and"
        " batched uploads.",
        ("why did the handset power deplete within hours",),
        "The handset layout needs a dark mode.",
        "Added dark colours for the handset layout.",
    ),
    (
        "Spreadsheet exports open with garbled accented names in Excel.",
        "Excel wanted a byte order mark; we now write UTF-8 with BOM for CSV files.",
        ("umlauts mangled in downloaded sheets",),
        "Downloaded sheets lose the umlauts column width.",
        "Set the column width of downloaded sheets.",
    ),
    (
        "The staging database filled its disk overnight.",
        "Verbose query logging was left on; turned it off and added log rotation with a 2 GB cap.",
        (
            "why did the preproduction volume overflow",
            "为什么测试环境的存储满了",
        ),
        "The preproduction volume graph has no axis labels.",
        "Added axis labels to the preproduction volume graph.",
    ),
    (
        "Product wants the checkout to remember the last used card.",
        "Stored a tokenised reference to the card with the customer profile and preselect it.",
        ("keep the previous payment method selected at purchase",),
        "The previous payment method screen crashes at purchase on old phones.",
        "Guarded the null card brand on the purchase screen.",
    ),
    (
        "Webhook deliveries to partners silently vanish when their server is down.",
        "Failed webhook posts now go to a dead-letter table and are replayed with exponential"
        " delay.",
        ("callbacks to integrators got lost while they were offline",),
        "Integrators asked for an outage status page.",
        "Published a status page with outage history for integrators.",
    ),
    (
        "Translators keep overwriting each other's strings.",
        "Moved the locale files to one file per language and added a merge check in CI.",
        ("localisation edits kept clobbering colleagues",),
        "Localisation edits by colleagues need a review step.",
        "Reviewed the edits.",
    ),
    (
        "The PDF reports render in Times instead of our brand typeface.",
        "The font was not embedded; bundled the TTF and registered it with the renderer.",
        ("wrong lettering in printed statements",),
        "Printed statements show the wrong page count.",
        "Fixed the page count of printed statements.",
    ),
)


def shared_words(query: str, payloads: Iterable[Any]) -> list[str]:
    """The query's analysed terms that the session holds (must be none)."""
    from bench.relevance_reference import analyze, missing_terms

    missing = set(missing_terms(query, payloads))
    return [t for t in dict.fromkeys(analyze(query, query=True)) if t not in missing]
