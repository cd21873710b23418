"""SWE-agent trajectories (``*.traj``) in the shapes its writer produces (``sweagent``
1.1.0: ``DefaultAgent.get_trajectory_data``, ``RetryAgent.get_trajectory_data``; 0.x's
text-format runs as its own demonstrations keep them): a function-calling run with a
demonstration, a reply the agent rejected and asked again for, thinking blocks and an
image in an observation; a 0.x run whose last step (the submission) only the trajectory
keeps; a retry run (its attempts' own files and the file that lists them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TASK = "The cart total ignores the discount codes. Please fix it."
INSTANCE = "shop__cart-1"
SUBMISSION = (
    "diff --git a/pricing.py b/pricing.py\n-    return total\n+    return apply_codes(total)\n"
)
MODEL = "claude-sonnet-4-20250514"


def _info(version: str | None, status: str, submission: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {"submission": submission, "exit_status": status,
                            "model_stats": {"instance_cost": 0.0, "api_calls": 3}}  # fmt: skip
    if version is not None:
        info |= {"swe_agent_hash": "x", "swe_agent_version": version,
                 "swe_rex_version": "1.4.0", "swe_rex_hash": "unavailable"}  # fmt: skip
    return info


def _replay_config() -> str:
    """1.x keeps the run's configuration as JSON text."""
    return json.dumps({"agent": {"model": {"name": MODEL}}, "env": {"repo": None}})


def _step(action: str, observation: str, thought: str, cwd: str = "/shop") -> dict[str, Any]:
    return {"action": action, "observation": observation, "response": f"{thought}\n{action}",
            "thought": thought, "execution_time": 0.25,
            "state": {"open_file": "n/a", "working_dir": cwd},
            "query": [{"role": "system", "content": "(the messages sent)"}],
            "extra_info": {}}  # fmt: skip


def _action(thought: str, action: str, call_id: str, tool: str, args: dict[str, Any],
            thinking: str | None = None) -> dict[str, Any]:  # fmt: skip
    message: dict[str, Any] = {
        "role": "assistant", "content": thought, "thought": thought, "action": action,
        "agent": "main", "message_type": "action",
        "tool_calls": [{"function": {"arguments": json.dumps(args), "name": tool},
                        "id": call_id, "type": "function"}],
    }  # fmt: skip
    if thinking is not None:
        message["thinking_blocks"] = [{"type": "thinking", "thinking": thinking,
                                       "signature": "sig"}]  # fmt: skip
    return message


def _observation(content: object, call_id: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "agent": "main", "message_type": "observation",
            "tool_call_ids": [call_id]}  # fmt: skip


def function_calling_run() -> dict[str, Any]:
    """1.1.0, function calling (its default config): system, a demonstration kept in the
    history, the task; a test run with thinking, a reply rejected (a format error: only in
    ``trajectory``), an edit, a screenshot in an observation, the submission."""
    history = [
        {"role": "system", "content": "SETTING: the agent's own prompt", "agent": "main",
         "message_type": "system_prompt"},
        {"role": "user", "content": "Here is a demonstration (the config's example)",
         "agent": "main", "is_demo": True, "message_type": "demonstration"},
        {"role": "user", "content": f"<uploaded_files>\n/shop\n</uploaded_files>\n{TASK}",
         "agent": "main", "message_type": "observation"},
        _action("Run the tests first.", "pytest -q", "call_1", "bash", {"command": "pytest -q"},
                thinking="The discount is probably dropped in pricing.py."),
        _observation("1 failed\n(Open file: n/a)", "call_1"),
        _action("Fix pricing.py.", "str_replace_editor str_replace /shop/pricing.py",
                "call_2", "str_replace_editor",
                {"command": "str_replace", "path": "/shop/pricing.py",
                 "old_str": "return total", "new_str": "return apply_codes(total)"}),
        _observation([{"type": "text", "text": "The file was edited."},
                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}],
                     "call_2"),
        _action("Submit.", "submit", "call_3", "submit", {}),
        _observation(SUBMISSION, "call_3"),
    ]  # fmt: skip
    trajectory = [
        _step("pytest -q", "1 failed", "Run the tests first."),
        # Rejected (two commands in one reply): the agent asked again; not in the history.
        _step("cat pricing.py && pytest", "Your output was not formatted correctly.",
              "Look, then test."),
        _step("str_replace_editor str_replace /shop/pricing.py", "The file was edited.",
              "Fix pricing.py."),
        _step("submit", SUBMISSION, "Submit."),
    ]  # fmt: skip
    return {"trajectory": trajectory, "history": history,
            "info": _info("1.1.0", "submitted", SUBMISSION),
            "replay_config": _replay_config(), "environment": "main"}  # fmt: skip


