"""Generated mini-SWE-agent trajectories, in the shapes ``mini-swe-agent`` writes
(``DefaultAgent.serialize``: ``info``, ``messages``, ``trajectory_format``): 2.4.6's
chat messages with native tool calls (``LitellmModel``), its Responses API replies
(``LitellmResponseModel``) and text-based actions (``LitellmTextbasedModel``), the
interactive agent's messages (a format error, an interruption, a new task, a command run
in human mode), and 1.x's messages without ``extra`` (a bash fence per answer,
``<returncode>`` observations, a timeout, the submission); the text is our own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

T0: Final = 1_796_000_000.25  # Unix seconds, as ``extra.timestamp`` keeps them
CWD: Final = "/testbed"
TASK: Final = "The checkout total ignores discount codes."
SUBMIT: Final = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
NOT_RUN: Final = {"output": "", "returncode": -1, "exception_info": "action was not executed"}


def info(version: str, status: str, submission: str = "", cwd: str = "") -> dict[str, Any]:
    return {
        "model_stats": {"instance_cost": 0.01, "api_calls": 4},
        "config": {
            "agent": {"system_template": "You are a careful engineer.", "mode": "yolo"},
            "agent_type": "minisweagent.agents.interactive.InteractiveAgent",
            "model": {"model_name": "openai/gpt-5-mini"},
            "environment": {"cwd": cwd, "env": {}, "timeout": 30},
        },
        "mini_version": version,
        "exit_status": status,
        "submission": submission,
    }


def observation(output: dict[str, Any], at: float, call_id: str | None) -> dict[str, Any]:
    """A command's output as ``format_toolcall_observation_messages`` writes it (the
    content is the observation template's rendering)."""
    content = json.dumps({"returncode": output["returncode"], "output": output["output"]})
    extra = {
        "raw_output": output["output"],
        "returncode": output["returncode"],
        "timestamp": T0 + at,
        "exception_info": output.get("exception_info", ""),
    }
    if call_id is None:  # a command the user ran
        return {"role": "user", "content": content, "extra": extra}
    return {"role": "tool", "content": content, "extra": extra, "tool_call_id": call_id}


def assistant(
    text: str, at: float, calls: list[tuple[str, str]], thinking: str = ""
) -> dict[str, Any]:
    """A chat completion's message (``message.model_dump()``) with the agent's ``extra``."""
    tool_calls = [
        {
            "id": cid,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": cmd})},
        }
        for cid, cmd in calls
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": tool_calls,
        "function_call": None,
    }
    if thinking:
        message["reasoning_content"] = thinking
    actions = [{"command": cmd, "tool_call_id": cid} for cid, cmd in calls]
    message["extra"] = {"actions": actions, "cost": 0.001, "timestamp": T0 + at}
    return message


def toolcall_run() -> dict[str, Any]:
    """2.4.6 with tool calls, interactive: a failing test run, a format error, an image in
    the task, an interruption, a new task, a command the user ran, the submission."""
    messages = [
        {"role": "system", "content": "You are a careful engineer."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Please solve this issue: {TASK}"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        assistant("Run the tests first.", 2, [("call_1", "pytest -q")], "Start from the tests."),
        observation({"output": "1 failed", "returncode": 1}, 3, "call_1"),
        {
            "role": "user",
            "content": "Tool call error: no tool calls found.",
            "extra": {"interrupt_type": "FormatError", "cost": 0.001},
        },
        assistant("", 5, [("call_2", "cat pricing.py")]),
        observation({"output": "def apply_codes(cart): ...", "returncode": 0}, 6, "call_2"),
        assistant("Running the slow suite.", 7, [("call_3", "pytest -q --slow")]),
        observation(NOT_RUN, 9, "call_3"),
        {
            "role": "user",
            "content": "Interrupted by user: skip the slow suite",
            "extra": {"interrupt_type": "UserInterruption"},
        },
        {
            "role": "user",
            "content": "User command: \n```bash\ngit status\n```",
            "extra": {"actions": [{"command": "git status"}]},
        },
        observation({"output": "modified: pricing.py", "returncode": 0}, 11, None),
        assistant("Done: total() applies the codes.", 12, [("call_4", SUBMIT)]),
        observation(NOT_RUN, 13, "call_4"),
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}},
    ]
    return {
        "info": info("2.4.6", "Submitted"),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }


