"""Consolidation: finding near-duplicate entries and merging each group into one."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from lethe._core.entry import MAX_COUNT, Entry, freeze_metadata
from lethe._core.hooks import closed_if_awaitable
from lethe._core.record import evolve
from lethe._core.reprs import short_repr
from lethe._core.validate import is_number

Similarity = Callable[[Any, Any], float]

_WORD = re.compile(r"\w+")


def words(value: object) -> frozenset[str]:
    """The lower-cased word set of ``str(value)``."""
    return frozenset(_WORD.findall(str(value).lower()))


def jaccard_words(a: object, b: object) -> float:
    """Jaccard similarity of the word sets of ``str(a)`` and ``str(b)``: ``|A & B| / |A | B|``.

    Two values without words have similarity 0.0 (nothing to compare).

    >>> jaccard_words("deploy production kubernetes", "deploy production docker")
    0.5
    """
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def _candidate_pairs_jaccard(values: Sequence[Any], threshold: float) -> set[tuple[int, int]]:
    """Pairs that can reach ``threshold`` Jaccard: the prefix filter (exact, far fewer than n^2).

    Order tokens rarest first; two sets with Jaccard >= t must share one of the
    first ``|A| - ceil(t * |A|) + 1`` tokens of each, so only those are indexed.
    """
    sets = [words(v) for v in values]
    freq = Counter(tok for s in sets for tok in s)
    index: dict[str, list[int]] = defaultdict(list)
    pairs: set[tuple[int, int]] = set()
    for i, s in enumerate(sets):
        if not s:
            continue
        ordered = sorted(s, key=lambda tok: (freq[tok], tok))
        prefix = len(s) - math.ceil(threshold * len(s) - 1e-12) + 1
        for tok in ordered[: max(prefix, 1)]:
            for j in index[tok]:
                pairs.add((j, i))
            index[tok].append(i)
    return pairs


def find_groups(
    entries: Sequence[Entry[Any, Any]],
    similarity: Similarity,
    threshold: float,
    min_group: int,
) -> list[list[int]]:
    """Indices of ``entries`` grouped by similarity >= ``threshold`` (connected components).

    With the default :func:`jaccard_words`, candidate pairs come from a token
    index (prefix filtering), so unrelated entries are never compared; any other
    similarity compares every pair: O(n^2).
    """
    n = len(entries)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    values = [e.value for e in entries]
    if similarity is jaccard_words and threshold > 0.0:
        candidates: Any = sorted(_candidate_pairs_jaccard(values, threshold))
    else:
        candidates = ((i, j) for i in range(n) for j in range(i + 1, n))
    for i, j in candidates:
        ri, rj = find(i), find(j)
        if ri != rj:
            found = similarity(values[i], values[j])
            if not (is_number(found) and found == found):  # (NaN is never similar, nor unsimilar)
                closed_if_awaitable(found)
                raise ValueError(
                    f"similarity returned {short_repr(found)} for the values of keys {short_repr(entries[i].key)} "
                    f"and {short_repr(entries[j].key)}; it must return a number"
                )
            if found >= threshold:
                parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        groups[find(i)].append(i)
    return [g for g in groups.values() if len(g) >= min_group]


def _as_json(key: Any) -> Any:
    """``key`` as ``to_dict`` writes it (a tuple as a list), so metadata naming it reads back equal."""
    return [_as_json(k) for k in key] if isinstance(key, tuple) else key


def merge_group(group: Sequence[Entry[Any, Any]], merge_state: Callable[..., Any] | None) -> Entry[Any, Any]:
    """The default merge: the first (highest-scored) entry absorbs the rest.

    Keeps its key, value and summary; sums access counts; merges access
    histories (through the decay function's ``merge_states`` when it has one);
    takes the largest importance, the earliest insertion and the latest access;
    merges metadata (higher-scored entries win conflicts) and lists the
    absorbed keys under ``metadata["consolidated_from"]`` (as ``to_dict`` writes keys: a tuple as a list).
    """
    keep = group[0]
    latest = max(group, key=lambda e: e.accessed_us)
    earliest = min(group, key=lambda e: e.inserted_us)
    metadata: dict[str, Any] = {}
    for e in reversed(group):
        metadata.update(e.metadata)
    metadata["consolidated_from"] = [_as_json(e.key) for e in group[1:]]
    state = merge_state(group) if merge_state is not None else keep.decay_state
    return evolve(
        keep,
        access_count=min(sum(e.access_count for e in group), MAX_COUNT),
        importance=max(e.importance for e in group),
        inserted_at=earliest.inserted_at,
        inserted_us=earliest.inserted_us,
        last_accessed_at=latest.last_accessed_at,
        accessed_us=latest.accessed_us,
        metadata=freeze_metadata(metadata),
        decay_state=state,
    )
