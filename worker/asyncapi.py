"""``python -m worker.asyncapi > docs/asyncapi.yaml``: the protocol as AsyncAPI 3.

Generated from the contract's pydantic models (``contracts``) and the tools' argument
schemas, so it cannot drift from what the worker accepts and sends; a test compares the
committed file with this output. docs/protocol.md is the prose for the same contract.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from contracts.envelope import CancelRequest, ToolReply, ToolRequest
from contracts.errors import MICRO_STATUS, ErrorCode
from contracts.events import SessionEvent
from contracts.messages import Manifest
from contracts.subjects import SERVICE_NAME, TOOL_NAMES, Subjects
from worker.commands.sample_corpus import DEMO_CALLER, PAY_CHILD, PAY_ROOT, PAYMENTS
from worker.config import WorkerConfig
from worker.store.protocol import ServiceLimits
from worker.tools import input_schema

REF: Final = "#/components/schemas/{model}"
MODELS: Final[tuple[type[BaseModel], ...]] = (
    ToolRequest,
    ToolReply,
    CancelRequest,
    Manifest,
    SessionEvent,
)


# The cancel as a client sends it; tests/test_asyncapi_messages.py sends each to a worker.
CANCEL_EXAMPLES: Final = [
    {
        "name": "with_reason",
        "summary": "The requester's own identity (the request's execution.agent) and a reason.",
        "payload": {
            "request_id": "r-01JF8Z3K2Q",
            "agent": {"session_id": "s-abc", "agent_id": "a-1"},
            "reason": "user pressed stop",
        },
    },
    {
        "name": "without_reason",
        "summary": "No reason: the model reads the fixed sentence for a missing reason.",
        "payload": {"request_id": "r-01JF8Z3K2R", "agent": {"session_id": "s-abc"}},
    },
]


def _schemas() -> dict[str, Any]:
    """Every model's schema under components/schemas, references pointing there."""
    pairs = [(model, "validation") for model in MODELS]
    _, top = models_json_schema(pairs, ref_template=REF)  # type: ignore[arg-type]
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    window = ServiceLimits().max_event_window
    for tool in TOOL_NAMES:
        arguments = input_schema(tool, window)
        # An AsyncAPI Schema object is not a standalone JSON Schema document.
        arguments.pop("$schema", None)
        schemas[f"{tool}_arguments"] = arguments
        schemas[f"{tool}_request"] = {
            "allOf": [
                {"$ref": REF.format(model="ToolRequest")},
                {
                    "type": "object",
                    "properties": {"arguments": {"$ref": REF.format(model=f"{tool}_arguments")}},
                },
            ]
        }
    schemas["ErrorHeaders"] = {
        "type": "object",
        "description": "nats.micro error headers; present on error replies only.",
        "properties": {
            "Nats-Service-Error": {
                "type": "string",
                "maxLength": 512,
                "description": "The error message on one line.",
            },
            "Nats-Service-Error-Code": {
                "type": "string",
                "enum": sorted(set(MICRO_STATUS.values())),
                "description": "Numeric code: "
                + ", ".join(f"{MICRO_STATUS[c]} {c.value}" for c in ErrorCode),
            },
        },
    }
    return schemas


# A request of each tool over the sample corpus (`sessionquery demo`), as a client sends
# it; tests/test_asyncapi_messages.py sends each to a worker serving that corpus.
_CALLER: Final = {"agent": {"session_id": DEMO_CALLER}}
TOOL_EXAMPLES: Final[dict[str, dict[str, Any]]] = {
    "session_search": {"query": "flaky refund test"},
    "session_event_search": {"query": "idempotency", "session_id": PAY_ROOT},
    "session_trace": {"session_id": PAY_CHILD},
    "session_event_trace": {"session_id": PAY_ROOT, "seq": 3},
    "session_event_read": {"session_id": PAY_ROOT, "seq": 2},
}
# A session's first event as a publisher sends it, on the subject its cwd's key names.
EVENT_EXAMPLE: Final = {
    "session_id": "s-new-session",
    "seq": 1,
    "event_id": "e-s-new-session-1",
    "type": "session/start",
    "surface": "system",
    "time": "2026-12-01T09:00:00Z",
    "payload": {"cwd": PAYMENTS, "parent_session_id": None},
}