def responses_run() -> dict[str, Any]:
    """2.4.6 on the Responses API: replies are response objects, results
    ``function_call_output`` items; the run ran out of steps."""
    reply = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Look at cart.py."}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Reading cart.py."}],
            },
            {
                "type": "function_call",
                "call_id": "fc_1",
                "name": "bash",
                "arguments": json.dumps({"command": "cat cart.py"}),
            },
        ],
        "extra": {
            "actions": [{"command": "cat cart.py", "tool_call_id": "fc_1"}],
            "cost": 0.001,
            "timestamp": T0 + 102,
        },
    }
    result = {
        "type": "function_call_output",
        "call_id": "fc_1",
        "output": "{...}",
        "extra": {
            "raw_output": "class Cart: ...",
            "returncode": 0,
            "timestamp": T0 + 103,
            "exception_info": "",
        },
    }
    messages = [
        {"role": "system", "content": "You are a careful engineer."},
        {"role": "user", "content": "Explain the cart."},
        reply,
        result,
        {
            "role": "exit",
            "content": "LimitsExceeded",
            "extra": {"exit_status": "LimitsExceeded", "submission": ""},
        },
    ]
    return {
        "info": info("2.4.6", "LimitsExceeded", cwd=CWD),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }


def textbased_run() -> dict[str, Any]:
    """2.4.6 with a text-based model: the command in a ``mswea_bash_command`` fence, parsed
    into ``extra.actions`` (no id); the observation a ``user`` message."""
    messages = [
        {"role": "system", "content": "You are a careful engineer."},
        {"role": "user", "content": "List the tests."},
        {
            "role": "assistant",
            "content": "Listing.\n\n```mswea_bash_command\nls tests\n```",
            "extra": {"actions": [{"command": "ls tests"}], "timestamp": T0 + 202},
        },
        {
            "role": "user",
            "content": "<returncode>0</returncode>\n<output>\ntest_cart.py\n</output>",
            "extra": {
                "raw_output": "test_cart.py\n",
                "returncode": 0,
                "timestamp": T0 + 203,
                "exception_info": "",
            },
        },
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}},
    ]
    return {
        "info": info("2.4.6", "Submitted"),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }


def v1_run() -> dict[str, Any]:
    """1.x (a batch run): no ``extra`` but the model's response; one ``bash`` fence an
    answer; ``<returncode>`` observations, a format error, a timeout, the submission."""
    diff = "diff --git a/cart.py b/cart.py\n+    total = apply_codes(cart)\n"

    def said(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": text, "extra": {"response": {"id": "r"}}}

    messages = [
        {"role": "system", "content": "You are a careful engineer."},
        {"role": "user", "content": f"<pr_description>\n{TASK}\n</pr_description>"},
        said("THOUGHT: find the cart.\n\n```bash\ngrep -rn total cart.py\n```"),
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n3: total\n</output>"},
        said("THOUGHT: two things.\n\n```bash\nls\n```\n\n```bash\npwd\n```"),
        {"role": "user", "content": "Please always provide EXACTLY ONE action in backticks."},
        said("THOUGHT: run the suite.\n\n```bash\npytest\n```"),
        {"role": "user", "content": "The last command <command>pytest</command> timed out."},
        said(f"THOUGHT: submit.\n\n```bash\n{SUBMIT} && git diff\n```"),
        {"role": "user", "content": diff},
    ]
    return {
        "info": info("1.15.0", "Submitted", diff),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "shop__cart-1",
    }


def write(home: Path, *, upto: int | None = None, v1: bool = True, v2: bool = True) -> Path:
    """The trajectories under ``<home>/.config/mini-swe-agent`` (its folder): 2.x's (``v2``)
    and a 1.x batch run's (``v1``, which records no times); ``upto``: only that many
    messages of the tool-call run (``watch``: a later call writes the rest)."""
    root = home / ".config" / "mini-swe-agent"
    runs: dict[str, dict[str, Any]] = {}
    if v2:
        runs |= {
            "last_mini_run.traj.json": toolcall_run(),
            "responses.traj.json": responses_run(),
            "textbased.traj.json": textbased_run(),
        }
    if v1:
        runs["batch/shop__cart-1/shop__cart-1.traj.json"] = v1_run()
    if upto is not None and v2:
        runs["last_mini_run.traj.json"]["messages"] = runs["last_mini_run.traj.json"]["messages"][
            :upto
        ]
    for name, run in runs.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run, indent=2))
    return root
