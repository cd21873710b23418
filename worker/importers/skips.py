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
from dataclasses import dataclass
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
    # The v2 message model (``session_message``), read in OpenCode 1.18.33's binary.
    "session_message:agent-switched": "the agent a session switched to: bookkeeping",
    "session_message:model-switched": "the model a session switched to: bookkeeping",
    "session_message:user:file": "a file attached to a prompt: a URI, not its content",
    "session_message:text:empty": "a text block left empty (the model went straight to its tools)",
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
    "record:session_info:cleared": "the session's name cleared: the title published stays",
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
        # Read in the writer of Claude Code 2.1.337 (WRITER_KINDS): what each holds.
        "record:ended-by-model": "a mark that the model ended the session; a resume may"
        " go on, so it ends nothing",
        "record:continued-in": "the id of the session this one goes on in, whose own file"
        " is imported",
        "record:tag": "a tag the user gave the session",
        "record:relocated": "the folder a moved session goes on in; the session keeps its"
        " start's cwd",
        "record:agent-color": "the colour the UI shows the session's agent in",
        "record:agent-setting": "the agent definition the session runs as (a name)",
        "record:frame-link": "a link to an artifact the session published (bookkeeping)",
        "record:artifact-comment-monitor": "which published artifacts' comments are"
        " watched (UI state)",
        "record:artifact-autoreact-ledger": "which artifact comments were reacted to (UI state)",
        "record:bridge-session": "the remote-control bridge's session id and sequence",
        "record:history-suppression": "a mark that the session is hidden from the prompt history",
        "record:file-history-delta": "backups of the files Claude Code edits, not conversation",
        "record:attribution-snapshot": "which lines the agent wrote, for commit attribution",
        "record:isolation-latch": "which side (web, connectors) the session is isolated"
        " to (internal state)",
        "record:session-owner": "the account that owns the session",
        "record:hybrid-organization": "an organization the session's requests went to"
        " (bookkeeping)",
        "record:dev-mods": "the folder of local modifications loaded (internal state)",
        "record:memory-mode": "the memory setting switched on or off",
        "record:denial-counts": "how many tool uses auto mode denied (bookkeeping)",
        "record:data-flow-records": "provenance of the data the session read, for"
        " data-flow rules (bookkeeping)",
        "record:data-flow-incomplete": "a mark that the data-flow provenance is incomplete",
        "record:derived-from": "which sessions this one's data came from (branch, fork,"
        " import): provenance, not conversation",
        "record:worktree-state": "the git worktree the session entered or left (internal state)",
        "record:content-replacement": "the shorter text the model was sent in place of a"
        " large tool result; the result itself is imported",
        "record:api-request-resumed": "a copy of a request resumed after a pause",
        "record:fork-context-ref": "where a forked sub-agent's inherited context ends in"
        " the parent; the sub-agent's own records are imported",
        "record:observer-ref": "a link to an observer agent's file (bookkeeping)",
        "record:resume-head-vouch": "a checksum of the file's head, for a fast resume",
        "record:repl-mode": "the REPL tool switched on or off",
        "record:host-row:withheld": "a script's calls left out of the file on purpose",
        "record:host-row:*:repeated": "a script's call an assistant record holds too",
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
        # Read in the writer of Codex 0.171.0 (WRITER_KINDS): what each holds.
        "record:dynamic_tools_updated": "the dynamic tools offered to the model changed",
        "record:security_risk_score": "a risk score of the session's actions (bookkeeping)",
        "record:id_allocation": "the ids given to response items (bookkeeping)",
        "response_item:image_generation_call": "a generated image: " + _IMAGES,
        "response_item:compaction": "a compaction whose summary the provider keeps"
        " encrypted: nothing readable",
        "response_item:context_compaction": "a compaction whose summary the provider keeps"
        " encrypted: nothing readable",
        "response_item:compaction_trigger": "a request for a compaction, not history",
        "response_item:configuration_update": "the reasoning setting changed",
        "response_item:additional_tools": "tools made available to the model",
        "response_item:other": "an item Codex itself could not read",
        "realtime_item:realtime_session_started": "a voice session's start",
        "realtime_item:realtime_session_closed": "a voice session's end",
        "realtime_item:frame": "a media frame of the voice session",
        "realtime_item:bem_item_promoted": "an agent item shown in the voice session;"
        " the item itself is imported",
        "realtime_item:turn_input_accepted": "voice input taken as a turn's input; the"
        " turn's messages are imported",
        "realtime_item:session_end_input_saved": "the voice session's last input kept"
        " for the next turn (bookkeeping)",
    },
    "gemini-cli": {
        "file:header-only": "a chat with no message yet (the CLI writes its header before"
        " the first prompt, or the user quit): published once it has one",
        "file:resume-stub": "a chat file the CLI starts when it resumes a session in a later"
        " minute (its header and context, no message): the session goes on in its own file",
        "record:$rewindTo": "a rewind: what was published stays",
        "record:header:missing": "a chat file whose header line is gone (its first lines"
        " lost; the CLI cannot load it either): its session is named by the file",
        "record:$set:messages": "a rewrite of the whole history; its messages were read as"
        " they were appended",
        "*-part:inlineData:*": "images and files inlined in a prompt: not searchable text",
        "*-part:fileData:*": "files referenced in a prompt: not searchable text",
        # Read in the writer of Gemini CLI 0.61.0 (WRITER_KINDS): what each holds.
        "*-part:functionResponse": "a tool's response sent back to the model; the tool"
        " call's result is imported",
        "*-part:functionCall": "a tool call a history rewrite repeats; the message's"
        " toolCalls are imported",
        "record:$set:memoryScratchpad": "the memory's digest of the session's workflow, kept"
        " for later sessions",
        "record:$set:directories": "workspace folders added; the session's cwd is its project's",
    },
    "qwen-code": {
        "record:system:ui_telemetry": "telemetry",
        "record:system:slash_command:no-output": "a slash command that printed nothing",
        "record:file-history": "file snapshots",
        "record:system:attribution_snapshot": "which files the agent changed, for attribution",
        # Read in the writer of Qwen Code 0.24.4 (WRITER_KINDS): what each holds.
        "record:system:file_history_snapshot": "file snapshots",
        "record:system:session_source": "what created the session (a fork, a job): its"
        " parent, when it has one, is read from parent_session",
        "record:system:session_model": "the model the session is bound to",
        "record:system:branch_checkpoint": "a checkpoint of the conversation's branch"
        " (bookkeeping)",
        "record:system:rewind": "a rewind: what was published stays",
        "record:system:goal_state": "the goal feature's state (UI)",
        "record:system:goal_turn_end": "the end of a goal's turn (bookkeeping)",
        "record:system:omni_recall": "memory recalls: context the agent fetched",
        "record:system:user_text_elements": "how the user's prompt was shown (pasted blocks,"
        " mentions); the prompt is imported",
        "record:system:turn_result": "how a turn settled (bookkeeping)",
        "record:system:session_artifact_event": "files the session produced (bookkeeping)",
        "record:system:session_artifact_snapshot": "files the session produced (bookkeeping)",
        "record:system:session_sources_snapshot": "sources the session read (bookkeeping)",
        "record:system:parent_session": "the parent named again after the session started",
    },
    "copilot-cli": {
        # Read in 1.0.102's runtime.node (its SQL): both are reported; the index is read
        # only for the sessions it lists whose event log is gone.
        "file:session-store.db": "Copilot CLI's cross-session index: turns, checkpoints and"
        " files copied from the event logs, which are read (a session whose log is gone is"
        " read from it)",
        "file:session.db": "a session's own SQL tables: the ones the agent's sql tool"
        " creates (todos it tracks) and its workflow runs' bookkeeping, not the conversation",
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
        # 1.0.10 (a real home) marks a sub-agent's run without an agentId and without its
        # records: the task call and its result, which holds the answer, are imported.
        "record:subagent.completed": "a sub-agent's end marker without its records in the"
        " file; the task call's result holds its answer",
        "record:subagent.failed": "a sub-agent's failure marker without its records in the"
        " file; the task call's result tells it",
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
        # Read in the event schema Copilot CLI 1.0.102 ships (WRITER_KINDS): each event it
        # persists, and what it holds.
        **dict.fromkeys(
            [
                f"record:permission.{kind}"
                for kind in (
                    "assentDetected",
                    "contextualAuthorization",
                    "messageAuthorization",
                    "messageAuthorizationDegraded",
                    "messageAuthorizationRead",
                )
            ],
            "a retired permission extractor's markers: Copilot itself ignores them",
        ),
        **dict.fromkeys(
            [
                f"record:session.fusion_{kind}"
                for kind in (
                    "change_checkpoint",
                    "commit_started",
                    "completed",
                    "resolved",
                    "route_failed",
                )
            ],
            "a multi-model (Fusion) turn's routing and totals (bookkeeping)",
        ),
        "record:assistant.fusion_phase_completed": "an intermediate phase of a multi-model"
        " turn; the turn's answer is its assistant.message",
        "record:assistant.fusion_phase_failed": "a failed phase of a multi-model turn",
        "record:session.fusion_handoff": "the repair note between two phases of a"
        " multi-model turn; the turn's answer is its assistant.message",
        "record:session.context_changed": "the cwd and git context changed: the session"
        " keeps its start's cwd",
        "record:session.context_cleared": "the conversation cleared: what was published stays",
        "record:tool.user_requested": "a tool the user ran; its execution is imported",
        "record:external_tool.requested": "a tool run by the client; its execution is imported",
        "record:human_response.recorded": "the user's answer to a question or plan review;"
        " the asking tool's result holds it",
        "record:skill.context_delivered": "a skill's text given to the model; the skill call"
        " is imported",
        "record:skill.context_delivered_ref": "a skill's text given again (a reference)",
        "record:skill.invoked_ref": "a skill loaded again (a reference)",
        "record:session.mode_notice_delivered": "the notice of a mode change given to the"
        " model (instructions)",
        "record:session.mode_changed": "the agent mode changed (plan, autopilot)",
        "record:session.model_deselected": "a model withdrawn by its host",
        "record:session.auto_mode_resolved": "the model auto mode chose (bookkeeping)",
        "record:session.autopilot_objective_changed": "autopilot's objective file changed",
        "record:session.plan_changed": "the plan file changed",
        "record:session.workspace_file_changed": "a workspace file changed (its path)",
        "record:session.completion_receipt": "facts about an accepted completion (bookkeeping)",
        "record:session.usage_checkpoint": "usage accounting (bookkeeping)",
        "record:session.session_limits_changed": "the session's limits changed",
        "record:session.permission_recovery": "an autopilot permission recovery's state",
        "record:session.remote_steerable_changed": "remote steering switched on or off",
        "record:session.request_body_compression_disabled": "a transport setting",
        "record:session.schedule_created": "a prompt scheduled with /every or /after; it is"
        " imported when it runs",
        "record:session.schedule_cancelled": "a scheduled prompt cancelled",
        "record:session.schedule_rearmed": "a scheduled prompt re-armed",
        "record:session.canvas.recorded": "a canvas opened (UI state)",
        "record:session.canvas.removed": "a canvas closed (UI state)",
        "record:tool_search.activated": "tools activated by tool search, restored on resume",
        "record:mcp.oauth_recovery_completed": "an MCP server's sign-in recovered",
        "record:session.task_complete:empty": "a task completion without a summary",
        "record:session.handoff:empty": "a handoff without a summary or context",
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
        # Read in the writer of Droid 0.225.2 (WRITER_KINDS).
        "block:*:redacted_thinking": _ENCRYPTED,
        "block:*:document": "a PDF attached without its text: its bytes are not searchable",
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
    # Read in the block types of @cline/shared 0.0.86 (Cline CLI 3.0.65's SDK).
    "cline-cli": {
        "block:image": _IMAGES,
        "block:media": "generated media (images, audio): not searchable text",
        "block:redacted_thinking": _ENCRYPTED,
    },
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
        # Read in the SDK OpenHands 1.16.0 runs (openhands-sdk 1.21.0: WRITER_KINDS).
        "event:CondensationRequest": "a request for a condensation; the Condensation is imported",
        "event:CondensationSummaryEvent": "the summary given to the model; the Condensation"
        " holds it",
        "event:HookExecutionEvent": "hook runs",
        "event:TokenEvent": "the token ids of a model call",
        "event:LLMCompletionLogEvent": "a raw log of a model call",
        "event:ACPToolCallEvent": "an ACP tool call still running: its final state is imported",
        "event:ACPToolCallEvent:repeated": "an ACP tool call reported again after its final state",
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
    "llm": {
        "part:attachment": "attachments (images, audio, files) are not searchable text",
        "part:tool_result:attachment": "attachments (images, audio, files) are not searchable text",
        "attachment": "attachments (images, audio, files) are not searchable text",
        "fragment": "files and URLs given with -f, stored apart from the prompt (0.31 and older)",
        "part:reasoning:redacted": _ENCRYPTED,
        "message:legacy-copy": "the history of a conversation LLM 0.31 logged, sent again by"
        " a later version's first turn: imported from the older tables",
        "message:fork-copy": "the history a fork shares with its thread: imported there",
        "message:*:empty": "messages with no parts",
        "part:*:text:empty": "empty text",
    },
    "mini-swe-agent": {
        "message:system": "the system prompt (the agent's template)",
        "content:image_url": _IMAGES,
        "content:input_image": _IMAGES,
        "message:*:empty": "messages with no text and no call",
        "output:reasoning:encrypted": _ENCRYPTED,
    },
    "swe-agent": {
        "message:system": "the system prompt (the agent's template)",
        "message:demonstration": "a demonstration: a solved example run from the agent's"
        " config, shown to the model, not this run",
        "step:requeried": "a reply the agent rejected (a format error, a blocked command) and"
        " asked the model again for; the history keeps the reply it took",
        "attempt:chosen-copy": "the retry run's copy of its chosen attempt, imported as that"
        " attempt",
        "content:image_url": _IMAGES,
        "message:*:empty": "messages with no text and no call",
    },
    "open-interpreter": {
        "user:image": _IMAGES,
        "user:file": "files given with a prompt: their paths, not conversation",
        "computer:image": _IMAGES,
        "*:message:empty": "messages with no text",
    },
    "nanocoder": {
        "message:images": _IMAGES,
        "tool:structuredContent": "the interface's copy of a tool's result; its text is imported",
        "message:system": "a system prompt: the writer keeps it out of the file",
        "message:*:empty": "messages with no text and no call",
        "title:summary": "a title autosave took from a compaction's summary (the last user"
        " message): not a title",
    },
    "trae-agent": {
        "message:system": "the system prompt (the agent's own)",
        "call:task_done": "the model's signal that the task is done: Trae runs no tool for it"
        " and ends the run (the run's end is imported)",
        "call:unfinished": "a call of an LLM interaction whose step is not recorded yet (its"
        " tools run) or never was (the run was interrupted or crashed): it has no result",
        "step:lakeview_summary": "a second model's summary of a step for the console, not the"
        " conversation",
    },
    "nanobot": {
        "record:provider_state": "the provider's own replay state (opaque), not conversation",
        "message:hidden": "the marker a working-memory summary inserts: the transcript stays"
        " whole beside it",
        "metadata:_last_summary": "the working-memory summary of the transcript's older part,"
        " which the file keeps whole",
        "checkpoint:tool_call": "a call of the turn in flight: imported with the saved turn",
        "checkpoint:tool_result": "a result of the turn in flight: imported with the saved turn",
        "user:image_url": _IMAGES,
        "message:*:empty": "messages with no text and no call",
    },
    "code-puppy": {
        "request:instructions": "the system prompt each request carries (the agent's own)",
        "request-part:system-prompt": "the system prompt (the agent's own)",
        "request-part:tool-availability-delta": "which tools the model was shown (bookkeeping)",
        "request-part:speech": "audio is not searchable text",
        "response-part:speech": "audio is not searchable text",
        "response-part:file": "files the model returned (images, documents): not text",
        "response-part:compaction:encrypted": "the provider's own compaction, kept only encrypted",
        "response-part:thinking:encrypted": _ENCRYPTED,
        "user-prompt:binary": "images, audio and files given with a prompt: not text",
        "user-prompt:*-url": "images, audio, video and documents linked in a prompt: not text",
        "user-prompt:uploaded-file": "files uploaded to the provider: not text",
        "user-prompt:cache-point": "a prompt-caching marker",
        "request:empty": "messages with no parts",
        "response:empty": "messages with no parts",
        "request-part:user-prompt:empty": "empty text",
        "response-part:text:empty": "empty text",
        "encoding:json": "a plug-in's own history, not pydantic-ai messages",
    },
}


