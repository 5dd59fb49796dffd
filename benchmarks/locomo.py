"""Retrieval on LoCoMo: does ``Memory.search`` find the turns a question needs?

LoCoMo (Maharana et al. 2024, "Evaluating Very Long-Term Conversational Memory
of LLM Agents") holds ten long conversations, each turn keyed by its ``dia_id``,
and questions annotated with the turns that answer them (their *evidence*).
The data is not part of lethe: fetch it from the public repository
``snap-research/locomo`` (``data/locomo10.zip``, or ``locomo10.json``) and pass
its path::

    python benchmarks/locomo.py --data path/to/locomo10.zip
    python benchmarks/locomo.py --data locomo10.json --embedder sentence-transformers/all-MiniLM-L6-v2

The protocol: per conversation, one memory (``half_life`` 30 days) holds every
turn as an entry keyed by its ``dia_id``, its text ``"{speaker}: {text}"`` plus
``" [image: {caption}]"`` where the turn shared one, put at its session's date
and time plus one minute per turn.  Every question of categories 1-4 is a query
at the last turn's time; recall@k is the share of its evidence turns among the
top k (as LoCoMo's evaluation counts retrieved ``dia_id``s), averaged over the
questions.  Beside lethe's searches, a minimal BM25 runs on the same entries:
``[a-z0-9]+`` tokens case-folded, the same English stop words dropped, k1 1.2,
b 0.75, idf ``log(1 + (N - n + 0.5) / (n + 0.5))``.

Rows: that baseline; ``search`` with ``decay_weight=0``; with the default
``decay_weight`` (0.25); the hybrid (``lexical_weight`` 0.5 and 0.8) with a
character trigram embedder that needs nothing installed (:func:`trigram_embed`); and, with
``--embedder NAME``, a sentence-transformers model alone and in the hybrid.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import re
import statistics
import zipfile
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lethe import ManualClock, Memory
from lethe.search import STOP_WORDS

KS = (5, 10, 20)
HALF_LIFE = timedelta(days=30)
_TOKEN = re.compile(r"[a-z0-9]+")
_EVIDENCE = re.compile(r"D\d+:\d+")


# -- the data -----------------------------------------------------------------------


def conversations(path: Path) -> Iterator[dict[str, Any]]:
    """Each conversation of the dataset at ``path`` as ``{"conversation": {...}, "qa": [...]}``:
    ``locomo10.json`` (a list of samples), ``data/locomo10.zip`` (one file per conversation),
    or a directory of either."""
    if path.is_dir():
        for child in sorted(path.rglob("*.json")):
            yield from conversations(child)
        return
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            for name in sorted(n for n in z.namelist() if n.endswith(".json")):
                yield from _samples(json.loads(z.read(name)))
        return
    yield from _samples(json.loads(path.read_text(encoding="utf-8")))


def _samples(data: Any) -> Iterator[dict[str, Any]]:
    for sample in data if isinstance(data, list) else [data]:
        if "qa" not in sample:
            continue
        conversation = sample.get("conversation", sample)
        yield {"conversation": conversation, "qa": sample["qa"]}


def turns(conversation: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    """``(dia_id, text, put at)`` of every turn, in order."""
    out = []
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    for number, key in sessions:
        when = datetime.strptime(conversation[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
        start = when.replace(tzinfo=timezone.utc)
        for i, turn in enumerate(conversation[key]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            out.append((turn["dia_id"], text, start + timedelta(minutes=i)))
    return out


def questions(qa: list[dict[str, Any]]) -> list[tuple[str, set[str]]]:
    """Each question of categories 1-4 with its evidence turns (those without any left out)."""
    out = []
    for q in qa:
        if q.get("category") not in (1, 2, 3, 4):
            continue
        evidence = set(_EVIDENCE.findall(" ".join(map(str, q.get("evidence", [])))))
        if evidence:
            out.append((str(q["question"]), evidence))
    return out


# -- the baseline and the embedders ----------------------------------------------------


def baseline_tokens(text: str) -> list[str]:
    return [w for w in _TOKEN.findall(text.lower()) if w not in STOP_WORDS]


class MinimalBM25:
    """The baseline: BM25 over the turns, k1 1.2, b 0.75, Lucene's idf."""

    def __init__(self, docs: list[tuple[str, str]]) -> None:
        self.ids = [i for i, _ in docs]
        self.tokens = [baseline_tokens(t) for _, t in docs]
        self.avg = sum(map(len, self.tokens)) / len(self.tokens)
        self.df: dict[str, int] = {}
        for words in self.tokens:
            for w in set(words):
                self.df[w] = self.df.get(w, 0) + 1

    def top(self, query: str, k: int) -> list[str]:
        n = len(self.tokens)
        scores = [0.0] * n
        for term in dict.fromkeys(baseline_tokens(query)):
            df = self.df.get(term)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, words in enumerate(self.tokens):
                tf = words.count(term)
                if tf:
                    scores[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / self.avg))
        ranked = sorted((i for i in range(n) if scores[i] > 0), key=lambda i: (-scores[i], i))
        return [self.ids[i] for i in ranked[:k]]


