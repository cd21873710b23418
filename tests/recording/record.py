"""Record fixtures from the real agents: ``python -m tests.recording.record AGENT...``
(``make record-fixtures`` records them all).

Outside the namespace: install the agent (and Node when it needs one) into /tmp/sq-agents,
reset its fixed HOME and task folder under /tmp/sq-record/<agent>, then re-execute this module
with ``--inside AGENT`` in a network namespace with only the loopback up. Inside: start the
scripted server, run the recipe's steps in the task folder. Outside again: copy the session
files the agent wrote into tests/importers/recorded/<agent>/sessions/ (replacing the previous
recording) and write RECORDED.json beside them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from tests.recording.agents import AGENTS_CACHE, Recipe, RunContext, Step, recipes, write_task
from tests.recording.netns import assert_isolated, run_isolated
from tests.recording.scrub import scrub_tree
from tests.recording.server import FAKE_KEY, ScriptedModelServer

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "importers" / "recorded"
NODE_DIR = AGENTS_CACHE / "node{major}"
# What a run keeps of the caller's environment: the agent gets a fresh HOME and nothing else.
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
MAX_FIXTURE_BYTES = 600_000


def log(message: str) -> None:
    print(f"record: {message}", file=sys.stderr, flush=True)


def node_bin(major: str) -> Path:
    """The bin folder of a Node ``major`` installed from the npm registry's ``node`` package."""
    prefix = Path(str(NODE_DIR).format(major=major))
    binary = prefix / "node_modules" / ".bin" / "node"
    if not binary.exists():
        log(f"installing node@{major} into {prefix}")
        subprocess.run(["npm", "install", "--prefix", str(prefix), f"node@{major}"], check=True)
    return binary.parent


def interpreter(version: str) -> str:
    """A Python of ``version`` (e.g. ``3.13``): on PATH as ``python3.13`` when it runs there,
    else one pyenv installed (its shims run only the versions the folder selects)."""
    name = f"python{version}"
    found = shutil.which(name)
    if found and subprocess.run([found, "--version"], capture_output=True).returncode == 0:
        return found
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in sorted(root.glob(f"versions/{version}*/bin/{name}"), reverse=True):
        return str(candidate)
    raise SystemExit(f"no {name} to make the venv with")


def install(recipe: Recipe) -> None:
    if recipe.executable.exists():
        return
    log(f"installing {recipe.package}@{recipe.version} into {recipe.install_dir}")
    target = recipe.install_dir
    if recipe.ecosystem == "npm":
        spec = f"{recipe.package}@{recipe.version}"
        subprocess.run(["npm", "install", "--prefix", str(target), spec], check=True)
    else:
        python = interpreter(recipe.python) if recipe.python else sys.executable
        subprocess.run([python, "-m", "venv", str(target)], check=True)
        spec = f"{recipe.package}=={recipe.version}"
        if recipe.source is not None:
            if not recipe.source.is_dir():
                raise SystemExit(f"{recipe.agent}: its source is not at {recipe.source}")
            spec = str(recipe.source)
        pip = [str(target / "bin" / "pip"), "install", "-q"]
        if recipe.requirement_swaps:
            install_swapped(recipe, str(target / "bin" / "pip"), spec)
        else:
            subprocess.run([*pip, spec], check=True)
        if recipe.extra_packages:
            subprocess.run([*pip, *recipe.extra_packages], check=True)
    if not recipe.executable.exists():
        raise SystemExit(f"{recipe.executable} missing after the install")


def install_swapped(recipe: Recipe, pip: str, spec: str) -> None:
    """The package without its dependencies, and its requirements (the wheel's
    ``Requires-Dist`` without extras) with ``recipe.requirement_swaps`` applied."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([pip, "download", "-q", "--no-deps", "-d", tmp, spec], check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = archive.read(name).decode()
        requirements = [
            recipe.requirement_swaps.get(line, line)
            for line in (
                raw.removeprefix("Requires-Dist: ").strip()
                for raw in metadata.splitlines()
                if raw.startswith("Requires-Dist: ")
            )
            if "extra ==" not in line
        ]
        listed = Path(tmp) / "requirements.txt"
        listed.write_text("\n".join(requirements) + "\n")
        subprocess.run([pip, "install", "-q", "-r", str(listed)], check=True)
        subprocess.run([pip, "install", "-q", "--no-deps", str(wheel)], check=True)


def base_env(recipe: Recipe) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    path = env.get("PATH", "/usr/bin:/bin")
    if recipe.node:
        path = f"{node_bin(recipe.node)}:{path}"
    env["PATH"] = path
    return env


# ---- inside the namespace -------------------------------------------------------------------


def run_step(step: Step, argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one step; an interrupted step that exits is status 0."""
    process = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    data = (step.stdin or "").encode()
    try:
        if step.interrupt_after is None:
            out, err = process.communicate(data, timeout=step.timeout)
            return process.returncode, out.decode(), err.decode()
        try:
            out, err = process.communicate(data, timeout=step.interrupt_after)
            return process.returncode, out.decode(), err.decode()  # finished before: as is
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=step.timeout)
        return 0, out.decode(), err.decode() + f"\n[interrupted, exit {process.returncode}]"
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return -1, out.decode(), err.decode() + "\n[timed out]"