def _tool_examples(tool: str) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{tool}_example",
            "summary": f"The sample corpus's caller (its cwd {PAYMENTS}) asks {tool}.",
            "payload": {
                "request_id": f"r-example-{tool}",
                "execution": _CALLER,
                "arguments": TOOL_EXAMPLES[tool],
            },
        }
    ]


def _message(name: str, schema: str, summary: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "summary": summary,
        "contentType": "application/json",
        "payload": {"$ref": REF.format(model=schema)},
        **extra,
    }


def _messages() -> dict[str, Any]:
    messages: dict[str, Any] = {
        f"{tool}_request": _message(
            f"{tool}_request",
            f"{tool}_request",
            f"A {tool} request envelope.",
            examples=_tool_examples(tool),
        )
        for tool in TOOL_NAMES
    }
    messages["tool_reply"] = _message(
        "tool_reply",
        "ToolReply",
        "A tool's reply: ok (inline or spilled) or error.",
        headers={"$ref": REF.format(model="ErrorHeaders")},
    )
    messages["manifest_request"] = {
        "name": "manifest_request",
        "summary": "Any body; send an empty one.",
        "payload": {"type": "string", "maxLength": 0},
    }
    messages["manifest"] = _message("manifest", "Manifest", "Tool definitions and the prompt.")
    messages["cancel"] = _message(
        "cancel", "CancelRequest", "Cancel a request (no reply).", examples=CANCEL_EXAMPLES
    )
    messages["session_event"] = _message(
        "session_event",
        "SessionEvent",
        "One session event.",
        examples=[
            {
                "name": "session_start",
                "summary": "A session's first event; published with Nats-Msg-Id s-new-session:1.",
                "payload": EVENT_EXAMPLE,
            }
        ],
        headers={
            "type": "object",
            "properties": {
                "Nats-Msg-Id": {
                    "type": "string",
                    "description": "<session_id>:<seq>, so a retried publish is dropped.",
                }
            },
        },
    )
    messages["dead_letter"] = {
        "name": "dead_letter",
        "summary": "A refused event: its bytes as published (credentials redacted), and why.",
        "contentType": "application/octet-stream",
        "payload": {"type": "string", "description": "The refused message's bytes."},
        "headers": {
            "type": "object",
            "required": ["Sessionquery-Reason", "Sessionquery-Stream-Seq"],
            "properties": {
                "Sessionquery-Reason": {"type": "string"},
                "Sessionquery-Stream-Seq": {"type": "string", "pattern": "^[0-9]+$"},
                "Sessionquery-Truncated": {"type": "string", "enum": ["true"]},
            },
        },
    }
    return messages


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/{kind}/{name}"}


def _channels(subjects: Subjects) -> dict[str, Any]:
    channels: dict[str, Any] = {
        tool: {
            "address": subjects.tool(tool),
            "description": f"Micro endpoint {tool} of service {SERVICE_NAME} (queue group q).",
            "messages": {"request": _ref("components/messages", f"{tool}_request")},
        }
        for tool in TOOL_NAMES
    }
    for tool in TOOL_NAMES:
        channels[f"{tool}_partition"] = {
            "address": f"{subjects.tool(tool)}.p{{partition}}",
            "description": f"{tool} on one partition's subject: served by the workers"
            " holding that partition (protocol.md section 10.4).",
            "parameters": {
                "partition": {
                    "description": "The partition of the caller's workspace: FNV-1a 32 of its"
                    " workspace key, mod the manifest's partition_count."
                }
            },
            "messages": {"request": _ref("components/messages", f"{tool}_request")},
        }
    channels["tool_reply"] = {
        "address": None,
        "description": "The requester's reply inbox: match replies by inbox, not request_id.",
        "messages": {"reply": _ref("components/messages", "tool_reply")},
    }
    channels["manifest"] = {
        "address": subjects.manifest,
        "messages": {"request": _ref("components/messages", "manifest_request")},
    }
    channels["manifest_reply"] = {
        "address": None,
        "messages": {"reply": _ref("components/messages", "manifest")},
    }
    channels["cancel"] = {
        "address": subjects.cancel,
        "description": "Fire-and-forget broadcast; every worker listens.",
        "messages": {"cancel": _ref("components/messages", "cancel")},
    }
    channels["session_events"] = {
        "address": subjects.events_prefix + ".{workspace_key}.{session_id}",
        "description": f"JetStream stream {subjects.events_stream}; protocol.md section 10"
        " says how the stream stores the subject with its partition.",
        "parameters": {
            "workspace_key": {
                "description": "First 16 hex digits of SHA-256 of the UTF-8 cwd of the"
                " event's session (its session/start's payload.cwd); 16 zeros when it has none."
            },
            "session_id": {"description": "The event's session_id."},
        },
        "messages": {"event": _ref("components/messages", "session_event")},
    }
    channels["dead_letters"] = {
        "address": subjects.deadletter,
        "description": "Core NATS (not a stream): subscribe to see refused events live.",
        "messages": {"dead_letter": _ref("components/messages", "dead_letter")},
    }
    return channels


