"""Smoke test for benchmarks/search.py and benchmarks/locomo.py: tiny inputs, structure only (no timings)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ._support import load_benchmark

pytest.importorskip("numpy")


def test_every_search_section_runs_and_agrees_with_its_floor() -> None:
    bench = load_benchmark("search")
    vector = bench.vector_section(300)
    assert vector["w=0.25"]["same_top10"] == 1.0
    assert set(vector["rerank_recall_at_10"]) == {"top30", "top60", "top100"}
    lexical = bench.lexical_section(300)
    # (the floor computes the decay term its own way: near-ties may fall the other way)
    assert lexical["same_top10"] > 0.5
    assert lexical["floor/floor"] == 1.0
    put = bench.put_section(200)
    assert put["text/put"] > 0
    memory = bench.memory_section(200)
    assert memory["added by a vector"] > 0


def _conversation(n: int) -> dict[str, object]:
    turns = [
        {"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i + 1}", "text": f"we talked about topic {i} and paint"}
        for i in range(n)
    ]
    turns[3]["blip_caption"] = "a photo of a red bicycle"
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:47 pm on 18 May, 2023",
        "session_1": turns,
        "qa": [
            {"question": "What about topic 7?", "answer": "x", "evidence": ["D1:8"], "category": 1},
            {"question": "Which bicycle?", "answer": "red", "evidence": ["D1:4"], "category": 4},
            {"question": "Adversarial?", "answer": "no", "evidence": ["D1:2"], "category": 5},
        ],
    }


def test_locomo_reads_the_zip_and_the_json_and_measures_every_method(tmp_path: Path) -> None:
    locomo = load_benchmark("locomo")
    archive = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/1.json", json.dumps(_conversation(12)))
    listed = tmp_path / "locomo10.json"
    listed.write_text(
        json.dumps([{"sample_id": "c1", "conversation": _conversation(12), "qa": _conversation(12)["qa"]}])
    )
    for path in (archive, listed):
        result = locomo.run(path, None)
        assert set(result) >= {"baseline BM25", "search, decay_weight=0", "search, decay_weight=0.25"}
        assert result["search, decay_weight=0"][10] == 1.0  # both questions' turns found
