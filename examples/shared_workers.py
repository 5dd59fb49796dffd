"""Worker processes sharing one memory through ``lethe.store``: nothing lost, nothing doubled.

Three worker processes open the same named memory in one SQLite store (in a
temporary directory).  The memory is small (``max_entries=5``), so most notes
are evicted to make room.  Each worker puts its notes and, after each one but
the first, rehearses (``get``) its first note if no one has evicted it yet;
its ``on_evict`` collects what *its* commits evicted.  The parent then reads
the final memory and the durable eviction feed and checks the bookkeeping:
every note put is either still held or in the feed, exactly once; each
eviction was reported by exactly one worker's ``on_evict``; and every version
is one put or one rehearsal.

The workers are started with ``multiprocessing``'s ``spawn`` method (the
default on macOS and Windows): the worker function lives at module level and
the program runs under ``if __name__ == "__main__":``.  The clock is real and
the workers race, so which notes survive changes from run to run; the checks
do not.

Run it: ``python examples/shared_workers.py``.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from lethe import Entry, Memory
from lethe.store import Shared, SQLiteStore

WORKERS = 3
NOTES = 8  # per worker
NAME = "team"

#: What a worker sends back: its number, how many rehearsals it committed, the keys its commits evicted.
Report = tuple[int, int, list[str]]


def template(on_evict: Callable[[tuple[Entry[str, str], ...]], Any] | None = None) -> Memory[str, str]:
    """The configuration every process opens the memory with; hooks such as ``on_evict`` are each process's own."""
    return Memory(max_entries=5, half_life=timedelta(seconds=10), on_evict=on_evict)


def note(key: str, text: str) -> Callable[[Memory[str, str]], Memory[str, str]]:
    """The update that puts ``text`` under ``key``; ``update()`` runs it again after a lost race, so it is pure."""
    return lambda mem: mem.put(text, key=key)


def rehearsal(key: str) -> Callable[[Memory[str, str]], Memory[str, str]]:
    """The update that rehearses ``key``; raises KeyError (and so commits nothing) once ``key`` was evicted."""
    return lambda mem: mem.get(key)[0]


def worker(path: str, n: int, start: Barrier, reports: Queue[Report]) -> None:
    """Put ``NOTES`` notes into the shared memory, rehearsing this worker's first note after each later one."""
    evicted: list[str] = []

    def archive(gone: tuple[Entry[str, str], ...]) -> None:
        # Called once for each commit of this process that evicted something, after the commit.
        evicted.extend(e.key for e in gone)

    rehearsals = 0
    with SQLiteStore(path) as store:
        shared: Shared[str, str] = Shared(store, NAME, template(on_evict=archive))
        start.wait()  # all workers begin together, so their commits race
        for i in range(NOTES):
            shared.update(note(f"w{n}-note{i}", f"worker {n}'s note {i}"))
            if i > 0:
                try:
                    shared.update(rehearsal(f"w{n}-note0"))
                    rehearsals += 1
                except KeyError:
                    pass  # evicted already, by some worker's put
            time.sleep(0.005)  # the rest of the worker's job
    reports.put((n, rehearsals, evicted))


def run(directory: str) -> dict[str, Any]:
    """Run the workers on a store in ``directory``; the final memory, the feed, and the checks."""
    path = os.path.join(directory, "team.db")
    ctx = multiprocessing.get_context("spawn")
    start, reports = ctx.Barrier(WORKERS), ctx.Queue()
    processes = [ctx.Process(target=worker, args=(path, n, start, reports)) for n in range(WORKERS)]
    for p in processes:
        p.start()
    # Read the reports before joining: a process does not exit while its queue data is unread.
    by_worker = sorted(reports.get(timeout=30) for _ in processes)
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a worker failed with exit code {p.exitcode}")
    with SQLiteStore(path) as store:
        shared: Shared[str, str] = Shared(store, NAME, template())
        mem = shared.current()
        feed = list(shared.evictions(since=0))
        version = shared.version
    put = Counter(f"w{n}-note{i}" for n in range(WORKERS) for i in range(NOTES))
    fed = [e.key for _, gone in feed for e in gone]
    reported = [key for _, _, keys in by_worker for key in keys]
    rehearsals = sum(r for _, r, _ in by_worker)
    return {
        "workers": by_worker,
        "memory": mem,
        "version": version,
        "feed": feed,
        "kept_or_evicted_once": Counter(list(mem.keys()) + fed) == put,
        "reported_once": Counter(reported) == Counter(fed),
        "every_commit_counted": version == sum(put.values()) + rehearsals,
        "rehearsals": rehearsals,
    }


def main() -> None:
    """Run the workers in a temporary directory and print what they did and the checks."""
    with tempfile.TemporaryDirectory() as directory:
        result = run(directory)
    mem: Memory[str, str] = result["memory"]
    print(f"{WORKERS} workers put {WORKERS * NOTES} notes into one {mem.max_entries}-entry memory")
    for n, rehearsals, evicted in result["workers"]:
        print(f"worker {n}: {rehearsals} rehearsals; its commits evicted {len(evicted)}: {', '.join(evicted)}")
    print(
        f"final memory at version {result['version']} ({WORKERS * NOTES} puts + {result['rehearsals']} rehearsals), "
        "best first:"
    )
    for entry, score in mem.scored():
        print(f"  {entry.key:<9} score {score:.3f}, rehearsed {entry.access_count}x: {entry.value}")
    evicted_count = sum(len(gone) for _, gone in result["feed"])
    print(f"eviction feed: {evicted_count} entries evicted, by {len(result['feed'])} versions")
    print(f"every put is kept or in the eviction feed, exactly once: {result['kept_or_evicted_once']}")
    print(f"every eviction was reported by one worker's on_evict: {result['reported_once']}")
    print(f"every commit was one put or one rehearsal: {result['every_commit_counted']}")


if __name__ == "__main__":
    main()
