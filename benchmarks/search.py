"""Search benchmarks: lethe's exact blended search against its floors and peers, same run.

Usage (from the repository root, with ``pip install -e '.[bench,vector]'``)::

    python benchmarks/search.py                        # 10k and 100k; every section
    python benchmarks/search.py --sizes 10000 --sections vector,lexical
    python benchmarks/search.py --json benchmarks/search.json --plot docs/images/bench_search.png

Sections:

* ``vector``: ``Memory.search`` of a 384-dimension query, ``decay_weight`` 0.25 to 10,000, against
  the floor: a numpy brute force of the same number (one float32 matrix-vector product, every
  entry's exponential score as arrays, ``argpartition``).  Entries are clustered unit vectors
  (as sentence embeddings are) put over 30 days, most of them recently (ages exponentially
  distributed, a mean of 5 days), one clock reading per ten entries.
  Also: how much of the exact top 10 a similarity top-N re-ranked by the same number finds
  (what vector stores that re-rank do).
* ``lexical``: ``Memory.search`` of 3-word queries over short texts (8-15 words of a Zipf
  vocabulary) against the floor: a minimal incremental BM25 over mutable dicts (postings
  ``term -> {doc: tf}``, idf at query time, the same tokenizer) plus the same decay term for the
  matched entries; ``rank-bm25`` and ``bm25s`` (all scores, then the same blend) beside it.
* ``put``: a put with a 12-word text, and with a 384-dimension vector (a list of floats, and
  a float32 numpy array), against a put without,
  and the first search's catch-up per entry put since the last search.
* ``memory``: bytes per entry a float32 384-dimension vector adds (its numbers kept once, in
  the index's rows), against the vector's 1,536 bytes.
* ``ann`` (asked for by name; the ``ann`` extra): ``approximate=True`` against exact search, its
  median latency and recall@10 (the share of the exact top 10 it finds), and the time to
  build the memory, the exact index and the HNSW graph (run it with ``--sizes 1000000``).

Every ratio is of medians measured in the same process, interleaved; the machine is shared, so
read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import itertools
import json
import math
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from lethe import ManualClock, Memory
from lethe.search import K1, B, tokenize

DIM = 384
HALF_LIFE = 7 * 86_400.0
SPAN_DAYS = 30
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
K = 10


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    """The median wall time of ``fn()`` in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int, rounds: int = 5) -> dict[str, float]:
    """Each of ``fns`` timed in turn, ``rounds`` times; the median of the per-round medians."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            out[name].append(median_time(fn, repeat))
    return {name: statistics.median(ts) for name, ts in out.items()}


def cycling(fn: Callable[[Any], Any], queries: list[Any]) -> Callable[[], Any]:
    """``fn`` of the next of ``queries`` (round and round) at each call."""
    it = itertools.cycle(queries)
    return lambda: fn(next(it))


def ages(n: int, rng: random.Random) -> list[float]:
    """Seconds before NOW each of ``n`` entries was put, oldest first: exponentially distributed
    (a mean of 5 days, none older than 30), so most entries are recent, as an agent's are."""
    span = SPAN_DAYS * 86_400.0
    return sorted((min(rng.expovariate(1 / (5 * 86_400.0)), span) for _ in range(n)), reverse=True)


def built(
    items: list[tuple[int, str]], vectors: np.ndarray | None, put_at: list[float], clock: ManualClock
) -> Memory[int, str]:
    """A memory holding ``items`` (with ``vectors``), each put ``put_at[i]`` seconds before NOW
    (ten at a time: one clock reading each, so scores are distinct as an agent's are)."""
    mem: Memory[int, str] = Memory(max_entries=len(items) + 1, half_life=HALF_LIFE, clock_fn=clock)
    for start in range(0, len(items), 10):
        clock.set(NOW - timedelta(seconds=put_at[start]))
        batch = items[start : start + 10]
        rows = None if vectors is None else list(vectors[start : start + 10])
        mem = mem.put_many(batch, vectors=rows)
    clock.set(NOW)
    return mem


