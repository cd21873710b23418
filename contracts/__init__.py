"""The wire contract shared with requesters: events, envelopes, replies, subjects, error codes.

Everything here is plain JSON on the wire (encoded with orjson); other languages' clients
speak the same shapes. Nothing in this package depends on the worker.
"""

from contracts.envelope import (
    AgentIdentity,
    CancelRequest,
    ErrorBody,
    Execution,
    SpillLocator,
    ToolReply,
    ToolRequest,
)
from contracts.errors import ErrorCode
from contracts.events import Cite, SessionEvent, Surface
from contracts.messages import Manifest, ManifestTool
from contracts.subjects import TOOL_NAMES, Subjects

__all__ = [
    "TOOL_NAMES",
    "AgentIdentity",
    "CancelRequest",
    "Cite",
    "ErrorBody",
    "ErrorCode",
    "Execution",
    "Manifest",
    "ManifestTool",
    "SessionEvent",
    "SpillLocator",
    "Subjects",
    "Surface",
    "ToolReply",
    "ToolRequest",
]
