"""lethe.store when a writer dies at a chosen moment, and when a hook fails around a commit.

* A writer process SIGKILLs itself from inside SQLite (a trace callback on its own connection runs before each
  statement) at one statement of a known sequence of updates: the first write of a transaction, just before its
  ``COMMIT``, just after it, inside ``on_evict``, and the same around a checkpoint.  The statement is found by
  counting ``BEGIN``/``COMMIT`` statements, never by table names: a dry run of the same sequence, traced the same
  way in this process, says which one it is, whether the killed update's append was already committed, and what the
  memory is at every version.  Afterwards the file must pass ``PRAGMA integrity_check``, reopen, hold every
  acknowledged version exactly as the dry run made it and nothing of an uncommitted one, and take the rest of the
  sequence from a new writer.
* ``on_evict`` raising after a commit: the error propagates, the commit stands (durable, visible to every replica,
  in the eviction feed), this replica is at the committed version, and the next write commits at the next version
  without running the first one again.
* ``summarize_fn`` raising inside an update: ``SummarizeError`` propagates and nothing of that update is committed.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory, SummarizeError
from lethe.store import Shared, SQLiteStore, Store, StoreError

from ._support import MINUTE, START, fake_clock, sqlite_integrity
from .conftest import LOCAL_ENGINES, make_store
from .test_store_processes import in_fresh_process

NAME = "bot"
MAX_ENTRIES = 3  # every put from version 4 on evicts one entry
CHECKPOINT_EVERY = 5  # with 3 entries, a checkpoint (and from the second on, a compaction) every 5 versions
UPDATES = 16  # the whole sequence; the writer is killed before its end
PLAIN = 7  # an update that evicts and writes no checkpoint
CHECKPOINTED = 10  # an update that writes the second checkpoint and compacts the log before the first


# -- the sequence, the same in the dry run, the killed writer and the writer after it ---------------------------------


def _moment(version: int) -> datetime:
    return START + version * MINUTE


def _put(version: int) -> Callable[[Memory[Any, Any]], Memory[Any, Any]]:
    """The operation that makes ``version``: one put of a new key."""
    return lambda m: m.put(f"note {version}", key=f"k{version}", importance=1.0 + version % 3)


OnEvict = Callable[[tuple[Entry[Any, Any], ...]], None]


def _template(clock: ManualClock, on_evict: OnEvict | None = None) -> Memory[Any, Any]:
    return Memory(max_entries=MAX_ENTRIES, clock_fn=clock, on_evict=on_evict)


_WORD = re.compile(r"\s*([A-Za-z]+)")
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _kind(sql: str) -> str:
    """What a traced statement does to the transaction: begin, commit, rollback, write or other."""
    match = _WORD.match(sql)
    word = match.group(1).upper() if match else ""
    if word == "BEGIN":
        return "begin"
    if word in ("COMMIT", "END"):
        return "commit"
    if word == "ROLLBACK" and not re.match(r"\s*ROLLBACK\s+(TRANSACTION\s+)?TO\b", sql, re.IGNORECASE):
        return "rollback"
    if word in ("INSERT", "UPDATE", "DELETE", "REPLACE") or (word == "WITH" and _WRITES.search(sql)):
        return "write"
    return "other"


# -- the killed writer (module level, so that the spawn start method can import it) -----------------------------------


class _Killer:
    """A trace callback that SIGKILLs this process before one statement.

    ``rule`` is ``write`` (the first write after the ``n``-th BEGIN), ``commit`` (the ``n``-th COMMIT itself) or
    ``after`` (the first statement after the ``n``-th COMMIT).  Before dying it tells the parent where it was.
    """

    def __init__(self, rule: str, n: int, report: Connection) -> None:
        self.rule = rule
        self.n = n
        self.report = report
        self.begins = 0
        self.commits = 0
        self.update = 0  # the version the running update is making

    def __call__(self, sql: str) -> None:
        kind = _kind(sql)
        if self.rule == "after" and self.commits == self.n:
            self._die(kind)
        if kind == "begin":
            self.begins += 1
        elif kind == "commit":
            self.commits += 1
            if self.rule == "commit" and self.commits == self.n:
                self._die(kind)
        elif kind == "write" and self.rule == "write" and self.begins == self.n:
            self._die(kind)

    def _die(self, kind: str) -> None:
        self.report.send(("killed", self.update, kind))
        os.kill(os.getpid(), signal.SIGKILL)


def _killed_writer(path: str, rule: str, n: int, report: Connection) -> None:
    """Run the sequence, acknowledging each version once ``update`` returned; die where ``rule`` and ``n`` say.

    ``rule`` ``on-evict`` dies inside ``on_evict`` of the update making version ``n`` (after its commit returned,
    before ``update`` does); the others are :class:`_Killer`'s.
    """
    clock = fake_clock()
    killer = _Killer(rule, n, report)

    def on_evict(gone: tuple[Entry[Any, Any], ...]) -> None:
        if rule == "on-evict" and killer.update == n:
            killer._die("on_evict")

    store = SQLiteStore(path)
    shared: Shared[Any, Any] = Shared(store, NAME, _template(clock, on_evict), checkpoint_every=CHECKPOINT_EVERY)
    store._connection().set_trace_callback(killer)
    for version in range(1, UPDATES + 1):
        killer.update = version
        clock.set(_moment(version))
        shared.update(_put(version))
        report.send(("acknowledged", shared.version))
    store.close()  # not killed: the parent fails on the exit code


def _writer_exitcode(method: str, path: str, rule: str, n: int, report: Connection) -> int | None:
    """Start :func:`_killed_writer` by ``method``, close this process's copy of ``report``, and wait for the
    writer to end (killing it after 60 s): its exit code."""
    ctx: Any = multiprocessing.get_context(method)  # typeshed's BaseContext has no Process
    proc = ctx.Process(target=_killed_writer, args=(path, rule, n, report))
    proc.start()
    report.close()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        proc.join()
    code: int | None = proc.exitcode
    return code


# -- the dry run -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _DryRun:
    events: tuple[tuple[int, str], ...]  # (the version its update was making, kind) of each statement traced
    memories: tuple[Memory[Any, Any], ...]  # [v]: the memory at version v
    checkpoints: tuple[int, ...]  # [v]: the newest checkpoint's version once version v was committed


def _dry_run(path: Path, template: Memory[Any, Any], clock: ManualClock) -> _DryRun:
    events: list[tuple[int, str]] = []
    update = [0]  # 0: not inside an update (the checkpoint reads below are not part of the sequence)

    def record(sql: str) -> None:
        if update[0]:
            events.append((update[0], _kind(sql)))

    with SQLiteStore(path) as store:
        shared: Shared[Any, Any] = Shared(store, NAME, template, checkpoint_every=CHECKPOINT_EVERY)
        memories = [shared.current()]
        checkpoints = [store.checkpoint(NAME)[0]]
        store._connection().set_trace_callback(record)
        for version in range(1, UPDATES + 1):
            update[0] = version
            clock.set(_moment(version))
            memories.append(shared.update(_put(version)))
            update[0] = 0
            checkpoints.append(store.checkpoint(NAME)[0])
    # The sequence does what the kills below need: evictions, and a checkpoint written by the update CHECKPOINTED.
    assert all(len(memories[v].evicted) == 1 for v in range(MAX_ENTRIES + 1, UPDATES + 1))
    assert checkpoints[CHECKPOINTED - 1] < CHECKPOINTED == checkpoints[CHECKPOINTED]
    assert checkpoints[PLAIN - 1] == checkpoints[PLAIN]
    return _DryRun(tuple(events), tuple(memories), tuple(checkpoints))


@dataclass(frozen=True)
class _Kill:
    n: int  # the child's count (BEGINs for ``write``, COMMITs otherwise)
    update: int  # the version the update running at the kill was making
    kind: str  # the kind of the statement the kill lands on
    expected: int  # the version the store must be at afterwards
    checkpoints: frozenset[int]  # what the newest checkpoint's version may then be


def _where(run: _DryRun, rule: str, version: int, which: str) -> _Kill:
    """Where the child must die to hit the ``which`` (first or last) write transaction of the update making
    ``version``, and what the store then holds."""
    writes: list[tuple[int, int, int]] = []  # (BEGIN, first write, COMMIT) index of each write transaction
    begin: int | None = None
    first: int | None = None
    for i, (_, kind) in enumerate(run.events):
        if kind == "begin":
            begin, first = i, None
        elif kind == "write" and begin is not None and first is None:
            first = i
        elif kind in ("commit", "rollback"):
            if kind == "commit" and begin is not None and first is not None:
                writes.append((begin, first, i))
            begin = first = None
    mine = [t for t in writes if run.events[t[0]][0] == version]
    assert mine, f"the update making version {version} wrote no transaction"
    begin, first, commit = mine[0] if which == "first" else mine[-1]
    kinds = [kind for _, kind in run.events]
    if rule == "write":
        n, at = kinds[: begin + 1].count("begin"), first
    else:
        n, at = kinds[: commit + 1].count("commit"), commit + (rule == "after")
    update, kind = run.events[at]
    # The append of the update running at the kill went in if one of its write transactions committed before; a
    # checkpoint it writes is there if all of them did, and is not if none did.
    done = [c < at for _, _, c in writes if run.events[c][0] == update]
    checkpoints = {run.checkpoints[update - 1]} if not any(done) else set()
    if all(done):
        checkpoints.add(run.checkpoints[update])
    if not checkpoints:
        checkpoints = {run.checkpoints[update - 1], run.checkpoints[update]}
    return _Kill(n, update, kind, update - 1 + any(done), frozenset(checkpoints))


KILLS = {
    # name: (rule, version, which write transaction of its update)
    "first-write": ("write", PLAIN, "first"),
    "before-commit": ("commit", PLAIN, "first"),
    "after-commit": ("after", PLAIN, "first"),
    "in-on_evict": ("on-evict", PLAIN, ""),
    "checkpoint-first-write": ("write", CHECKPOINTED, "last"),
    "checkpoint-before-commit": ("commit", CHECKPOINTED, "last"),
    "checkpoint-after-append": ("after", CHECKPOINTED, "first"),
}


@pytest.mark.parametrize("kill", list(KILLS))
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_writer_killed_at_a_chosen_statement_loses_only_its_own_uncommitted_update(
    tmp_path: Path, method: str, kill: str
) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    clock = fake_clock()
    template = _template(clock)
    run = _dry_run(tmp_path / "dry.db", template, clock)
    rule, version, which = KILLS[kill]
    if rule == "on-evict":
        # After the commit (and the checkpoint) returned, before update did.
        where = _Kill(version, version, "on_evict", version, frozenset({run.checkpoints[version]}))
    else:
        where = _where(run, rule, version, which)

    path = tmp_path / "store.db"
    reports, report = multiprocessing.Pipe(duplex=False)
    if method == "fork":  # forked from a process where no thread runs
        exitcode = in_fresh_process(_writer_exitcode, method, str(path), rule, where.n, report)
        report.close()
    else:
        exitcode = _writer_exitcode(method, str(path), rule, where.n, report)
    messages = []
    with reports:
        while True:  # to the end: the child is gone, and this process closed its own copy of the sending end
            try:
                messages.append(reports.recv())
            except EOFError:
                break
    assert exitcode == -signal.SIGKILL, messages
    *acks, last = messages
    assert last == ("killed", where.update, where.kind)
    acknowledged = [v for _, v in acks]
    assert acknowledged == list(range(1, where.update))  # sent after update returned, so the pipe kept them

    assert sqlite_integrity(path) == "ok"
    with SQLiteStore(path) as store:
        shared: Shared[Any, Any] = Shared(store, NAME, template, checkpoint_every=CHECKPOINT_EVERY)
        assert shared.version >= max(acknowledged)
        assert shared.version == where.expected
        assert shared.current() == run.memories[shared.version]
        # Every acknowledged put is there at its version (versions before the newest checkpoint may be compacted).
        newest = store.checkpoint(NAME)[0]
        assert newest in where.checkpoints
        assert newest <= shared.version
        for v in acknowledged:
            try:
                past = shared.at(v)
            except StoreError:
                assert v < newest
                continue
            assert past == run.memories[v]
            assert past.peek(f"k{v}").value == f"note {v}"
        # The killed update is absent unless its commit went in before the kill; then it is there whole.
        if shared.version == where.update - 1:
            with pytest.raises(ValueError, match="after the latest version"):
                shared.at(where.update)
            assert f"k{where.update}" not in shared.current()
        else:
            assert shared.at(where.update).peek(f"k{where.update}").value == f"note {where.update}"
        # Another writer carries on at the next version, and the rest of the sequence comes out as the dry run's.
        for v in range(shared.version + 1, UPDATES + 1):
            clock.set(_moment(v))
            assert shared.update(_put(v)) == run.memories[v]
            assert shared.version == v
        cold = Shared(store, NAME, template, checkpoint_every=CHECKPOINT_EVERY)
        assert cold.version == UPDATES
        assert cold.current() == run.memories[UPDATES]
        # The eviction feed, as far back as it reaches (the older of the two newest checkpoints), is the dry run's.
        since = store.checkpoint(NAME, store.checkpoint(NAME)[0] - 1)[0]
        fed = dict(cold.evictions(since=since))
        assert fed == {v: run.memories[v].evicted for v in range(since + 1, UPDATES + 1)}
    assert sqlite_integrity(path) == "ok"


# -- hooks failing around a commit, on both engines --------------------------------------------------------------------


@pytest.fixture(params=LOCAL_ENGINES)  # the engines needing no server (every hook, every form: cheap ones)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()


def _write(shared: Shared[Any, Any], form: str, fn: Callable[[Memory[Any, Any]], Memory[Any, Any]]) -> None:
    """``fn`` through ``update`` or ``transact``."""
    if form == "update":
        shared.update(fn)
    else:
        assert shared.transact(lambda m: (fn(m), "done")) == "done"


def _versions(store: Store) -> list[int]:
    return [v for v, _ in store.read(NAME, 0)]


@pytest.mark.parametrize("form", ["update", "transact"])
def test_on_evict_raising_after_a_commit_keeps_the_commit(store: Store, form: str) -> None:
    clock = fake_clock()
    heard: list[list[Any]] = []

    def on_evict(gone: tuple[Entry[Any, Any], ...]) -> None:
        heard.append([e.key for e in gone])
        raise RuntimeError("archive is down")

    shared: Shared[Any, Any] = Shared(store, NAME, Memory(max_entries=2, clock_fn=clock, on_evict=on_evict))
    other: Shared[Any, Any] = Shared(store, NAME, Memory(max_entries=2, clock_fn=clock))
    shared.update(lambda m: m.put("a", key="a").put("b", key="b"))
    clock.advance(60)
    runs: list[int] = []

    def put_c(m: Memory[Any, Any]) -> Memory[Any, Any]:
        runs.append(len(m))
        return m.put("c", key="c")  # evicts a

    with pytest.raises(RuntimeError, match="archive is down"):
        _write(shared, form, put_c)
    assert runs == [2]
    assert heard == [["a"]]
    # Committed and visible: this replica is at the committed version, without catching up.
    assert shared.version == 2
    assert _versions(store) == [1, 2]
    assert sorted(shared.current().keys()) == ["b", "c"]
    assert shared.current() == shared.at(2)
    assert other.current().to_dict() == shared.current().to_dict()
    assert other.version == 2
    assert [(v, [e.key for e in gone]) for v, gone in other.evictions(since=1)] == [(2, ["a"])]
    assert Shared(store, NAME, Memory(max_entries=2, clock_fn=clock)).version == 2
    # The next write commits at the next version and does not run or commit the first one again.
    clock.advance(60)
    _write(shared, form, lambda m: m.put("c2", key="c"))
    assert runs == [2]
    assert heard == [["a"]]
    assert shared.version == 3
    assert _versions(store) == [1, 2, 3]
    assert other.current().peek("c").value == "c2"
    assert sorted(other.current().keys()) == ["b", "c"]
    assert [v for v, _ in other.evictions(since=0)] == [2]
    # And an evicting write after it raises again, committed once more.
    clock.advance(60)
    with pytest.raises(RuntimeError, match="archive is down"):
        _write(shared, form, lambda m: m.put("d", key="d"))
    assert heard == [["a"], ["b"]]
    assert shared.version == 4
    assert other.current().to_dict() == shared.current().to_dict()
    assert [(v, [e.key for e in gone]) for v, gone in other.evictions(since=0)] == [(2, ["a"]), (4, ["b"])]


@pytest.mark.parametrize("form", ["update", "transact"])
def test_summarize_fn_raising_commits_nothing(store: Store, form: str) -> None:
    clock = fake_clock()
    failing = [True]

    def summarize(e: Entry[Any, Any]) -> str:
        if failing[0]:
            raise RuntimeError("summarizer is down")
        return f"summary of {e.value}"

    shared: Shared[Any, Any] = Shared(store, NAME, Memory(max_entries=2, clock_fn=clock, summarize_fn=summarize))
    shared.update(lambda m: m.put("a", key="a").put("b", key="b"))
    before = shared.current()
    clock.advance(60)
    with pytest.raises(SummarizeError, match="summarizer is down") as raised:
        _write(shared, form, lambda m: m.put("c", key="c"))  # evicts a: summarize_fn runs and raises
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert raised.value.key == "a"
    assert shared.version == 1
    assert shared.current() is before
    assert _versions(store) == [1]
    assert Shared(store, NAME, Memory(max_entries=2, clock_fn=clock)).version == 1
    assert list(shared.evictions(since=0)) == []
    # Once the summarizer works, the same write commits at the next version, summary included.
    failing[0] = False
    _write(shared, form, lambda m: m.put("c", key="c"))
    assert shared.version == 2
    ((version, (gone,)),) = list(shared.evictions(since=0))
    assert (version, gone.key, gone.summary) == (2, "a", "summary of a")


def test_summarize_fn_raising_on_the_retry_after_a_lost_race_commits_nothing_of_it(store: Store) -> None:
    clock = fake_clock()
    summarized: list[Any] = []

    def summarize(e: Entry[Any, Any]) -> str:
        summarized.append(e.key)
        if e.key == 3:
            raise RuntimeError("cannot summarize 3")
        return f"summary of {e.value}"

    a: Shared[Any, Any] = Shared(store, NAME, Memory(max_entries=2, clock_fn=clock, summarize_fn=summarize))
    b: Shared[Any, Any] = Shared(store, NAME, Memory(max_entries=2, clock_fn=clock, summarize_fn=lambda e: "by b"))
    a.update(lambda m: m.put("one", key=1, importance=5.0).put("two", key=2))
    clock.advance(60)
    attempts: list[int] = []

    def fn(m: Memory[Any, Any]) -> Memory[Any, Any]:
        attempts.append(len(m))
        if len(attempts) == 1:
            b.update(lambda m: m.put("three", key=3))  # b commits version 2 first, evicting 2
        return m.put("four", key=4)  # evicts 2 on the first attempt, 3 on the retry

    with pytest.raises(SummarizeError, match="cannot summarize 3"):
        a.update(fn)
    assert attempts == [2, 2]
    assert summarized == [2, 3]
    # The replica caught up to b's commit and holds nothing of a's update.
    assert a.version == 2
    assert _versions(store) == [1, 2]
    assert a.current().to_dict() == b.current().to_dict()
    assert sorted(a.current().keys()) == [1, 3]
    assert [(v, [(e.key, e.summary) for e in gone]) for v, gone in a.evictions(since=0)] == [(2, [(2, "by b")])]