def text_run(*, submit_in_history: bool = False) -> dict[str, Any]:
    """0.x's text format: no message types, observations as ``user`` messages, the state as
    JSON text. The last step (the submission): only in ``trajectory`` (1.0), or its reply in
    the history without the observation (0.x: the run was done before it was added)."""
    history = [
        {"role": "system", "content": "SETTING: the agent's own prompt", "agent": "primary"},
        {"role": "user", "content": f"ISSUE:\n{TASK}", "agent": "primary"},
        {"role": "assistant", "content": "Find the total.\n```\nsearch_dir total\n```",
         "thought": "Find the total.\n", "action": "search_dir total\n", "agent": "primary"},
        {"role": "user", "content": "Found 2 matches\n(Open file: n/a)", "agent": "primary"},
    ]  # fmt: skip
    step = _step("search_dir total\n", "Found 2 matches", "Find the total.\n", "/shop__cart")
    last = _step("submit\n", SUBMISSION, "Done.\n", "/shop__cart")
    for s in (step, last):
        s["state"] = json.dumps(s["state"])
        del s["query"], s["extra_info"]
    if submit_in_history:
        reply = {"role": "assistant", "content": "Done.\n```\nsubmit\n```",
                 "thought": "Done.\n", "action": "submit\n", "agent": "primary"}  # fmt: skip
        history.append(reply)
    return {"environment": "swe_main", "trajectory": [step, last], "history": history,
            "info": _info(None, "submitted", SUBMISSION)}  # fmt: skip


def _attempt(thought: str) -> dict[str, Any]:
    history = [
        {"role": "system", "content": "SETTING", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": TASK, "agent": "main", "message_type": "observation"},
        _action(thought, "submit", "call_a", "submit", {}),
        _observation(SUBMISSION, "call_a"),
    ]  # fmt: skip
    return {"trajectory": [_step("submit", SUBMISSION, thought)], "history": history,
            "info": _info("1.1.0", "submitted", SUBMISSION),
            "replay_config": _replay_config(), "environment": "main"}  # fmt: skip


def retry_run() -> dict[str, dict[str, Any]]:
    """The retry agent's files: each attempt's own, and the instance's file listing them
    with the chosen one copied to its top level."""
    attempts = [_attempt("First try: submit."), _attempt("Second try: submit.")]
    top: dict[str, Any] = {"attempts": attempts} | attempts[1]
    top["info"] = top["info"] | {"best_attempt_idx": 1}
    return {f"attempt_{i}/{INSTANCE}.traj": a for i, a in enumerate(attempts)} | {
        f"{INSTANCE}.traj": top
    }


def write(home: Path, *, upto: int | None = None, retry: bool = True) -> Path:
    """The runs under ``<home>/trajectories/user`` (SWE-agent writes ``trajectories/<user>/``
    in the folder it runs from): ``upto``: only that many history messages and steps of the
    function-calling run (``watch``: a later step writes the rest)."""
    root = home / "trajectories" / "user"
    run = function_calling_run()
    if upto is not None:
        run["history"] = run["history"][:upto]
        run["trajectory"] = run["trajectory"][: max(0, (upto - 3) // 2)]
        # Until the run ends, its info has no exit status (each step sets the step's).
        run["info"] |= {"exit_status": None, "submission": None}
    runs: dict[str, dict[str, Any]] = {
        f"default__{MODEL}/{INSTANCE}/{INSTANCE}.traj": run,
        f"text__gpt4/{INSTANCE}/{INSTANCE}.traj": text_run(),
        f"text__gpt4/{INSTANCE}-0x/{INSTANCE}-0x.traj": text_run(submit_in_history=True),
    }
    if retry:
        for name, data in retry_run().items():
            runs[f"retry__{MODEL}/{INSTANCE}/{name}"] = data
    for name, data in runs.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
    return root
