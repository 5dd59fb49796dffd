"""docs/sharing.md: its code runs, and its patterns lose no update under contention.

    python -m pytest -q tests/test_sharing.py
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory

DOC = Path(__file__).resolve().parent.parent / "docs" / "sharing.md"
THREADS = 8
OPS = 2_000  # per thread: half puts of the thread's own keys, half gets of shared keys
SHARED_KEYS = 16
TASKS = 100
TASK_OPS = 40


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    """The namespace left by running every python block of the page, in order."""
    namespace: dict[str, Any] = {"__name__": "sharing_md"}
    for code in python_blocks():
        exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


@pytest.fixture(autouse=True)
def busy_switching() -> Iterator[None]:
    """Switch threads as often as possible, so races would show."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def test_the_page_has_code_for_every_pattern() -> None:
    code = "\n".join(python_blocks())
    assert len(python_blocks()) >= 5
    for name in ("class Shared", "class Versioned", "compare_and_swap", "class MemoryOwner", "snapshot = "):
        assert name in code


def test_every_python_block_runs(doc: dict[str, Any]) -> None:
    # The blocks assert their own results; they also leave these behind.
    assert doc["versioned"].current.peek("counter").value == 2
    assert "style" not in doc["shared"].current
    assert doc["snapshot"].peek("style").access_count == 1


def seeded() -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(max_entries=SHARED_KEYS + THREADS * OPS)
    for k in range(SHARED_KEYS):
        mem = mem.put(f"shared {k}", key=("shared", k))
    return mem


def workload(t: int) -> Iterator[tuple[str, Any]]:
    """Thread ``t``'s operations: alternately a put of its own key and a get of a shared key."""
    for i in range(OPS):
        if i % 2 == 0:
            yield "put", (t, i)
        else:
            yield "get", ("shared", (t * 7 + i) % SHARED_KEYS)


def expected_counts() -> Counter[Any]:
    return Counter(key for t in range(THREADS) for op, key in workload(t) if op == "get")


def check(final: Memory[Any, Any]) -> None:
    assert len(final) == SHARED_KEYS + THREADS * OPS // 2
    for t in range(THREADS):
        for op, key in workload(t):
            if op == "put":
                assert final.peek(key).value == key
    counts = expected_counts()
    assert sum(counts.values()) == THREADS * OPS // 2
    for k in range(SHARED_KEYS):
        assert final.peek(("shared", k)).access_count == counts[("shared", k)]


def run_threads(worker: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def body(t: int) -> None:
        try:
            start.wait()
            worker(t)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def test_plain_lock_loses_no_update(doc: dict[str, Any]) -> None:
    shared = doc["Shared"](seeded())

    def worker(t: int) -> None:
        for op, key in workload(t):
            if op == "put":
                shared.apply(lambda m, k=key: m.put(k, key=k))
            else:
                entry = shared.apply_with(lambda m, k=key: m.get(k))
                assert entry.key == key

    run_threads(worker)
    check(shared.current)


def test_compare_and_swap_loses_no_update(doc: dict[str, Any]) -> None:
    versioned = doc["Versioned"](seeded())

    def worker(t: int) -> None:
        for op, key in workload(t):
            if op == "put":
                versioned.update(lambda m, k=key: (m.put(k, key=k), None))
            else:
                versioned.update(lambda m, k=key: m.get(k))

    run_threads(worker)
    check(versioned.current)


def test_lock_free_readers_see_whole_snapshots(doc: dict[str, Any]) -> None:
    shared = doc["Shared"](seeded())
    done = threading.Event()
    seen: list[list[int]] = [[], []]

    def reader(sizes: list[int]) -> None:
        while not done.is_set():
            snap = shared.current
            size = len(snap)
            assert len(snap.scored()) == size
            assert snap.stats().size == size
            assert len(snap.to_dict()["entries"]) == size
            sizes.append(size)

    readers = [threading.Thread(target=reader, args=(sizes,)) for sizes in seen]
    for r in readers:
        r.start()
    try:
        for i in range(2_000):
            shared.apply(lambda m, i=i: m.put(i, key=("w", i)))
    finally:
        done.set()
        for r in readers:
            r.join()
    for sizes in seen:
        assert sizes
        assert sizes == sorted(sizes)  # versions only grow here: no reader saw an older one later
    assert len(shared.current) == SHARED_KEYS + 2_000


def test_single_owner_task_loses_no_update(doc: dict[str, Any]) -> None:
    async def main() -> Memory[Any, Any]:
        owner = doc["MemoryOwner"](seeded())
        runner = asyncio.create_task(owner.run())

        async def client(t: int) -> None:
            for i in range(TASK_OPS):
                if i % 2 == 0:
                    await owner.submit(lambda m, k=(t, i): (m.put(k, key=k), None))
                else:
                    entry = await owner.submit(lambda m, k=("shared", (t + i) % SHARED_KEYS): m.get(k))
                    assert entry.key[0] == "shared"
                await asyncio.sleep(0)

        await asyncio.gather(*(client(t) for t in range(TASKS)))
        # A failing write leaves the version as it was and reaches only its caller.
        before = owner.current
        with pytest.raises(KeyError):
            await owner.submit(lambda m: m.get("missing"))
        assert owner.current is before
        await owner.stop()
        await runner
        return owner.current  # type: ignore[no-any-return]

    final = asyncio.run(main())
    assert len(final) == SHARED_KEYS + TASKS * TASK_OPS // 2
    counts = Counter(("shared", (t + i) % SHARED_KEYS) for t in range(TASKS) for i in range(1, TASK_OPS, 2))
    for k in range(SHARED_KEYS):
        assert final.peek(("shared", k)).access_count == counts[("shared", k)]
    for t in range(TASKS):
        for i in range(0, TASK_OPS, 2):
            assert final.peek((t, i)).value == (t, i)
