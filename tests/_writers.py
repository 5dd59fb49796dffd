"""Writers racing on one memory, counting the runs of their functions: the writer-lock tests' harness.

Each writer commits ``updates`` puts of keys of its own into the memory "notes" (created
first) through a ``Shared`` of its own, its function sleeping ``pause`` seconds (a function
that takes a moment: without a lock, the others commit meanwhile).  The harness checks that
no commit was lost and gives back how many times the functions ran.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

from lethe import Memory
from lethe.store import Shared, Store

NAME = "notes"


def _template() -> Memory[str, int]:
    return Memory(max_entries=10_000)


def _write(store: Store, worker: int, updates: int, pause: float, locking: bool, start: Any) -> int:
    """``updates`` commits by one writer on ``store``, once ``start`` lets it: the runs of its fn."""
    runs = 0
    shared: Shared[str, int] = Shared(store, NAME, _template(), locking=locking)
    start.wait(timeout=60)
    for i in range(updates):

        def put(m: Memory[str, int], key: str = f"w{worker}-{i}") -> Memory[str, int]:
            nonlocal runs
            runs += 1
            time.sleep(pause)
            return m.put(worker, key=key)

        shared.update(put)
    return runs


def _process(
    open_store: Callable[[], Store], worker: int, updates: int, pause: float, locking: bool, start: Any, out: Any
) -> None:
    store = open_store()
    try:
        out.put(_write(store, worker, updates, pause, locking, start))
    finally:
        store.close()


def _created(open_store: Callable[[], Store]) -> None:
    store = open_store()
    try:
        Shared(store, NAME, _template())
    finally:
        store.close()


def _checked(open_store: Callable[[], Store], commits: int) -> int:
    """The memory's version, once every commit is found in it."""
    store = open_store()
    try:
        shared: Shared[str, int] = Shared(store, NAME, _template())
        assert len(shared.current()) == commits  # nothing lost
        return shared.version
    finally:
        store.close()


def race_in_processes(
    open_store: Callable[[], Store], writers: int, updates: int, *, pause: float = 0.001, locking: bool = True
) -> tuple[int, int]:
    """``writers`` spawned processes, each on a store of its own (``open_store``: picklable, a
    ``functools.partial`` of an engine class): (runs of fn, the version reached)."""
    _created(open_store)
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(writers), context.Queue()
    procs = [
        context.Process(target=_process, args=(open_store, w, updates, pause, locking, start, out))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    runs = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return runs, _checked(open_store, writers * updates)


def race_in_threads(
    open_store: Callable[[], Store], writers: int, updates: int, *, pause: float = 0.001, one_store: bool = False
) -> tuple[int, int]:
    """``writers`` threads, each on a store of its own (as a process has) or all on one
    (``one_store``): (runs of fn, the version reached)."""
    _created(open_store)
    shared_store = open_store() if one_store else None
    runs = [0] * writers
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def writer(w: int) -> None:
        try:
            store = shared_store or open_store()
            try:
                runs[w] = _write(store, w, updates, pause, True, start)
            finally:
                if store is not shared_store:
                    store.close()
        except BaseException as exc:  # reported below
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        if shared_store is not None:
            shared_store.close()
    assert errors == []
    return sum(runs), _checked(open_store, writers * updates)


def counted(runs: list[str], key: str) -> Callable[[Memory[str, str]], Memory[str, str]]:
    """A function putting ``key`` at ``key``, noting each of its runs in ``runs``."""

    def put(m: Memory[str, str]) -> Memory[str, str]:
        runs.append(key)
        return m.put(key, key=key)

    return put


def take_turns(a_store: Store, b_store: Store) -> tuple[list[str], Shared[str, str], Shared[str, str]]:
    """Two writers of "notes", each on a store of its own, committing the keys "1" to "7" in
    the turns a a b a b b a: the keys their functions ran for, in order, and the two writers."""
    runs: list[str] = []
    a: Shared[str, str] = Shared(a_store, NAME, Memory())
    b: Shared[str, str] = Shared(b_store, NAME, Memory())
    for writer, key in zip((a, a, b, a, b, b, a), "1234567"):
        writer.update(counted(runs, key))
    return runs, a, b
