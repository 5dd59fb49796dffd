"""What an operation removed is reported on the version it returns, and hooks hear it once.

``new.evicted`` holds the entries the operation that produced ``new``
removed; ``on_evict`` is told of exactly those, once, and only when the
operation succeeds.  Under compare-and-swap, reporting ``new.evicted`` after a
successful swap reports every eviction exactly once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory, MemoryFullError, SummarizeError

from ._support import HOUR, fake_clock


def keys(entries: Any) -> list[Any]:
    return [e.key for e in entries]


def summarize_except(bad: Any) -> Any:
    """A summarize_fn that fails for the entry at key ``bad`` and summarizes the others."""

    def summarize(entry: Entry[Any, Any]) -> str:
        if entry.key == bad:
            raise ValueError(f"cannot summarize {bad}")
        return "gist"

    return summarize


class TestEvictedAttribute:
    def test_a_fresh_memory_and_most_writes_evicted_nothing(self, make: Any) -> None:
        mem = make(max_entries=3)
        assert mem.evicted == ()
        mem = mem.put("a", key="a").put("b", key="b")
        assert mem.evicted == ()
        mem, _ = mem.get("a")
        assert mem.evicted == ()
        assert mem.touch("b").evicted == mem.pin("a").evicted == mem.delete("b").evicted == ()

    def test_a_put_at_capacity_reports_its_victim_summarized(self, make: Any, clock: ManualClock) -> None:
        told: list[tuple[Entry[Any, Any], ...]] = []
        mem = make(max_entries=2, summarize_fn=lambda e: f"gist of {e.value}", on_evict=told.append)
        mem = mem.put("old", key="old").put("new", key="new")
        clock.advance(HOUR)
        full = mem.put("newest", key="newest")
        assert [(e.key, e.summary) for e in full.evicted] == [("old", "gist of old")]
        assert told == [full.evicted]
        assert full.put("again", key="newest").evicted == ()  # a replacement evicts nothing
        assert mem.evicted == ()  # the receiver is unchanged

    def test_evict_returns_what_the_version_reports(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=60).put("a", key="a").put("b", key="b", importance=100.0)
        clock.advance(600)
        new, gone = mem.evict()
        assert keys(gone) == ["a"]
        assert new.evicted == gone
        assert new.put("c", key="c").evicted == ()  # the report belongs to one version only

    def test_evicted_is_not_part_of_equality(self, make: Any, clock: ManualClock) -> None:
        mem = make(max_entries=1).put("a", key="a")
        clock.advance(HOUR)
        full = mem.put("b", key="b")
        assert full.evicted
        same = mem.delete("a").put("b", key="b")
        assert same.evicted == ()
        assert full == same

    @pytest.mark.parametrize(
        "noop",
        [
            lambda m: m.delete("missing"),
            lambda m: m.evict()[0],
            lambda m: m.summarize(),
            lambda m: m.pin("p"),
            lambda m: m.consolidate()[0],
            lambda m: m.put_many([]),
        ],
        ids=["delete", "evict", "summarize", "pin", "consolidate", "put_many"],
    )
    def test_an_operation_that_changes_nothing_reports_nothing(self, make: Any, clock: ManualClock, noop: Any) -> None:
        """Publishing its result must not report the previous operation's evictions again."""
        mem = make(max_entries=2, summarize_fn=lambda e: "gist").put("a", key="a").put("p", key="p", pinned=True)
        clock.advance(HOUR)
        full = mem.put("b", key="b")
        assert keys(full.evicted) == ["a"]
        same = noop(full)
        assert same.evicted == ()
        assert same == full

    def test_put_many_that_overflows_reports_once_of_every_victim(self, make: Any) -> None:
        told: list[tuple[Entry[Any, Any], ...]] = []
        mem = make(max_entries=2, on_evict=told.append).put("a", key="a").put("b", key="b")
        new = mem.put_many([("c", 1), ("d", 2), ("e", 3)])
        assert keys(new.evicted) == ["a", "b", "c"]
        assert told == [new.evicted]


