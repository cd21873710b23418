"""Generated Trae Agent trajectories, in the shapes ``trae-agent`` 0.1.0's
``TrajectoryRecorder`` writes (``start_recording``, ``record_llm_interaction``,
``record_agent_step``, ``update_lakeview``, ``finalize_recording``; indented JSON, local
times without a zone): a finished run (a failing command, a read, a missing file, a reply
without a call that Trae answers itself, a reflection, a lakeview summary, ``task_done``), a
run whose model call failed, and a run cut off after an interaction whose step was never
recorded; the text is our own."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

T0: Final = datetime(2026, 11, 30, 9, 15, 0, 250000)  # local, as datetime.now() writes it
CWD: Final = "/work/shop"
TASK: Final = "The checkout total ignores discount codes."
NUDGE: Final = "It seems that you have not completed the task."
SYSTEM: Final = "You are a careful engineer."


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def call(call_id: str, name: str, **arguments: object) -> dict[str, Any]:
    """``_serialize_tool_call``: the OpenAI client's call id and its output item's id."""
    return {"call_id": call_id, "name": name, "arguments": arguments, "id": f"fc_{call_id}"}


def result(call_id: str, success: bool, output: str | None, error: str | None) -> dict[str, Any]:
    return {"call_id": call_id, "success": success, "result": output, "error": error,
            "id": f"fc_{call_id}"}  # fmt: skip


def response(content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {"input_tokens": 900, "output_tokens": 40}
    return {"content": content, "model": "gpt-5", "finish_reason": "completed",
            "usage": usage, "tool_calls": calls or None}  # fmt: skip


def first_messages(task: str) -> list[dict[str, Any]]:
    """``TraeAgent.new_task``: the system prompt, then the task in its template."""
    user = (
        f"[Project root path]:\n{CWD}\n\n[Problem statement]: We're currently solving the "
        f"following issue within our repository. Here's the issue text:\n{task}\n"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def tool_messages(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": None, "tool_result": r} for r in results]


class Run:
    """A run as the recorder writes it, one interaction and one step at a time."""

    def __init__(self, task: str, start: float = 0.0) -> None:
        self.clock = start
        self.data: dict[str, Any] = {
            "task": task, "start_time": at(start), "end_time": "", "provider": "openai",
            "model": "gpt-5", "max_steps": 200, "llm_interactions": [], "agent_steps": [],
            "success": False, "final_result": None, "execution_time": 0.0,
        }  # fmt: skip
        self.sent = first_messages(task)

    def interaction(self, content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        self.clock += 1
        reply = response(content, calls)
        self.data["llm_interactions"].append(
            {"timestamp": at(self.clock), "provider": "openai", "model": "gpt-5",
             "input_messages": self.sent, "response": reply,
             "tools_available": ["bash", "str_replace_based_edit_tool", "task_done"]}
        )  # fmt: skip
        return reply

    def step(
        self,
        reply: dict[str, Any] | None,
        results: list[dict[str, Any]] | None = None,
        *,
        reflection: str | None = None,
        error: str | None = None,
        then: list[dict[str, Any]] | None = None,
    ) -> None:
        """``record_agent_step`` after ``_finalize_step``: the messages the step returned
        (``then``: its tool results and reflection, or Trae's own nudge) are the next
        interaction's input."""
        self.clock += 1
        returned = then if then is not None else tool_messages(results or [])
        if reflection:
            returned = [*returned, {"role": "assistant", "content": reflection}]
        calls = (reply or {}).get("tool_calls") or None
        self.data["agent_steps"].append(
            {"step_number": len(self.data["agent_steps"]) + 1, "timestamp": at(self.clock),
             "state": "completed", "llm_messages": returned or None,
             "llm_response": reply and {k: reply[k] for k in
                                        ("content", "model", "finish_reason", "usage",
                                         "tool_calls")},
             "tool_calls": calls if results else None, "tool_results": results or None,
             "reflection": reflection, "error": error}
        )  # fmt: skip
        self.sent = returned

    def finish(self, success: bool, final: str | None) -> dict[str, Any]:
        self.clock += 1
        self.data |= {"end_time": at(self.clock), "success": success, "final_result": final,
                      "execution_time": self.clock}  # fmt: skip
        return self.data


def finished_run() -> dict[str, Any]:
    run = Run(TASK)
    tests = call("call_1", "bash", command="pytest -q")
    run.step(run.interaction("Run the tests first.", [tests]),
             [result("call_1", False, "", "1 failed")])  # fmt: skip
    view = call("call_2", "str_replace_based_edit_tool", command="view", path=f"{CWD}/cart.py")
    notes = call("call_3", "str_replace_based_edit_tool", command="view", path=f"{CWD}/NOTES")
    run.step(
        run.interaction("", [view, notes]),
        [result("call_2", True, "def total(items, codes): ...", None),
         result("call_3", False, "", f"The path {CWD}/NOTES does not exist.")],
        reflection="The tool execution failed: try another path.",
    )  # fmt: skip
    # A reply without a call: Trae answers it itself, and the model goes on.
    run.step(run.interaction("apply_codes is never called.", []), then=[
        {"role": "user", "content": NUDGE}])  # fmt: skip
    edit = call("call_4", "str_replace_based_edit_tool", command="str_replace",
                path=f"{CWD}/cart.py", old_str="return s",
                new_str="return apply_codes(s)")  # fmt: skip
    run.step(run.interaction("Calling apply_codes in total().", [edit]),
             [result("call_4", True, "The file has been edited.", None)])  # fmt: skip
    run.data["agent_steps"][-1]["lakeview_summary"] = "[EDIT] applies the discount codes"
    done = run.interaction("Fixed: total() applies the discount codes.",
                           [call("call_5", "task_done")])  # fmt: skip
    run.step(done, then=run.sent)  # the completing step returns its input again
    return run.finish(True, "Fixed: total() applies the discount codes.")


def failed_run() -> dict[str, Any]:
    """The model call failed (after its retries): a step with no response and its error."""
    run = Run("Add a test for discount codes.", start=600)
    run.step(None, error="Error code: 503 - service unavailable", then=run.sent)
    return run.finish(False, None)


def cut_off_run(*, stepped: bool = False) -> dict[str, Any]:
    """Interrupted while its command ran: its interaction recorded, its step never (with
    ``stepped``: the same run a moment later, the step recorded, still going)."""
    run = Run("Run the slow checks too.", start=1200)
    slow = call("call_9", "bash", command="make slow-checks")
    reply = run.interaction("Running the slow checks.", [slow])
    if stepped:
        run.step(reply, [result("call_9", True, "all slow checks pass", None)])
    return run.data


def write(home: Path, *, stepped: bool = False) -> Path:
    """The trajectories under ``<home>/trajectories`` (where ``trae-cli`` ran); ``stepped``:
    the cut-off run's step recorded after all (``watch``)."""
    root = home / "trajectories"
    runs = {
        "trajectory_20261130_091500.json": finished_run(),
        "trajectory_20261130_092500.json": failed_run(),
        "trajectory_20261130_093500.json": cut_off_run(stepped=stepped),
    }
    root.mkdir(parents=True, exist_ok=True)
    for name, run in runs.items():
        (root / name).write_text(json.dumps(run, indent=2, ensure_ascii=False))
    return root