def trigram_embed(texts: list[str], dimensions: int = 1024) -> list[list[float]]:
    """A deterministic embedder that needs nothing installed: the character trigrams of each
    word (with its boundaries), hashed into ``dimensions`` buckets, counts damped by a log.
    Words sharing a stem share most trigrams, so "paint" finds "painting"."""
    out = []
    for text in texts:
        v = [0.0] * dimensions
        for word in _TOKEN.findall(text.lower()):
            if word in STOP_WORDS:
                continue
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                h = int.from_bytes(hashlib.blake2b(padded[i : i + 3].encode(), digest_size=4).digest(), "little")
                v[h % dimensions] += 1.0
        out.append([math.log1p(x) for x in v] if any(v) else [1.0] + [0.0] * (dimensions - 1))
    return out


def sentence_embedder(name: str) -> Callable[[list[str]], Sequence[Sequence[float]]]:
    """A sentence-transformers model by name (installed apart)."""
    model = importlib.import_module("sentence_transformers").SentenceTransformer(name)

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        vectors: Sequence[Sequence[float]] = model.encode(texts, normalize_embeddings=True)
        return vectors

    return embed


# -- the measure ------------------------------------------------------------------------


def recall(found: list[str], evidence: set[str]) -> float:
    return len(evidence & set(found)) / len(evidence)


def run(path: Path, embedder: str | None) -> dict[str, dict[int, float]]:
    """recall@k of each method, over every question of every conversation."""
    scores: dict[str, dict[int, list[float]]] = {}

    def add(method: str, found: list[str], evidence: set[str]) -> None:
        per_k = scores.setdefault(method, {k: [] for k in KS})
        for k in KS:
            per_k[k].append(recall(found[:k], evidence))

    extra = None if embedder is None else sentence_embedder(embedder)
    top = max(KS)
    for sample in conversations(path):
        held = turns(sample["conversation"])
        clock = ManualClock(held[0][2])
        lexical: Memory[str, str] = Memory(max_entries=len(held) + 1, half_life=HALF_LIFE, clock_fn=clock)
        trigram: Memory[str, str] = Memory(
            max_entries=len(held) + 1, half_life=HALF_LIFE, clock_fn=clock, embed_fn=trigram_embed
        )
        embedded: Memory[str, str] | None = None
        if extra is not None:
            embedded = Memory(max_entries=len(held) + 1, half_life=HALF_LIFE, clock_fn=clock, embed_fn=extra)
        for dia_id, text, when in held:
            clock.set(when)
            lexical = lexical.put(text, key=dia_id)
            trigram = trigram.put(text, key=dia_id)
            if embedded is not None:
                embedded = embedded.put(text, key=dia_id)
        baseline = MinimalBM25([(dia_id, text) for dia_id, text, _ in held])
        for question, evidence in questions(sample["qa"]):
            add("baseline BM25", baseline.top(question, top), evidence)
            for name, w in (("search, decay_weight=0", 0.0), ("search, decay_weight=0.25", 0.25)):
                add(name, [e.key for e, _ in lexical.search(question, top, decay_weight=w)], evidence)
            for lw in (0.5, 0.8):
                hybrid = trigram.search(question, top, lexical_weight=lw)
                add(f"hybrid with trigram_embed ({lw})", [e.key for e, _ in hybrid], evidence)
            if embedded is not None:
                add(f"{embedder}", [e.key for e, _ in embedded.search(question, top)], evidence)
                mixed = embedded.search(question, top, lexical_weight=0.5)
                add(f"hybrid with {embedder} (0.5)", [e.key for e, _ in mixed], evidence)
    return {method: {k: statistics.mean(v) for k, v in per_k.items()} for method, per_k in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="locomo10.json, data/locomo10.zip or a directory")
    parser.add_argument("--embedder", help="a sentence-transformers model name (installed apart)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    args = parser.parse_args()
    result = run(args.data, args.embedder)
    print("| method | " + " | ".join(f"recall@{k}" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    for method, per_k in result.items():
        print(f"| {method} | " + " | ".join(f"{per_k[k]:.3f}" for k in KS) + " |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