def decay_arrays(mem: Memory[int, str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each entry's last access (µs) and importance, by key, for the numpy floor."""
    accessed = np.empty(n)
    importance = np.empty(n)
    for e in mem:
        accessed[e.key] = e.accessed_us
        importance[e.key] = e.importance
    return accessed, importance


# -- vector -----------------------------------------------------------------------


def clustered(n: int, rng: np.random.Generator, clusters: int = 200, centres: np.ndarray | None = None) -> np.ndarray:
    """``n`` unit vectors near ``clusters`` random centres (or near the given ``centres``), float32."""
    if centres is None:
        centres = rng.standard_normal((clusters, DIM))
    x = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def vector_section(n: int, seed: int = 1) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    clock = ManualClock(NOW)
    vecs = clustered(n, rng)
    mem = built([(i, f"v{i}") for i in range(n)], vecs, ages(n, random.Random(seed)), clock)
    accessed, importance = decay_arrays(mem, n)
    norms = np.linalg.norm(vecs.astype(np.float64), axis=1)
    now_us = NOW.timestamp() * 1e6
    queries = list(clustered(20, rng).astype(np.float64))

    def floor(q: np.ndarray, w: float) -> list[int]:
        sims = (vecs @ q.astype(np.float32)) / (norms * np.linalg.norm(q))
        scores = np.minimum(importance * 0.5 ** ((now_us - accessed) / (HALF_LIFE * 1e6)), 1.0)
        total = np.where(sims >= 0.0, sims + w * scores, -np.inf)  # (min_relevance 0, as search's default)
        top = np.argpartition(-total, K)[:K]
        return top[np.argsort(-total[top])].tolist()  # type: ignore[no-any-return]

    mem.search(queries[0], K)  # the index is built at the first search: not what is measured
    out: dict[str, Any] = {"n": n}
    for w in (0.25, 1.0, 100.0, 1e4):
        got = interleaved(
            {
                "lethe": cycling(lambda q, w=w: mem.search(q, K, decay_weight=w), queries),
                "floor": cycling(lambda q, w=w: floor(q, w), queries),
            },
            repeat=5,
        )
        agree = sum([e.key for e, _ in mem.search(q, K, decay_weight=w)] == floor(q, w) for q in queries) / len(queries)
        out[f"w={w:g}"] = {**got, "ratio": got["lethe"] / got["floor"], "same_top10": agree}
    # What re-ranking a similarity top-N finds of the exact top 10 (decay_weight 0.25).
    found = {}
    for top_n in (30, 60, 100):
        share = []
        for q in queries:
            exact = {e.key for e, _ in mem.search(q, K)}
            sims = (vecs @ q.astype(np.float32)) / (norms * np.linalg.norm(q))
            pool = np.argpartition(-sims, top_n)[:top_n]
            scores = np.minimum(importance[pool] * 0.5 ** ((now_us - accessed[pool]) / (HALF_LIFE * 1e6)), 1.0)
            blended = np.where(sims[pool] >= 0.0, sims[pool] + 0.25 * scores, -np.inf)
            reranked = pool[np.argsort(-blended)[:K]]
            share.append(len(exact & set(reranked.tolist())) / K)
        found[f"top{top_n}"] = statistics.mean(share)
    out["rerank_recall_at_10"] = found
    return out


def ann_section(n: int, seed: int = 5) -> dict[str, Any]:
    """``approximate=True`` (the ann extra) against exact search: latency and recall@10.

    Two sets of 30 queries: ``w=...`` are drawn as the entries were (near the same centres,
    held out: what a memory is asked, as ANN benchmarks hold queries out of the data), ``far
    w=...`` near 200 other random centres (nothing stored is near them: thousands of entries
    are almost equally far, the hardest case for a graph)."""
    rng = np.random.default_rng(seed)
    clock = ManualClock(NOW)
    centres = rng.standard_normal((200, DIM))
    vecs = clustered(n, rng, centres=centres)
    built_at = time.perf_counter()
    mem = built([(i, i) for i in range(n)], vecs, ages(n, random.Random(seed)), clock)  # type: ignore[misc]
    near = list(clustered(30, rng, centres=centres).astype(np.float64))
    far = list(clustered(30, rng).astype(np.float64))
    queries = near
    t = time.perf_counter()
    mem.search(queries[0], K)
    exact_index = time.perf_counter() - t
    t = time.perf_counter()
    mem.search(queries[0], K, approximate=True)
    graph = time.perf_counter() - t
    out: dict[str, Any] = {"n": n, "build memory": t - built_at - exact_index, "index": exact_index, "graph": graph}
    for label, queries, w in (("", near, 0.0), ("", near, 0.25), ("far ", far, 0.0), ("far ", far, 0.25)):
        got = interleaved(
            {
                "exact": cycling(lambda q, w=w: mem.search(q, K, decay_weight=w), queries),
                "approximate": cycling(lambda q, w=w: mem.search(q, K, decay_weight=w, approximate=True), queries),
            },
            repeat=3,
            rounds=3,
        )
        share = [
            len(
                {e.key for e, _ in mem.search(q, K, decay_weight=w)}
                & {e.key for e, _ in mem.search(q, K, decay_weight=w, approximate=True)}
            )
            / K
            for q in queries
        ]
        out[f"{label}w={w:g}"] = {
            **got,
            "speedup": got["exact"] / got["approximate"],
            "recall_at_10": statistics.mean(share),
        }
    return out


# -- lexical --------------------------------------------------------------------------


def corpus(n: int, rng: random.Random, vocabulary: int = 20_000) -> list[str]:
    words = [f"w{i}" for i in range(vocabulary)]
    weights = [1 / (i + 1) for i in range(vocabulary)]
    return [" ".join(rng.choices(words, weights, k=rng.randint(8, 15))) for _ in range(n)]


class DictBM25:
    """The floor: an incremental BM25 over mutable dicts, idf at query time, plus the decay term
    (lethe's formula and parameters, ``lethe.search.K1`` and ``B``)."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.lengths: dict[int, int] = {}
        self.total = 0

    def add(self, doc: int, text: str) -> None:
        words = tokenize(text)
        counts: dict[str, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        for w, tf in counts.items():
            self.postings.setdefault(w, {})[doc] = tf
        self.lengths[doc] = len(words)
        self.total += len(words)

    def search(self, query: str, k: int, w: float, decay: Callable[[int], float]) -> list[tuple[float, int]]:
        n = len(self.lengths)
        avg = self.total / n
        scores: dict[int, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1.0 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting.items():
                norm = K1 * (1.0 - B + B * self.lengths[doc] / avg)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        if not scores:
            return []
        top = max(scores.values())
        best = heapq.nlargest(k, ((s / top + w * decay(doc), -doc) for doc, s in scores.items()))
        return [(v, -doc) for v, doc in best]  # (ties to the earlier put, as lethe's)


def lexical_section(n: int, seed: int = 2) -> dict[str, Any]:
    rng = random.Random(seed)
    texts = corpus(n, rng)
    clock = ManualClock(NOW)
    mem = built(list(enumerate(texts)), None, ages(n, rng), clock)
    accessed, importance = decay_arrays(mem, n)
    now_us = NOW.timestamp() * 1e6
    hl_us = HALF_LIFE * 1e6
    acc, imp = accessed.tolist(), importance.tolist()

    def decay(doc: int) -> float:
        return min(imp[doc] * 0.5 ** ((now_us - acc[doc]) / hl_us), 1.0)

    floor = DictBM25()
    for i, text in enumerate(texts):
        floor.add(i, text)
    queries = [" ".join(rng.sample(texts[rng.randrange(n)].split(), 3)) for _ in range(50)]
    mem.search(queries[0], K)  # (builds the index)
    fns: dict[str, Callable[[], Any]] = {
        "lethe": cycling(lambda q: mem.search(q, K), queries),
        "floor": cycling(lambda q: floor.search(q, K, 0.25, decay), queries),
    }
    decay_all = np.minimum(importance * 0.5 ** ((now_us - accessed) / hl_us), 1.0)

    def blended(scores: Callable[[list[str]], Any]) -> Callable[[], Any]:
        """A peer's search: its scores of every document, then the same blend and top k."""

        def search(q: str) -> Any:
            s = scores(tokenize(q))
            total = np.where(s > 0, s / (s.max() or 1.0) + 0.25 * decay_all, -np.inf)
            return np.argpartition(-total, K)[:K]

        return cycling(search, queries)

    tokens = [tokenize(t) for t in texts]
    try:
        from rank_bm25 import BM25Okapi

        fns["rank-bm25"] = blended(BM25Okapi(tokens).get_scores)
    except ImportError:
        pass
    try:
        import bm25s

        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        fns["bm25s"] = blended(retriever.get_scores)
    except ImportError:
        pass
    got = interleaved(fns, repeat=10)
    agree = sum(
        [e.key for e, _ in mem.search(q, K)] == [d for _, d in floor.search(q, K, 0.25, decay)] for q in queries
    ) / len(queries)
    return {"n": n, **got, **{f"{name}/floor": t / got["floor"] for name, t in got.items()}, "same_top10": agree}


# -- put --------------------------------------------------------------------------------


def put_section(n: int, seed: int = 3) -> dict[str, Any]:
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    clock = ManualClock(NOW)
    text = " ".join(corpus(1, rng)[0].split()[:12]) + " and more words"
    array32 = clustered(1, nprng)[0]  # what sentence-transformers returns: a float32 array
    vec = array32.tolist()  # what an embedding API returns: a list of floats
    plain = built([(i, f"v{i}") for i in range(n)], None, [0.0] * n, clock)
    with_vectors = built([(i, f"v{i}") for i in range(n)], clustered(n, nprng), [0.0] * n, clock)
    with_vectors.search(vec, 1)
    got = interleaved(
        {
            "put": lambda: plain.put(12345, key=-1),
            "put text": lambda: plain.put(text, key=-1),
            "put vector": lambda: with_vectors.put(12345, key=-1, vector=vec),
            "put vector (float32 array)": lambda: with_vectors.put(12345, key=-1, vector=array32),
        },
        repeat=2000,
    )
    # What a search after m puts spends catching up, per put.
    m = 1000
    grown = plain
    plain.search("w1", 1)
    for i in range(m):
        grown = grown.put(text, key=-1 - i)
    t = time.perf_counter()
    grown.search("w1", 1)
    catch_up = (time.perf_counter() - t) / m
    return {
        "n": n,
        **got,
        "text/put": got["put text"] / got["put"],
        "vector/put": got["put vector"] / got["put"],
        "float32 array/put": got["put vector (float32 array)"] / got["put"],
        "catch-up per text put": catch_up,
    }


# -- memory -----------------------------------------------------------------------------


def memory_section(n: int = 10_000, seed: int = 4) -> dict[str, Any]:
    vecs = clustered(n, np.random.default_rng(seed))
    clock = ManualClock(NOW)

    def measured(with_vectors: bool) -> float:
        gc.collect()
        tracemalloc.start()
        # (int values: no text to index, so the difference is the vectors' alone)
        mem = built([(i, i) for i in range(n)], vecs if with_vectors else None, [0.0] * n, clock)  # type: ignore[misc]
        if with_vectors:
            mem.search(vecs[0].tolist(), 1)  # the index's copy counts too
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del mem
        return size / n

    without, with_ = measured(False), measured(True)
    added = with_ - without
    return {"n": n, "bytes per entry": without, "added by a vector": added, "added/vector bytes": added / (4 * DIM)}


def plot(result: dict[str, Any], path: str) -> None:
    """Search time against n, log-log: lethe beside its floors and peers (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    vector = result.get("vector", [])
    sizes = [row["n"] for row in vector]
    for key, style in (("w=0.25", "o-"), ("w=100", "s-"), ("w=10000", "^-")):
        if vector and key in vector[0]:
            left.plot(sizes, [row[key]["lethe"] * 1e3 for row in vector], style, label=f"lethe, decay_weight {key[2:]}")
    if vector:
        left.plot(sizes, [row["w=0.25"]["floor"] * 1e3 for row in vector], "k--", label="numpy brute force (floor)")
    left.set_title("Vector search, 384 dimensions, top 10")
    lexical = result.get("lexical", [])
    sizes = [row["n"] for row in lexical]
    for name, style in (("lethe", "o-"), ("floor", "k--"), ("rank-bm25", "s:"), ("bm25s", "^:")):
        if lexical and name in lexical[0]:
            label = "minimal dict BM25 (floor)" if name == "floor" else name
            right.plot(sizes, [row[name] * 1e3 for row in lexical], style, label=label)
    right.set_title("Lexical search, 3-word queries, top 10")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entries")
        ax.set_ylabel("median time per query (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--sections", default="vector,lexical,put,memory", help="also: ann (the ann extra)")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--plot", metavar="PNG", help="also draw the search times (docs/images/bench_search.png)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sections = args.sections.split(",")
    result: dict[str, Any] = {"sizes": sizes}
    for name, fn in (
        ("vector", vector_section),
        ("lexical", lexical_section),
        ("put", put_section),
        ("ann", ann_section),
    ):
        if name in sections:
            result[name] = [fn(n) for n in sizes]
            for row in result[name]:
                print(name, json.dumps(row, default=float))
    if "memory" in sections:
        result["memory"] = memory_section()
        print("memory", json.dumps(result["memory"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, default=float)
    if args.plot:
        plot(result, args.plot)


if __name__ == "__main__":
    main()