def run_inside(recipe: Recipe) -> int:
    assert_isolated()
    write_task(recipe.task)
    recipe.home.mkdir(parents=True, exist_ok=True)
    server_log = recipe.record_dir / "server.jsonl"
    results: list[dict[str, Any]] = []
    outputs: dict[str, str] = {}
    with ScriptedModelServer(recipe.script(), log_path=server_log) as server:
        ctx = RunContext(recipe.home, recipe.task, server.url, FAKE_KEY, recipe.executable, outputs)
        env = base_env(recipe) | {"HOME": str(recipe.home), "TERM": "dumb"} | recipe.env(ctx)
        if recipe.prepare is not None:
            recipe.prepare(ctx)
        values = {
            "bin": str(recipe.executable),
            "task": str(recipe.task),
            "home": str(recipe.home),
            # For agents configured by a command (e.g. `cline auth`): the server and its key.
            "base_url": server.url,
            "key": FAKE_KEY,
        }
        for step in recipe.steps:
            argv = [a.format(**values) for a in step.argv]
            log(f"{recipe.agent}: step {step.name}")
            started = time.monotonic()
            code, out, err = run_step(step, argv, env, recipe.task)
            (recipe.record_dir / f"step-{step.name}.out").write_text(out)
            (recipe.record_dir / f"step-{step.name}.err").write_text(err)
            outputs[step.name] = out
            for name, read in recipe.captures.items():
                value = read(out)
                if value is not None and name not in values:
                    values[name] = value
            results.append(
                {"step": step.name, "exit": code, "seconds": round(time.monotonic() - started, 1)}
            )
            log(f"{recipe.agent}: step {step.name} exited {code}")
            if code != 0:
                break
        summary = {"steps": results, "requests": server.requests, "unknown": server.unknown}
    (recipe.record_dir / "run.json").write_text(json.dumps(summary, indent=2))
    return 0 if all(r["exit"] == 0 for r in results) else 1


# ---- outside --------------------------------------------------------------------------------


def keep(recipe: Recipe) -> Path:
    """The session files, copied into the repository; RECORDED.json written beside them."""
    source = recipe.home / recipe.session_dir
    if not source.is_dir():
        raise SystemExit(f"{recipe.agent}: wrote no {source}")
    dest = RECORDED / recipe.agent
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest / "sessions", ignore=shutil.ignore_patterns(*recipe.exclude))
    scrubbed = scrub_tree(dest / "sessions", recipe.agent, recipe.own_text)
    files = sorted(p for p in (dest / "sessions").rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in files)
    leaked = [str(p.relative_to(dest)) for p in files if FAKE_KEY.encode() in p.read_bytes()]
    if leaked:
        log(f"{recipe.agent}: the fake key is written into {leaked}")
    if size > MAX_FIXTURE_BYTES:
        log(f"{recipe.agent}: {size} bytes of session files, over {MAX_FIXTURE_BYTES}")
    run = json.loads((recipe.record_dir / "run.json").read_text())
    recorded = {
        "agent": recipe.agent,
        "package": recipe.package,
        "version": recipe.version,
        "recorded": datetime.date.today().isoformat(),
        "format": recipe.format,
        "home": str(recipe.home),
        "session_dir": recipe.session_dir,
        "steps": [
            {"name": s.name, "argv": [a.replace("{bin}", Path(recipe.bin).name) for a in s.argv]}
            for s in recipe.steps
        ],
        "exits": {r["step"]: r["exit"] for r in run["steps"]},
        "key_in_files": leaked,
        "own_text_left_out": scrubbed,
        "note": recipe.note,
        "expect": dict(recipe.expect),
    }
    (dest / "RECORDED.json").write_text(json.dumps(recorded, indent=2) + "\n")
    log(f"{recipe.agent}: kept {len(files)} files, {size} bytes, in {dest}")
    return dest


def rescrub(recipe: Recipe) -> None:
    """A committed recording's own prompt text left out again (after a rule changed)."""
    dest = RECORDED / recipe.agent
    scrubbed = scrub_tree(dest / "sessions", recipe.agent, recipe.own_text)
    manifest = json.loads((dest / "RECORDED.json").read_text())
    manifest["own_text_left_out"] = manifest.get("own_text_left_out", 0) + scrubbed
    (dest / "RECORDED.json").write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"{recipe.agent}: {scrubbed} strings of the agent's own text left out")


def record(recipe: Recipe) -> bool:
    install(recipe)
    if recipe.node:
        node_bin(recipe.node)  # installed outside: the namespace has no network
    shutil.rmtree(recipe.record_dir, ignore_errors=True)
    recipe.record_dir.mkdir(parents=True)
    argv = [sys.executable, "-m", "tests.recording.record", "--inside", recipe.agent]
    env = dict(os.environ) | {"PYTHONPATH": str(REPO)}
    done = run_isolated(argv, env=env, cwd=REPO)
    run = json.loads((recipe.record_dir / "run.json").read_text())
    if run["unknown"]:
        log(f"{recipe.agent}: asked for unknown paths {sorted(set(run['unknown']))}")
    if done.returncode != 0:
        log(f"{recipe.agent}: a step failed ({run['steps']}); see {recipe.record_dir}")
        return False
    keep(recipe)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.recording.record")
    parser.add_argument("agents", nargs="*", help="agents to record (default: all)")
    parser.add_argument("--inside", metavar="AGENT", help=argparse.SUPPRESS)
    parser.add_argument(
        "--scrub",
        action="store_true",
        help="only leave the agents' own prompt text out of their recordings",
    )
    args = parser.parse_args(argv)
    known = recipes()
    if args.inside:
        return run_inside(known[args.inside])
    if args.scrub:
        for agent in args.agents or sorted(known):
            rescrub(known[agent])
        return 0
    chosen = args.agents or sorted(known)
    unknown = [a for a in chosen if a not in known]
    if unknown:
        parser.error(f"no recipe for {unknown}; known: {sorted(known)}")
    failed = [a for a in chosen if not record(known[a])]
    if failed:
        log(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