class TestHooksHearOnlyWhatAReturnedVersionRemoved:
    def test_put_many_failing_on_a_later_summary_tells_no_hook(self, make: Any) -> None:
        told: list[Any] = []
        mem = make(max_entries=2, summarize_fn=summarize_except("b"), on_evict=told.append)
        mem = mem.put("a", key="a").put("b", key="b")
        with pytest.raises(SummarizeError):
            mem.put_many([("c", 1), ("d", 2)])  # "a" would go first, then "b" fails
        assert told == []
        assert sorted(mem.keys()) == ["a", "b"]
        # Later, when "a" really goes, it is reported once.
        new = mem.put("c", key="c")
        assert told == [new.evicted]
        assert keys(new.evicted) == ["a"]

    def test_put_many_hitting_a_full_pinned_memory_tells_no_hook(self, make: Any) -> None:
        told: list[Any] = []
        mem = make(max_entries=2, on_evict=told.append).put("a", key="a").put("p", key="p", pinned=True)
        with pytest.raises(MemoryFullError):
            mem.put_many([("c", 1), ("d", 2)], pinned=True)  # "a" would go, then every entry is pinned
        assert told == []
        assert sorted(mem.keys()) == ["a", "p"]

    def test_a_hook_that_raises_leaves_the_memory_as_it_was(self, make: Any) -> None:
        def refuse(entries: tuple[Entry[Any, Any], ...]) -> None:
            raise OSError("archive offline")

        mem = make(max_entries=1, on_evict=refuse).put("a", key="a")
        with pytest.raises(OSError, match="archive offline"):
            mem.put("b", key="b")
        assert list(mem.keys()) == ["a"]

    def test_compare_and_swap_reports_every_eviction_exactly_once(self) -> None:
        """Workers publish versions by compare-and-swap and report ``new.evicted`` after a
        successful swap: every put's eviction is reported once, however many swaps lose."""
        lock = threading.Lock()
        clock = fake_clock()
        current: list[Memory[Any, Any]] = [Memory(max_entries=10, clock_fn=clock)]
        reported: list[Any] = []
        puts_per_worker, workers = 200, 4

        def worker(w: int) -> None:
            for i in range(puts_per_worker):
                while True:
                    seen = current[0]
                    new = seen.put(f"{w}:{i}", key=(w, i))
                    with lock:
                        if current[0] is seen:
                            current[0] = new
                            reported.extend(e.key for e in new.evicted)
                            break

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        final = current[0]
        total = puts_per_worker * workers
        assert len(reported) == len(set(reported)) == total - len(final)
        assert set(reported) | set(final.keys()) == {(w, i) for w in range(workers) for i in range(puts_per_worker)}


class TestExpiredEntriesAreReportedWhenRemoved:
    def test_the_next_write_removes_and_reports_them(self, make: Any, clock: ManualClock) -> None:
        told: list[Any] = []
        mem = make(summarize_fn=lambda e: "gist", on_evict=told.append)
        mem = mem.put("code 1234", key="otp", ttl=60).put("note", key="note")
        clock.advance(61)
        assert mem.evicted == ()
        new = mem.put("other", key="other")
        assert [(e.key, e.summary) for e in new.evicted] == [("otp", "gist")]
        assert told == [new.evicted]
        assert sorted(new.keys()) == ["note", "other"]
        assert new.put("more", key="more").evicted == ()  # reported once

    @pytest.mark.parametrize(
        "write",
        [
            lambda m: m.put("x", key="x"),
            lambda m: m.put_many([("x", "x")]),
            lambda m: m.get("note")[0],
            lambda m: m.touch("note"),
            lambda m: m.update("note", "new"),
            lambda m: m.pin("note"),
            lambda m: m.summarize(),
            lambda m: m.evict()[0],
            lambda m: m.consolidate()[0],
        ],
    )
    def test_every_write_removes_them(self, make: Any, clock: ManualClock, write: Any) -> None:
        told: list[Any] = []
        mem = make(on_evict=told.append).put("code", key="otp", ttl=60).put("note", key="note")
        clock.advance(61)
        new = write(mem)
        assert keys(new.evicted) == ["otp"]
        assert told == [new.evicted]
        assert "otp" not in [e["key"] for e in new.to_dict()["entries"]]  # physically gone

    def test_clear_reports_nothing(self, make: Any, clock: ManualClock) -> None:
        told: list[Any] = []
        mem = make(on_evict=told.append).put("code", key="otp", ttl=60)
        clock.advance(61)
        assert mem.clear().evicted == ()
        assert told == []


