"""bench.relevance_locomo on a LoCoMo-shaped sample written here (the real data is never in
the repository): every session imported, each question scored against its evidence's
sessions, as published (session-level Hit@1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import relevance_locomo


def _sample() -> dict[str, Any]:
    def turn(speaker: str, n: int, i: int, text: str, **more: str) -> dict[str, Any]:
        return {"speaker": speaker, "dia_id": f"D{n}:{i}", "text": text, **more}

    return {
        "sample_id": "t1",
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("Ada", 1, 1, "I adopted a greyhound named Comet last week!"),
                turn("Bo", 1, 2, "Lovely, I am still repairing the old canoe."),
            ],
            "session_2_date_time": "10:05 am on 20 June, 2023",
            "session_2": [
                turn("Ada", 2, 1, "We hiked the ridge trail at dawn.", blip_caption="a sunrise"),
                turn("Bo", 2, 2, "My canoe finally floats again."),
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ada's greyhound?",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {"question": "When did Bo fix the canoe?", "evidence": ["D2:2"], "category": 2},
            {
                "question": "What did Ada photograph on the hike?",
                "evidence": ["D2:1"],
                "category": 3,
            },
            {"question": "Who owns a parrot?", "evidence": [], "category": 5},
        ],
    }


async def test_locomo_bench_scores_session_level_hit_at_1(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([_sample()]))
    data = relevance_locomo.load(path)
    assert data.turns == 4 and data.left_out == 1 and len(data.questions) == 3
    texts = [e["payload"].get("text") for e in data.events if e["type"].startswith("message/")]
    assert "Ada: We hiked the ridge trail at dawn. and shared a sunrise" in texts
    result = await relevance_locomo.run(path, tmp_path / "index.sqlite", hybrid=False)
    scores = result["measurements"]["scores"]["lexical"]
    assert scores["overall"]["n"] == 3
    assert scores["single_hop"]["hit_at_1"] == 1.0  # Comet's session, the possessive read
    assert scores["open_domain"]["hit_at_1"] == 1.0  # the caption is searchable
    assert {c["name"] for c in result["checks"]} == {"lexical Hit@1"}