@dataclass(frozen=True)
class WriterKinds:
    """Every record kind an agent's writer can write to the files its importer reads, as
    found in the writer (``package`` at ``version``), each under the skip key the importer
    would count it by. Each is either imported (``imported``) or has a reason in
    ``BUILT_IN``: ``tests/importers/test_writer_kinds.py`` holds both to it."""

    package: str
    version: str
    imported: frozenset[str]
    skipped: frozenset[str]


def _keys(prefix: str, kinds: str) -> frozenset[str]:
    """Skip keys ``prefix + kind`` of the white-space separated ``kinds``."""
    return frozenset(prefix + kind for kind in kinds.split())


# OpenCode's (and Kilo CLI's) v2 message model: the ``Session.Message`` union of the
# ``session_message`` rows, each type a ``Struct`` with an identifier in both binaries.
_V2_IMPORTED: Final = _keys("session_message:", "user synthetic system shell assistant compaction")
_V2_SKIPPED: Final = _keys("session_message:", "agent-switched model-switched")

# How the kinds were found: the package's bundled code (a compiled binary: its strings)
# was searched for the literals the writer puts in ``type`` (the claude-code writer keeps
# a table of every record type it appends, and how each is routed between files).
WRITER_KINDS: Final[dict[str, WriterKinds]] = {
    "claude-code": WriterKinds(
        "@anthropic-ai/claude-code",
        "2.1.337",
        imported=frozenset(
            {"user", "assistant", "system", "summary", "custom-title", "ai-title", "host-row"}
        ),
        skipped=_keys(
            "record:",
            "progress attachment file-history-snapshot file-history-delta last-prompt "
            "continued-in resume-head-vouch content-replacement data-flow-records "
            "data-flow-incomplete derived-from api-request-shape api-request-blob "
            "api-request api-request-resumed api-request-route fork-context-ref frame-link "
            "ended-by-model tag relocated agent-name agent-color agent-setting pr-link "
            "artifact-comment-monitor artifact-autoreact-ledger bridge-session "
            "history-suppression attribution-snapshot mode permission-mode isolation-latch "
            "session-owner dev-mods memory-mode atis-latch denial-counts tools-used "
            "worktree-state cost-state queue-operation observer-ref repl-mode "
            "hybrid-organization",
        ),
    ),
    # Rust: the variant names of the rollout's serde enums (RolloutItem, ResponseItem,
    # RealtimeItemContent) among the binary's strings, and each variant's fields in the
    # public source of the same types.
    "codex": WriterKinds(
        "@openai/codex",
        "0.171.0",
        imported=frozenset(
            {
                "record:session_meta",
                "record:compacted",
                "record:inter_agent_communication",
                "realtime_item:transcript_segment",
            }
            | _keys(
                "response_item:",
                "message reasoning local_shell_call function_call function_call_output "
                "custom_tool_call custom_tool_call_output tool_search_call tool_search_output "
                "web_search_call agent_message",
            )
        ),
        skipped=_keys(
            "record:",
            "event_msg turn_context world_state token_usage_record "
            "inter_agent_communication_metadata dynamic_tools_updated security_risk_score "
            "id_allocation",
        )
        | _keys(
            "response_item:",
            "ghost_snapshot image_generation_call compaction context_compaction "
            "compaction_trigger configuration_update additional_tools other",
        )
        | _keys(
            "realtime_item:",
            "realtime_session_started realtime_session_closed frame bem_item_promoted "
            "turn_input_accepted session_end_input_saved",
        ),
    ),
    # Unminified: the chat recording service's appendRecord calls (a header, a message by
    # type, ``$set`` by field, ``$rewindTo``) and the parts its callers record.
    "gemini-cli": WriterKinds(
        "@google/gemini-cli",
        "0.61.0",
        imported=frozenset(
            {"header", "message:user", "message:gemini", "message:info", "record:$set:summary"}
        ),
        skipped=frozenset(
            {
                "record:$rewindTo",
                "record:$set:messages",
                "record:$set:memoryScratchpad",
                "record:$set:directories",
                "user-part:functionResponse",
                "gemini-part:functionCall",
                "user-part:inlineData:image/png",
                "info-part:inlineData:application/pdf",
                "user-part:fileData:application/pdf",
            }
        ),
    ),
    # Bundled: the chat recording service's records (``createBaseRecord`` by type, each
    # ``subtype`` it writes); user and assistant subtypes (goal_runtime,
    # mid_turn_user_message, realtime_message, notifications) are read as their type.
    "qwen-code": WriterKinds(
        "@qwen-code/qwen-code",
        "0.24.4",
        imported=frozenset(
            {"user", "assistant", "tool_result"}
            | _keys(
                "system:",
                "chat_compression custom_title slash_command at_command parent_session "
                "background_task_completed",
            )
        ),
        skipped=_keys(
            "record:system:",
            "ui_telemetry attribution_snapshot file_history_snapshot session_source "
            "session_model branch_checkpoint rewind goal_state goal_turn_end omni_recall "
            "user_text_elements turn_result session_artifact_event session_artifact_snapshot "
            "session_sources_snapshot",
        ),
    ),
    # Compiled (Bun): the message part schemas among the binary's strings (each part a
    # ``Struct`` with its ``type`` literal and an ``identifier`` such as ``TextPart``).
    "opencode": WriterKinds(
        "opencode-ai",
        "1.18.33",
        imported=_V2_IMPORTED | {"part:text", "part:reasoning", "part:tool"},
        skipped=_V2_SKIPPED
        | _keys(
            "part:",
            "step-start step-finish snapshot patch file agent subtask retry compaction",
        ),
    ),
    # Kilo CLI (OpenCode's schema): the same twelve part schemas in its binary.
    "kilo": WriterKinds(
        "@kilocode/cli",
        "7.7.9",
        imported=_V2_IMPORTED | {"part:text", "part:reasoning", "part:tool"},
        skipped=_V2_SKIPPED
        | _keys(
            "part:",
            "step-start step-finish snapshot patch file agent subtask retry compaction",
        ),
    ),
    # Unminified: the session manager's entries (``SessionEntry`` in session-manager.d.ts)
    # and the message roles it appends (messages.d.ts, and pi-ai's user, assistant and
    # toolResult); branchSummary and compactionSummary are built from entries, not written.
    "pi": WriterKinds(
        "@mariozechner/pi-coding-agent",
        "0.73.1",
        imported=_keys(
            "record:",
            "session message compaction branch_summary custom_message session_info",
        )
        | _keys("message:", "user assistant toolResult bashExecution custom"),
        skipped=_keys(
            "record:", "model_change thinking_level_change label custom session_info:cleared"
        ),
    ),
    # Bundled: the transcript entries its session accessor appends (Pi's entry types, and
    # its own ``leaf`` and ``reset`` controls), by their ``type`` literals in dist/.
    "openclaw": WriterKinds(
        "openclaw",
        "2026.9.6",
        imported=_keys(
            "record:",
            "session message compaction branch_summary custom_message session_info",
        )
        | _keys("message:", "user assistant toolResult bashExecution custom"),
        skipped=_keys(
            "record:",
            "model_change thinking_level_change label custom leaf reset session_info:cleared",
        ),
    ),
    # Bundled (letta.js): the local backend's transcript writer appends a session header,
    # message entries (pi-ai's user, assistant, toolResult) and compaction entries.
    "letta-code": WriterKinds(
        "@letta-ai/letta-code",
        "0.32.18",
        imported=_keys("record:", "session message compaction")
        | _keys("message:", "user assistant toolResult"),
        skipped=frozenset(),
    ),
    # Bundled in its SDK (@cline/shared 0.0.86, which cline 3.0.65 pins): the
    # ContentBlock union of a message; the session document holds user and assistant
    # messages.
    "cline-cli": WriterKinds(
        "cline",
        "3.0.65",
        imported=_keys("block:", "text thinking reasoning tool_use tool_result file"),
        skipped=_keys("block:", "image media redacted_thinking"),
    ),
    # Python: the WireMessage union of kimi_cli/wire/types.py (its events and requests),
    # each written as a ``{"type", "payload"}`` record; the importer's own table holds the
    # reasons (``KimiImporter.skipped_by_design``).
    "kimi": WriterKinds(
        "kimi-cli",
        "1.52.0",
        imported=_keys(
            "record:",
            "TurnBegin SteerInput ContentPart ToolCall ToolCallPart ToolResult Notification "
            "CompactionBegin CompactionEnd",
        ),
        skipped=_keys(
            "record:",
            "TurnEnd StepBegin StepInterrupted StepRetry StatusUpdate MCPLoadingBegin "
            "MCPLoadingEnd HookTriggered HookResolved HookRequest ApprovalRequest "
            "ApprovalResponse QuestionRequest ToolCallRequest PlanDisplay BtwBegin BtwEnd "
            "SubagentEvent",
        ),
    ),
    # Compiled (Bun): the session file's records (the fork reader's ``type`` checks and
    # the writers of todo_state, compaction_state and agent_turn_outcome) and the message
    # content blocks' schema union (text, image, thinking, redacted_thinking, tool_use,
    # tool_result, document) among the binary's strings.
    "droid": WriterKinds(
        "@factory/cli",
        "0.225.2",
        imported=_keys("record:", "session_start message compaction_state")
        | _keys("block:", "text thinking tool_use tool_result document:text"),
        skipped=_keys("record:", "todo_state agent_turn_outcome")
        | _keys(
            "block:message:",
            "user:image assistant:redacted_thinking user:document",
        ),
    ),
    # Bundled: the ChatMessage union (user, assistant, system, tool) and MessagePart types
    # (text, imageUrl) of the core it saves with; the importer's own table holds the
    # reasons (``ContinueImporter.skipped_by_design``).
    "continue": WriterKinds(
        "@continuedev/cli",
        "1.5.47",
        imported=_keys("message:", "user assistant tool") | {"part:text"},
        skipped=frozenset({"message:system", "part:imageUrl", "message:tool:answered-by-state"}),
    ),
    # Python: the Event subclasses of openhands-sdk 1.21.0 (the version openhands 1.16.0
    # pins), each persisted by the conversation's default callback (StreamingDeltaEvent
    # says it is not).
    "openhands": WriterKinds(
        "openhands",
        "1.16.0",
        imported=_keys(
            "event:",
            "MessageEvent ActionEvent ObservationEvent UserRejectObservation AgentErrorEvent "
            "Condensation ConversationErrorEvent ACPToolCallEvent:final",
        ),
        skipped=_keys(
            "event:",
            "SystemPromptEvent ConversationStateUpdateEvent PauseEvent CondensationRequest "
            "CondensationSummaryEvent HookExecutionEvent TokenEvent LLMCompletionLogEvent "
            "ACPToolCallEvent ACPToolCallEvent:repeated",
        ),
    ),
    # Bundled inside the binary (a packed package): its schemas/session-events.schema.json,
    # every event it persists (the schema marks the ones never written ``ephemeral``).
    "copilot-cli": WriterKinds(
        "@github/copilot",
        "1.0.102",
        imported=_keys(
            "record:",
            "abort assistant.message assistant.reasoning session.compaction_complete "
            "session.error session.handoff session.info session.shutdown "
            "session.start session.task_complete session.warning subagent.completed "
            "subagent.failed subagent.started system.notification "
            "tool.execution_complete tool.execution_start user.message",
        ),
        skipped=_keys(
            "record:",
            "assistant.fusion_phase_completed assistant.fusion_phase_failed "
            "assistant.turn_end assistant.turn_start external_tool.requested hook.end "
            "hook.start human_response.recorded mcp.oauth_recovery_completed "
            "permission.assentDetected permission.carriedForward permission.completed "
            "permission.contextualAuthorization permission.messageAuthorization "
            "permission.messageAuthorizationDegraded "
            "permission.messageAuthorizationRead permission.requested "
            "session.auto_mode_resolved session.autopilot_objective_changed "
            "session.binary_asset session.canvas.recorded session.canvas.removed "
            "session.compaction_start session.completion_receipt "
            "session.context_changed session.context_cleared "
            "session.fusion_change_checkpoint session.fusion_commit_started "
            "session.fusion_completed session.fusion_handoff session.fusion_resolved "
            "session.fusion_route_failed session.mode_changed "
            "session.mode_notice_delivered session.model_change "
            "session.model_deselected session.permission_recovery "
            "session.permissions_changed session.plan_changed "
            "session.remote_steerable_changed "
            "session.request_body_compression_disabled session.resume "
            "session.schedule_cancelled session.schedule_created "
            "session.schedule_rearmed session.session_limits_changed "
            "session.truncation session.usage_checkpoint session.usage_record "
            "session.workspace_file_changed skill.context_delivered "
            "skill.context_delivered_ref skill.invoked skill.invoked_ref "
            "subagent.configured subagent.deselected subagent.selected system.message "
            "tool.user_requested tool_search.activated",
        ),
    ),
    # Its session file's message roles (types/core.d.ts Message) and the fields beside
    # the text that the importer counts.
    "nanocoder": WriterKinds(
        "@nanocollective/nanocoder",
        "1.30.0",
        imported=_keys("message:", "user assistant tool"),
        skipped=frozenset({"message:system", "message:images", "tool:structuredContent"}),
    ),
    # trajectory_recorder.py's records: the task, each LLM interaction's input messages
    # (the system prompt, Trae's own user messages) and response (content, tool calls), each
    # agent step's tool results, reflection, error and lakeview summary, the run's end.
    "trae-agent": WriterKinds(
        "trae-agent",
        "0.1.0",
        imported=_keys("", "task input:user tool_result end")
        | _keys("response:", "content tool_call")
        | _keys("step:", "reflection error"),
        skipped=_keys("call:", "task_done unfinished")
        | frozenset({"message:system", "step:lakeview_summary"}),
    ),
    # session/manager.py's records (the metadata line, the provider state, the messages of
    # loop.py's _save_turn and subagent.py's report, the summary's hidden marker) and the
    # runtime checkpoint beside a file.
    "nanobot": WriterKinds(
        "nanobot-ai",
        "0.3.5",
        imported=_keys("message:", "user assistant tool") | {"assistant:subagent_result"},
        skipped=_keys("checkpoint:", "tool_call tool_result")
        | frozenset(
            {"record:provider_state", "message:hidden", "metadata:_last_summary", "user:image_url"}
        ),
    ),
    # pydantic-ai 2.51 (Code Puppy 0.0.946's): the part kinds ModelRequestPart and
    # ModelResponsePart serialise (tool search's and capability loads' parts are tool calls
    # and returns with a tool_kind), the kinds of UserContent, in messages.py; the
    # request's instructions field; the envelope's encodings in session_storage.py.
    "code-puppy": WriterKinds(
        "code-puppy",
        "0.0.946",
        imported=_keys("request-part:", "user-prompt tool-return retry-prompt")
        | _keys(
            "response-part:",
            "text thinking tool-call builtin-tool-call builtin-tool-return compaction",
        ),
        skipped=_keys("request-part:", "system-prompt tool-availability-delta speech")
        | _keys("response-part:", "file speech compaction:encrypted thinking:encrypted")
        | _keys(
            "user-prompt:",
            "binary image-url audio-url document-url video-url uploaded-file cache-point",
        )
        | frozenset({"request:instructions", "encoding:json"}),
    ),
    # Read in sweagent 1.1.0 (agent/agents.py, types.py): the history's items by role
    # (the system prompt, a demonstration, the task, a reply, a tool's or 0.x's user
    # observation), their content parts, the trajectory's steps, a retry run's attempts.
    "swe-agent": WriterKinds(
        "sweagent",
        "1.1.0",
        imported=_keys("message:", "user assistant tool")
        | frozenset({"content:text", "step", "attempt", "info:exit"}),
        skipped=frozenset(
            {
                "message:system",
                "message:demonstration",
                "step:requeried",
                "attempt:chosen-copy",
                "content:image_url",
            }
        ),
    ),
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