class TestSummarizeError:
    def test_it_carries_the_key_and_the_entry(self, make: Any, clock: ManualClock) -> None:
        def summarize(entry: Entry[Any, Any]) -> str:
            raise ValueError("quota exceeded")

        mem = make(max_entries=1, summarize_fn=summarize).put("old", key="old")
        clock.advance(HOUR)
        with pytest.raises(SummarizeError) as info:
            mem.put("new", key="new")
        assert info.value.key == "old"
        assert info.value.entry == mem.peek("old")
        assert isinstance(info.value.__cause__, ValueError)

    def test_a_program_goes_on_by_dropping_the_entry_and_reporting_it_itself(
        self, make: Any, clock: ManualClock
    ) -> None:
        archived: list[Any] = []
        mem = make(max_entries=2, summarize_fn=summarize_except("poison"), on_evict=archived.extend)
        mem = mem.put("x", key="poison").put("y", key="fine")
        clock.advance(HOUR)
        for value in ("a", "b", "c"):
            try:
                mem = mem.put(value, key=value)
            except SummarizeError as err:  # the documented recipe
                archived.append(err.entry)
                mem = mem.delete(err.key).put(value, key=value)
        assert [e.key for e in archived] == ["poison", "fine", "a"]
        assert sorted(mem.keys()) == ["b", "c"]

    def test_expired_entries_whose_summaries_fail_do_not_block_the_memory(self, make: Any, clock: ManualClock) -> None:
        """Two expired entries whose summaries always fail: every write but delete raises, and
        deleting each one named by the error lets the program go on."""

        def summarize(entry: Entry[Any, Any]) -> str:
            if str(entry.key).startswith("poison"):
                raise ValueError("no")
            return "gist"

        archived: list[Any] = []
        mem = make(summarize_fn=summarize, on_evict=archived.extend)
        mem = mem.put("x", key="poison1", ttl=10).put("y", key="poison2", ttl=10).put("z", key="ok")
        clock.advance(20)
        for _ in range(3):
            try:
                mem = mem.put("new", key="new")
                break
            except SummarizeError as err:
                archived.append(err.entry)
                mem = mem.delete(err.key)
        assert sorted(e.key for e in archived) == ["poison1", "poison2"]
        assert sorted(mem.keys()) == ["new", "ok"]

    def test_delete_runs_no_hook_and_removes_nothing_else(self, make: Any, clock: ManualClock) -> None:
        told: list[Any] = []
        mem = make(summarize_fn=summarize_except("otp"), on_evict=told.append)
        mem = mem.put("code", key="otp", ttl=10).put("note", key="note")
        clock.advance(20)
        kept = mem.delete("note")
        assert kept.evicted == ()
        assert told == []
        assert [e["key"] for e in kept.to_dict()["entries"]] == ["otp"]  # still held, unreported
        assert mem.delete("otp").to_dict()["entries"][0]["key"] == "note"  # expired or not

    def test_a_program_goes_on_by_keeping_the_entry(self, make: Any, clock: ManualClock) -> None:
        mem = make(max_entries=2, summarize_fn=summarize_except("poison")).put("x", key="poison").put("y", key="fine")
        clock.advance(HOUR)
        try:
            mem = mem.put("z", key="z")
        except SummarizeError as err:
            mem = mem.touch(err.key).put("z", key="z")  # rehearsed: the other one goes instead
        assert sorted(mem.keys()) == ["poison", "z"]

    def test_nested_messages_stay_bounded(self, make: Any, clock: ManualClock) -> None:
        """A summarize_fn that re-enters a memory whose summarize_fn fails, 30 levels deep."""

        def level(depth: int) -> Memory[Any, Any]:
            def summarize(entry: Entry[Any, Any]) -> str:
                if depth == 0:
                    raise ValueError("x" * 10_000)
                inner = level(depth - 1).put("a", key="a")
                clock.advance(HOUR)
                inner.put("b", key="b")
                return "unreached"

            return Memory(max_entries=1, clock_fn=clock, summarize_fn=summarize)

        with pytest.raises(SummarizeError) as info:
            level(30).put("a", key="a").put("b", key="b")
        assert len(str(info.value)) < 400
        depth, cause = 0, info.value.__cause__
        while cause is not None:
            depth, cause = depth + 1, cause.__cause__
        assert depth == 31  # the whole story is in the cause chain

    def test_it_pickles_with_its_key_and_entry(self, make: Any) -> None:
        import pickle

        err = SummarizeError("failed", key="k", entry=None)
        back = pickle.loads(pickle.dumps(err))
        assert (str(back), back.key, back.entry) == ("failed", "k", None)


class TestAwaitableHooks:
    def test_a_summarize_fn_returning_a_coroutine_is_refused(self, make: Any, clock: ManualClock) -> None:
        async def summarize(entry: Entry[Any, Any]) -> str:
            return "gist"

        mem = make(max_entries=1, summarize_fn=lambda e: summarize(e)).put("a", key="a")
        clock.advance(HOUR)
        with _no_warning(), pytest.raises(TypeError, match="summarize_fn returned an awaitable"):
            mem.put("b", key="b")
        assert list(mem.keys()) == ["a"]

    def test_an_on_evict_returning_a_coroutine_is_refused(self, make: Any, clock: ManualClock) -> None:
        async def archive(entries: Any) -> None:
            return None

        mem = make(max_entries=1, on_evict=lambda es: archive(es)).put("a", key="a")
        clock.advance(HOUR)
        with _no_warning(), pytest.raises(TypeError, match="on_evict returned an awaitable"):
            mem.put("b", key="b")


class _no_warning:
    """Fail if a RuntimeWarning (a coroutine never awaited) is emitted inside."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: object) -> None:
        import gc

        gc.collect()
        self._catch.__exit__(*exc)
        assert not [w for w in self._seen if issubclass(w.category, RuntimeWarning)]


def test_a_clock_returning_a_coroutine_is_refused_without_a_warning() -> None:
    async def now() -> Any:
        return None

    mem: Memory[Any, Any] = Memory(clock_fn=lambda: now())
    with _no_warning(), pytest.raises(TypeError, match=r"clock_fn.*coroutine"):
        mem.put("x", key="k")
