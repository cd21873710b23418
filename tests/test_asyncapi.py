"""docs/asyncapi.yaml: generated from the models (never edited by hand), and a valid
AsyncAPI 3 document according to the official parser (@asyncapi/parser, when node is
installed)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from contracts.envelope import ToolReply, ToolRequest
from contracts.subjects import TOOL_NAMES
from tests.js._npm import node_workdir
from worker.asyncapi import document, render

DOC = Path(__file__).resolve().parents[1] / "docs" / "asyncapi.yaml"


def test_the_committed_document_is_what_the_models_generate() -> None:
    assert DOC.read_text() == render(), (
        "docs/asyncapi.yaml is stale: run `make asyncapi` (python -m worker.asyncapi)"
    )


def test_the_document_carries_the_models_and_every_tool() -> None:
    doc = yaml.safe_load(DOC.read_text())
    assert doc["asyncapi"].startswith("3.")
    schemas = doc["components"]["schemas"]
    assert set(ToolRequest.model_json_schema()["properties"]) == set(
        schemas["ToolRequest"]["properties"]
    )
    assert set(ToolReply.model_json_schema()["properties"]) == set(
        schemas["ToolReply"]["properties"]
    )
    for tool in TOOL_NAMES:
        assert doc["channels"][tool]["address"] == f"sessionquery.tool.{tool}"
        assert f"call_{tool}" in doc["operations"]
        assert schemas[f"{tool}_arguments"]["additionalProperties"] is False
    assert doc["channels"]["cancel"]["address"] == "sessionquery.cancel"
    # Every local reference resolves.
    for ref in _refs(doc):
        node: Any = doc
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _parse(work: Path, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        ["node", "asyncapi_check.mjs", str(path)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_official_asyncapi_parser_validates_the_document(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    work = node_workdir(tmp_path_factory)
    result = _parse(work, DOC)
    serious = [d for d in result["diagnostics"] if d["severity"] <= 1]  # errors, warnings
    assert result["parsed"] and serious == [], serious
    # The check can fail: a dangling reference is an error for the same parser.
    broken = document()
    broken["channels"]["cancel"]["messages"]["cancel"] = {"$ref": "#/components/messages/nope"}
    bad = tmp_path / "broken.yaml"
    bad.write_text(yaml.safe_dump(broken, sort_keys=False))
    errors = [d for d in _parse(work, bad)["diagnostics"] if d["severity"] == 0]
    assert errors, "the parser accepted a dangling $ref"


def test_the_cancel_schema_is_the_model_the_worker_parses() -> None:
    import contracts.messages
    import worker.asyncapi
    import worker.serving.cancellation

    parsed_by_the_worker = worker.serving.cancellation.parse_cancel.__globals__["CancelRequest"]
    assert worker.asyncapi._messages.__globals__["CancelRequest"] is parsed_by_the_worker
    assert not hasattr(contracts.messages, "CancelRequest"), "one model per message"