def _operations() -> dict[str, Any]:
    operations: dict[str, Any] = {
        f"call_{tool}": {
            "action": "send",
            "summary": f"Call {tool} (NATS request/reply).",
            "channel": _ref("channels", tool),
            "messages": [_ref(f"channels/{tool}/messages", "request")],
            "reply": {
                "channel": _ref("channels", "tool_reply"),
                "messages": [_ref("channels/tool_reply/messages", "reply")],
            },
        }
        for tool in TOOL_NAMES
    }
    for tool in TOOL_NAMES:
        operations[f"call_{tool}_partition"] = {
            **operations[f"call_{tool}"],
            "summary": f"Call {tool} on the caller's partition (NATS request/reply).",
            "channel": _ref("channels", f"{tool}_partition"),
            "messages": [_ref(f"channels/{tool}_partition/messages", "request")],
        }
    operations["get_manifest"] = {
        "action": "send",
        "channel": _ref("channels", "manifest"),
        "messages": [_ref("channels/manifest/messages", "request")],
        "reply": {
            "channel": _ref("channels", "manifest_reply"),
            "messages": [_ref("channels/manifest_reply/messages", "reply")],
        },
    }
    operations["cancel"] = {
        "action": "send",
        "channel": _ref("channels", "cancel"),
        "messages": [_ref("channels/cancel/messages", "cancel")],
    }
    operations["publish_event"] = {
        "action": "send",
        "summary": "JetStream publish with Nats-Msg-Id.",
        "channel": _ref("channels", "session_events"),
        "messages": [_ref("channels/session_events/messages", "event")],
    }
    operations["receive_dead_letters"] = {
        "action": "receive",
        "channel": _ref("channels", "dead_letters"),
        "messages": [_ref("channels/dead_letters/messages", "dead_letter")],
    }
    return operations


def document() -> dict[str, Any]:
    subjects = Subjects()
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Session Query Worker",
            "version": WorkerConfig().service_version,
            "description": (
                "Read-only search, trace and read tools over earlier agent sessions, served "
                f"over NATS as the micro service {SERVICE_NAME}. Generated by "
                "`python -m worker.asyncapi`; docs/protocol.md is the prose. Subjects use "
                f"the default prefix {subjects.prefix!r}. Spilled results are read from the "
                f"JetStream object store bucket {subjects.spill_bucket!r}."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "embedded": {
                "host": "127.0.0.1:4222",
                "protocol": "nats",
                "description": "The nats-server `sessionquery serve` starts by default.",
            }
        },
        "channels": _channels(subjects),
        "operations": _operations(),
        "components": {"schemas": _schemas(), "messages": _messages()},
    }


def render() -> str:
    import yaml

    header = "# Generated by `python -m worker.asyncapi` (make asyncapi); do not edit.\n"
    body = yaml.safe_dump(document(), sort_keys=False, allow_unicode=True, width=100)
    return header + body


if __name__ == "__main__":
    sys.stdout.write(render())
