"""Spill confidentiality: the locator is a capability.

A foreign connection that lists the spill bucket and reads every object gets ciphertext
only; the requester, with the key from its reply's locator, gets the exact text — from
Python (``fetch_spilled``) and from JavaScript with only ``@nats-io/obj`` and WebCrypto.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from contracts.envelope import SpillLocator
from contracts.subjects import Subjects
from tests._harness import (
    Recorder,
    body,
    call,
    config_for,
    make_toolset,
    serving,
    text_of_size,
)
from worker.worker import Worker

SIZE = 300_000  # spills (threshold 16 KiB below), and takes a few chunks
JS_SCRIPT = Path(__file__).parent / "js" / "decrypt_spill.mjs"
NPM_PACKAGES = ("@nats-io/obj@3", "@nats-io/transport-node@3")


@pytest.fixture
async def spilled(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> AsyncIterator[tuple[SpillLocator, str]]:
    config = config_for(
        subjects,
        tmp_path,
        spill_threshold_bytes=16 * 1024,
        spill_preview_bytes=1000,
        parallel_pool_size=2,
    )
    worker = await Worker.start(
        nc,
        config,
        tools=serving(make_toolset(Recorder())),
    )
    try:
        reply, _ = await call(nc, subjects, "session_event_read", body("r-secret", size=SIZE))
    finally:
        await worker.stop()
    assert reply["status"] == "ok" and "spill" in reply
    yield SpillLocator.model_validate(reply["spill"]), text_of_size(SIZE)


async def test_a_foreign_connection_lists_the_bucket_and_reads_nothing(
    nats_url: str, subjects: Subjects, spilled: tuple[SpillLocator, str]
) -> None:
    locator, text = spilled
    foreign = await nats.connect(nats_url)
    try:
        store = await foreign.jetstream().object_store(subjects.spill_bucket)
        listed = await store.list()
        assert [info.name for info in listed] == [locator.name]
        stored = (await store.get(locator.name)).data
    finally:
        await foreign.close()
    assert stored is not None and len(stored) == len(text.encode()) + 16
    # Nothing of the text is there: not a line, not its repeated filler.
    # (Fragments of 8+ bytes: a short one turns up in 300 KB of random bytes by chance.)
    for fragment in (text[:40], "line 000", "x" * 16):
        assert fragment.encode() not in stored


async def test_the_requester_decrypts_with_the_locator(
    nc: NATS, subjects: Subjects, spilled: tuple[SpillLocator, str]
) -> None:
    locator, text = spilled
    assert (await SessionQueryClient(nc, subjects).fetch_spilled(locator)).decode() == text


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir with the two npm packages installed (and the decrypt script beside them)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed: the JavaScript decryption test needs them")
    where = tmp_path_factory.mktemp("spill-js")
    (where / "package.json").write_text('{"name": "spill-js-test", "private": true}\n')
    try:
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", *NPM_PACKAGES],
            cwd=where,
            check=True,
            capture_output=True,
            timeout=240,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"npm install of {' '.join(NPM_PACKAGES)} failed: {exc}")
    shutil.copy(JS_SCRIPT, where / JS_SCRIPT.name)
    return where


async def test_javascript_decrypts_a_spilled_result_with_webcrypto(
    nats_url: str, node_modules: Path, spilled: tuple[SpillLocator, str], tmp_path: Path
) -> None:
    locator, text = spilled
    out = tmp_path / "plain.txt"
    node = shutil.which("node")
    assert node is not None
    proc = await asyncio.create_subprocess_exec(
        node,
        str(node_modules / JS_SCRIPT.name),
        nats_url,
        locator.model_dump_json(),
        str(out),
        cwd=node_modules,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    assert orjson.loads(stdout) == {"size": locator.size, "digest": locator.digest}
    assert out.read_text(encoding="utf-8") == text
