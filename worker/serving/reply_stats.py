"""Per-endpoint figures for ``$SRV.STATS`` that the micro counters cannot see.

The micro endpoint only counts requests and times its handler. The handlers are the
executor's, which answers every failure with an error reply and returns as soon as the
request is queued (search) or admitted to the pool (traces, reads), so this records what
the replies were (the endpoint's errors) and how long the tools ran.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from contracts.errors import MICRO_STATUS
from worker.serving.replies import ERROR_CODE_HEADER, EncodedReply

# ``last_error``'s text per numeric code: fixed, because STATS is read by whoever may ask
# ``$SRV.>`` (an operator surface), and a reply's message can hold a requester's ids, its
# query text, or a fact of its workspace (a session that exists). The message itself goes
# only to the requester, in the reply and its headers.
STATS_TEXT: Final = {status: code.value for code, status in MICRO_STATUS.items()}


class ReplyStats:
    """Error replies sent and tool run times, per endpoint name (``ToolDefinition.endpoint``:
    ``session_trace`` or a partition's ``session_trace-p3``, as ``$SRV.STATS`` names it)."""

    def __init__(self) -> None:
        self.errors: Counter[str] = Counter()
        self.last_error: dict[str, str] = {}
        self.runs: Counter[str] = Counter()
        self.run_ns: Counter[str] = Counter()

    def record_reply(self, endpoint: str, reply: EncodedReply) -> None:
        headers = reply.headers
        if headers is None or ERROR_CODE_HEADER not in headers:
            return
        self.errors[endpoint] += 1
        # The micro format, "<code>:<description>", with the code's fixed text.
        status = headers[ERROR_CODE_HEADER]
        self.last_error[endpoint] = f"{status}:{STATS_TEXT.get(status, 'error')}"

    def record_run(self, endpoint: str, elapsed_ns: int) -> None:
        self.runs[endpoint] += 1
        self.run_ns[endpoint] += elapsed_ns

    def run_figures(self, endpoint: str) -> dict[str, Any]:
        """The tool runs this worker executed, for the endpoint's ``data``."""
        runs = self.runs[endpoint]
        total = self.run_ns[endpoint]
        return {
            "run_count": runs,
            "run_processing_time": total,
            "run_average_processing_time": total // runs if runs else 0,
        }
