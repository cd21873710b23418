"""Error codes a reply may carry, and the contract package's one exception root.

The message beside a code is always model-readable. ``SessionQueryClientError`` is the root
of every error the requester side of the contract raises (the client, spill decryption):
transport or protocol failures, never a tool result (those are replies with a code).
"""

from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID_ARGUMENTS = "SESSION_QUERY_INVALID_ARGUMENTS"
    # A missing id and another workspace's id answer with the same bytes.
    NOT_FOUND = "SESSION_QUERY_NOT_FOUND"
    NO_IDENTITY = "SESSION_QUERY_NO_IDENTITY"
    GENERATION_CHANGED = "SESSION_QUERY_GENERATION_CHANGED"
    TIMEOUT = "SESSION_QUERY_TIMEOUT"
    CANCELLED = "SESSION_QUERY_CANCELLED"
    OVERLOADED = "SESSION_QUERY_OVERLOADED"
    # The fixed generic failure: no internal detail ever follows it.
    TOOL_FAILED = "SESSION_QUERY_TOOL_FAILED"


TOOL_FAILED_MESSAGE = "The session query tool failed. Try again later."

# nats.micro error headers carry a numeric code beside the description.
MICRO_STATUS = {
    ErrorCode.INVALID_ARGUMENTS: "400",
    ErrorCode.NOT_FOUND: "404",
    ErrorCode.NO_IDENTITY: "401",
    ErrorCode.GENERATION_CHANGED: "409",
    ErrorCode.TIMEOUT: "504",
    ErrorCode.CANCELLED: "499",
    ErrorCode.OVERLOADED: "503",
    ErrorCode.TOOL_FAILED: "500",
}


class SessionQueryClientError(Exception):
    """A transport or protocol failure, not a tool result (those are ``ToolReply``)."""
