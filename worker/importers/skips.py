"""What each format skips on purpose, and why: every other kind it counts is drift.

An importer counts each record it leaves out with ``tally.skip("<what>:<kind>")`` (a
whole source: its reading's ``skipped``). Most formats have records that are skipped by
design (Claude Code's ``file-history-snapshot``: backups of edited files, not
conversation), and an agent's new version may write kinds the importer has never heard
of. The summary, ``watch`` and ``status`` show the second loud, as format drift, so a
skipped kind needs a reason to count as known:

- at the call site, ``tally.skip(what, why="...")``, when the code knows why;
- or in the format's table (below for the built-ins; a plug-in sets its importer's
  ``skipped_by_design``): skip keys, or ``fnmatch`` patterns of them, to the reason.

Anything without a reason is an unknown kind. Keep reasons short: they are printed in
``import --dry-run``'s summary, which people attach to bug reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Final

# A format's known skips: skip key or fnmatch pattern -> why it is skipped.
Reasons = Mapping[str, str]

# The text that follows unknown kinds wherever they are shown.
DRIFT_HINT: Final = "this agent version may have changed its format; please report"
# Kinds kept per format in the imports bucket, and the characters of a kind shown.
MAX_KINDS: Final = 100
MAX_KIND_CHARS: Final = 120

_IMAGES: Final = "images are not searchable text"
_ENCRYPTED: Final = "encrypted thinking: nothing readable"
_COPILOT_TRACE: Final = "the trace of the compaction's model call; its summary is imported"
_VSCODE_BOOKKEEPING: Final = (
    "inlineReference", "codeblockUri", "textEditGroup", "undoStop", "prepareToolInvocation",
    "progressMessage", "confirmation", "warning", "command",
)  # fmt: skip
_OPENCODE: Final = {
    "part:step-start": "step bookkeeping: cost, tokens",
    "part:step-finish": "step bookkeeping: cost, tokens",
    "part:snapshot": "working-tree snapshots",
    "part:patch": "working-tree patches: the tool parts say what changed",
    "part:file": "attachment markers: their content is in other parts",
    "part:agent": "agent markers: their content is in other parts",
    "part:subtask": "sub-task markers: the task tool's part names the sub-agent",
    "part:retry": "retry markers: the retried answer is in other parts",
    "part:compaction": "compaction markers: the summary message is the compaction",
    "part:text:transient": "Kilo CLI's progress lines (a spinner), deleted once done",
    "part:text:empty": "a text part left empty (the model went straight to its tools)",
}

# Cline's and Roo Code's UI log (ui_messages.json, read when there is no API history):
# what the UI shows besides the conversation.
_CLINE_UI: Final = {
    "ui:api_req_started": "an API request's bookkeeping (cost, tokens) with no request text",
    "ui:say:api_req_finished": "an API request's bookkeeping",
    "ui:say:api_req_retried": "an API request retried: the answer is recorded once",
    "ui:say:error_retry": "an API request retried after an error: the answer is recorded once",
    "ui:*:empty": "a message left empty (a streaming placeholder): nothing to read",
    "ui:say:api_req_deleted": "an API request removed from the history",
    "ui:say:deleted_api_reqs": "API requests removed from the history",
    "ui:say:checkpoint_created": "working-tree checkpoints",
    "ui:say:checkpoint_saved": "working-tree checkpoints",
    "ui:say:task_progress": "the task's checklist, repeated as it changes",
    "ui:say:shell_integration_warning": "the editor's terminal notices",
    "ui:say:mcp_server_request_started": "an MCP request's start; its response is imported",
    "ui:say:load_mcp_documentation": "MCP documentation loaded for the model",
    "ui:say:user_feedback_diff": "the user's edit of a proposed diff, shown as a diff",
    "ui:ask:completion_result": "the prompt after a completion, whose text was said before",
    "ui:ask:resume_task": "the prompt to resume an interrupted task",
    "ui:ask:resume_completed_task": "the prompt to resume a completed task",
    "ui:ask:auto_approval_max_req_reached": "the auto-approval limit prompt",
    "ui:image": _IMAGES,
}
_CLINE: Final = {"block:image": _IMAGES, **_CLINE_UI}

_PI: Final = {
    "record:model_change": "model changes",
    "record:thinking_level_change": "thinking-level changes",
    "record:label": "labels on entries",
    "record:custom": "extension state",
    "record:session:repeated": "a repeated session header",
    "message:assistant:image": _IMAGES,
    "message:assistant:thinking:encrypted": _ENCRYPTED,
    "user-block:*": _IMAGES,
}

BUILT_IN: Final[dict[str, Reasons]] = {
    "claude-code": {
        "record:file-history-snapshot": "backups of the files Claude Code edits, not conversation",
        "record:queue-operation": "prompts queued during a turn, recorded again when sent",
        "record:progress": "hook and tool progress notices",
        "record:summary:*": "a summary that titles nothing here: empty, another session's,"
        " or a custom title wins",
        "record:custom-title:empty": "an empty /rename",
        "record:ai-title:*": "a generated title that titles nothing new: empty, repeated,"
        " or a /rename wins",
        "record:permission-mode": "the permission mode chosen (bookkeeping)",
        "record:pr-link": "a link to a pull request the session opened (bookkeeping)",
        "record:teleported-from": "where a web session was teleported from (bookkeeping)",
        "record:*:copied": "an earlier session's records a resumed session's file repeats:"
        " read from that session's own file",
        "system:compact_boundary (folded into the compaction)": "folded into the compaction",
        "system:*": "status notices: API errors, hook summaries, durations",
        "assistant-block:image": _IMAGES,
        "user-block:image": _IMAGES,
        "assistant-block:redacted_thinking": "encrypted thinking: nothing readable",
        # Seen in real 2.1.x homes: thinking kept without its text, only its signature.
        "assistant-block:thinking:encrypted": _ENCRYPTED,
        "assistant-block:text:empty": "a text block that is only white space",
        # Seen in what Claude Code 2.1.332 writes (tests/importers/recorded/claude-code).
        "record:attachment": "context Claude Code renders for the model: environment, date,"
        " tool, agent and skill listings, the system prompt's snapshot, files re-read",
        "record:api-request": "a copy of a request sent to the model",
        "record:api-request-blob": "a copy of a request's messages",
        "record:api-request-shape": "a request's shape, for caching",
        "record:last-prompt": "the last prompt, repeated for the prompt history",
        "record:tools-used": "the tools a turn used, repeated from its calls",
        "record:cost-state": "cost and duration bookkeeping",
        "record:mode": "the permission mode",
        "record:atis-latch": "internal state",
        "record:agent-name": "the name /rename gives, also written as the custom title",
        # Seen in what Claude Code 2.1.337 writes: once per session and route, repeated
        # after a resume.
        "record:api-request-route": "which provider and kind of credential served the"
        " requests (bookkeeping)",
        # Seen in real transcripts of 2.1.204 (a forked sub-agent).
        "record:fork-context*": "a fork's inherited context: the parent's history (by"
        " reference) and the parent's spawning call and its result, copied",
    },
    "codex": {
        "record:event_msg": "UI notifications that repeat the response items",
        "record:turn_context": "the turn's settings, repeated each turn",
        "record:session_meta:repeated": "a resumed rollout repeats its header",
        "response_item:message:developer": "instructions to the model",
        "response_item:message:system": "instructions to the model",
        "response_item:reasoning:unreadable": "encrypted reasoning: nothing readable",
        "response_item:ghost_snapshot": "undo snapshots of the working tree",
        "user-part:input_image": _IMAGES,
        # Seen in what Codex 0.171.0 writes (tests/importers/recorded/codex).
        "record:world_state": "the turn's environment and settings (cwd, shell, mode)",
        "record:token_usage_record": "token usage",
        "record:inter_agent_communication_metadata": "routing of a message between agents",
        "agent_message-part:encrypted_content": "an agent message's encrypted payload",
    },
    "gemini-cli": {
        "record:$rewindTo": "a rewind: what was published stays",
        "record:$set:messages": "a rewrite of the whole history; its messages were read as"
        " they were appended",
        "*-part:inlineData:*": "images and files inlined in a prompt: not searchable text",
        "*-part:fileData:*": "files referenced in a prompt: not searchable text",
    },
    "qwen-code": {
        "record:system:ui_telemetry": "telemetry",
        "record:system:slash_command:no-output": "a slash command that printed nothing",
        "record:file-history": "file snapshots",
        "record:system:attribution_snapshot": "which files the agent changed, for attribution",
    },
    "copilot-cli": {
        "record:assistant.turn_start": "turn boundary",
        "record:assistant.turn_end": "turn boundary",
        "record:assistant.usage": "token usage",
        "record:assistant.message_delta": "streaming pieces of a message recorded whole",
        "record:assistant.reasoning_delta": "streaming pieces of reasoning recorded whole",
        "record:session.model_change": "model changes",
        "record:session.truncation": "truncation notices",
        "record:session.usage_info": "usage notices",
        "record:session.compaction_start": "the compaction's start; its end is the compaction",
        "record:session.compaction_complete": "a compaction that failed",
        "record:session.start:repeated": "a repeated session header",
        "record:session.resume": "a resume: the session goes on, its next records are imported",
        "record:tool.execution_partial_result": "streaming tool output, recorded whole",
        "record:tool.execution_progress": "tool progress notices",
        "record:hook.start": "hook runs",
        "record:hook.end": "hook runs",
        "record:skill.invoked": "a skill file loaded into the context; the skill call is imported",
        "record:pending_messages.modified": "the queue of pending prompts",
        "record:system.message": "the system prompt",
        "record:permission.requested": "a permission prompt; the tool result tells the outcome",
        "record:permission.completed": "a permission answer; the tool result tells it too",
        "record:permission.carriedForward": "a permission carried over; the result tells it",
        "record:session.permissions_changed": "the permission mode (--allow-all) switched",
        "record:session.usage_record": "token usage and cost of one model call",
        "record:subagent.configured": "a sub-agent's model settings",
        "record:subagent.started": "a sub-agent started again (its session is open)",
        "record:subagent.selected": "a custom agent chosen for the session",
        "record:subagent.deselected": "a custom agent put aside",
        "record:session.binary_asset": "an attached image's bytes; the prompt is imported",
        "attachment:file": "a file or image attached to a prompt; its text is imported",
        "attachment:directory": "a folder attached to a prompt; its text is imported",
        "attachment:selection": "an editor selection attached to a prompt",
        "attachment:blob": "inline data (an image) attached to a prompt",
        # Written around a compaction, outside the event schema Copilot ships: the trace of
        # the model call that wrote the summary (its request, reply, and the conversation
        # it summarised); the summary itself is session.compaction_complete's.
        "record:model.turn_started": _COPILOT_TRACE,
        "record:model.model_call_started": _COPILOT_TRACE,
        "record:model.model_call_success": _COPILOT_TRACE,
        "record:model.message": _COPILOT_TRACE,
        "record:model.response": _COPILOT_TRACE,
        "record:model.turn_ended": _COPILOT_TRACE,
        "record:model.messages_snapshot": _COPILOT_TRACE,
    },
    "pi": _PI,
    "openclaw": {
        **_PI,
        # Read in the main thread: older versions truncated the transcript back after a
        # heartbeat turn that answered HEARTBEAT_OK, removing the entries they hang from.
        "entry:unknown-parent": "an entry whose parent OpenClaw pruned (a heartbeat turn)",
        "record:leaf": "branch moves: the entries after one hang from the entry it names",
        "record:reset": "a fresh model window: what came before stays the history",
        "record:checkpoint-or-trajectory-file": "checkpoint and trajectory copies of a transcript",
        "entry:rewritten": "entries a transcript rewrite wrote again, already read",
        "session:cold-archived": "sessions moved to cold storage (opt-in archives)",
        "message:custom:openclaw.nested-tool.v1": "a tool run through tool search's"
        " tool_call, recorded again: the outer call and its result carry it",
    },
    "hermes": {
        "message:compaction-copy": "a turn Hermes wrote again around a compaction",
        "message:system": "the system prompt",
        "message:session_meta": "the gateway's header of a new session (model, tools, platform)",
        "message:*:empty": "messages with no text (a turn that only called tools)",
        "content:image_url": _IMAGES,
    },
    "auggie": {
        "request_node:2": _IMAGES,
        "tool_result:image": _IMAGES,
        "request_node:4": "the IDE's state: its folder is the session's cwd",
        "response_node:9": "billing and token usage",
        "response_node:10": "billing and token usage",
        "exchange:incomplete": "a turn cancelled before it completed",
    },
    "cursor": {
        "record:turn_ended": "turn boundary",
        "block:*:image": _IMAGES,
    },
    "droid": {
        "record:todo_state": "the todo list's state",
        "record:session_start:repeated": "a repeated session header",
        "record:agent_turn_outcome": "how a turn ended (completed, its result's kind)",
        "block:*:image": _IMAGES,
    },
    "opencode": _OPENCODE,
    "kilo": _OPENCODE,
    "goose": {
        "content:image": _IMAGES,
        "content:redactedThinking": "encrypted thinking: nothing readable",
        "content:toolConfirmationRequest": "confirmation prompts of a call recorded as such",
        "content:frontendToolRequest": "calls the UI ran",
        "content:systemNotification": "UI notifications",
    },
    "cline": _CLINE,
    "roo-code": _CLINE,
    "openhands": {
        "event:SystemPromptEvent": "the system prompt",
        "event:ConversationStateUpdateEvent": "agent state changes",
        "event:PauseEvent": "pauses",
        "event:agent_state_changed": "agent state changes",
        "event:change_agent_state": "agent state changes",
        "event:recall": "memory recalls: context the agent fetched",
        "event:null": 'empty observations ("No observation"): nothing happened to report',
        "event:system": "the system prompt",
    },
    "vscode-copilot": dict.fromkeys(
        [f"response:{kind}" for kind in _VSCODE_BOOKKEEPING],
        "editor bookkeeping: references, edits, progress",
    ),
    "amp": {
        "content:image": _IMAGES,
        "content:redacted_thinking": _ENCRYPTED,
        "content:server_tool_use": "calls the model's provider ran itself (web search)",
    },
    "amazon-q": {"user:image": _IMAGES},
    "kiro-cli": {"user:image": _IMAGES},
    "zed": {
        "content:Image": _IMAGES,
        "content:RedactedThinking": _ENCRYPTED,
        "segment:RedactedThinking": _ENCRYPTED,
        "message:system": "the first agent's system messages: instructions to the model",
    },
}


def reason_for(what: str, table: Reasons) -> str | None:
    """Why ``what`` is skipped by design, per ``table``; None: an unknown kind."""
    exact = table.get(what)
    if exact is not None:
        return exact
    for pattern, why in table.items():
        if fnmatchcase(what, pattern):
            return why
    return None


def kinds_text(counts: Mapping[str, int]) -> str:
    """``kind n, kind n`` in kind order: the same figures always give the same text."""
    return ", ".join(f"{short(what)} {n}" for what, n in sorted(counts.items()))


def short(kind: str) -> str:
    """A kind as shown: a source's own type names it, and a file of another shape may
    hold anything in that field."""
    return kind if len(kind) <= MAX_KIND_CHARS else kind[: MAX_KIND_CHARS - 1] + "…"


def bounded(counts: Mapping[str, int]) -> dict[str, int]:
    """At most ``MAX_KINDS`` kinds (the most counted), each cut to ``MAX_KIND_CHARS``, in
    kind order: what a stored record holds (a KV value has a size limit)."""
    kept: dict[str, int] = {}
    for what, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_KINDS]:
        kept[short(what)] = kept.get(short(what), 0) + n
    return dict(sorted(kept.items()))


def unknown_text(counts: Mapping[str, int]) -> str:
    """The loud line of unknown kinds (empty when there are none)."""
    if not counts:
        return ""
    return f"unknown record kinds: {kinds_text(counts)} — {DRIFT_HINT}"
