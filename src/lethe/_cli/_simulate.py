"""``lethe simulate LOG.jsonl``: replay a JSON-lines log of operations through a model and a capacity.

The log's times drive a :class:`~lethe.ManualClock`; each line becomes one
``Memory`` call, and the report says what was kept, summarized and evicted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

from lethe import Entry, ManualClock, Memory, MemoryFullError
from lethe._cli._format import (
    MAX_SECONDS,
    CLIError,
    Progress,
    format_duration,
    json_type,
    parse_duration,
    parse_time,
    preview,
    printing,
    read_lines,
)
from lethe._cli._models import build_model, uses_half_life
from lethe._cli._states import count_text, counts, state
from lethe._memory.config import MAX_ENTRIES

#: The fields each op takes besides ``t`` and ``op`` (as the op lines of the help name them),
#: in the order the report counts the ops. An op that takes ``value`` requires it; one that
#: takes ``key`` requires it too, but ``put``.
OP_FIELDS: dict[str, frozenset[str]] = {
    "put": frozenset({"key", "value", "importance", "pinned", "metadata"}),
    "get": frozenset({"key", "importance"}),
    "touch": frozenset({"key", "importance"}),
    "update": frozenset({"key", "value"}),
    "pin": frozenset({"key"}),
    "unpin": frozenset({"key"}),
    "delete": frozenset({"key"}),
    "evict": frozenset(),
}
#: The operations a log line may name, in the order the report counts them.
OPS = tuple(OP_FIELDS)
#: Every field a log line may have.
EVENT_FIELDS = frozenset({"t", "op"}).union(*OP_FIELDS.values())
#: How deep a field may nest: json, the stand-in summaries and Memory's copy of metadata
#: recurse, and must stay inside Python's recursion limit wherever they are called from.
MAX_DEPTH = 100
_SIM_START = datetime(2026, 1, 1, tzinfo=timezone.utc)

#: The log format ``lethe simulate`` reads (its ``--help`` epilog, quoted in docs/cli.md).
SIMULATE_LOG_FORMAT = """\
The log is JSON lines: one JSON object per line, one operation each, in time
order (blank lines are skipped). Fields:

  t           required. An ISO-8601 time with a UTC offset ("2026-01-01T09:00:00Z"),
              or seconds (a number >= 0) after the first event's time (after
              2026-01-01T00:00:00Z when the first event's t is a number).
              Never earlier than the previous event's.
  op          required. One of:
                put     Memory.put(value, key=, importance=, pinned=, metadata=)
                get     Memory.get(key): a rehearsal (with importance: Memory.touch)
                touch   Memory.touch(key, importance=)
                update  Memory.update(key, value): a new value, a rehearsal
                pin     Memory.pin(key)
                unpin   Memory.unpin(key)
                delete  Memory.delete(key)
                evict   Memory.evict(): summarize what fades, remove what has faded
  key         a string or a number. Required by every op but put and evict; a put
              without one gets a generated int key.
  value       any JSON value. Required by put and update.
  importance  a number >= 0 (put: default 1; get and touch: the new importance).
  pinned      true or false (put only; default false).
  metadata    a JSON object (put only).

Any other field is an error. An op on a key the memory does not hold counts
as a miss; a put into a memory whose entries are all pinned counts as
rejected. Example lines:

  {"t": "2026-01-01T09:00:00Z", "op": "put", "key": "rule", "value": "be terse", "pinned": true}
  {"t": 60, "op": "put", "key": "obs1", "value": "the build is green", "importance": 1.5}
  {"t": 120, "op": "get", "key": "obs1"}
  {"t": 7200, "op": "evict"}
"""


@dataclass
class SimulationReport:
    """What ``lethe simulate`` found: counts, and what was kept, summarized and evicted."""

    model: str
    half_life: float | None
    capacity: int
    events: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    misses: int = 0
    rejected: int = 0
    kept: list[dict[str, Any]] = field(default_factory=list)
    summarized: list[Any] = field(default_factory=list)
    evicted: list[dict[str, Any]] = field(default_factory=list)
    start: datetime | None = None
    end: str | None = None

    def kept_states(self) -> dict[str, int]:
        """How many kept entries end in each state (the labels of ``kept``), zeros left out."""
        return counts([k["state"] for k in self.kept])

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON types."""
        names = ("model", "half_life", "capacity", "events", "ops", "misses", "rejected")
        doc = {name: getattr(self, name) for name in names}
        doc["start"] = None if self.start is None else self.start.isoformat()
        doc["end"] = self.end
        doc["counts"] = {
            "kept": len(self.kept),
            "kept_states": self.kept_states(),
            "summarized": len(self.summarized),
            "evicted": len(self.evicted),
        }
        doc.update(kept=self.kept, summarized=self.summarized, evicted=self.evicted)
        return doc


def _event_time(raw: Any, start: datetime) -> datetime:
    if isinstance(raw, bool):
        raise CLIError("t: expected an ISO time or seconds since start, got a boolean")
    if isinstance(raw, (int, float)):
        if not math.isfinite(raw) or raw < 0 or raw > MAX_SECONDS * 10:
            raise CLIError(f"t: seconds since start must be finite and >= 0, got {raw!r}")
        try:
            return start + timedelta(seconds=raw)
        except OverflowError:
            raise CLIError(f"t: {raw!r} seconds after {start.isoformat()} is past the year 9999") from None
    if isinstance(raw, str):
        return parse_time(raw, "t")
    raise CLIError(f"t: expected an ISO time or seconds since start, got {json_type(raw)}")


def simulate(path: str, model: str = "exponential", half_life: str = "1h", capacity: int = 100) -> SimulationReport:
    """Replay the JSON-lines log at ``path`` through ``model`` with ``capacity`` entries.

    Raises:
        CLIError: a bad option, an unreadable file or a bad line (named by number).
    """
    hl = parse_duration(half_life, "--half-life")
    if not 1 <= capacity <= MAX_ENTRIES:
        raise CLIError(f"--capacity: must be from 1 to 2**63 - 1, got {capacity}")
    fn = build_model(model, hl)
    report = SimulationReport(model=model, half_life=hl if uses_half_life(model, hl) else None, capacity=capacity)
    clock = ManualClock(_SIM_START)
    summarized: dict[Any, None] = {}
    reason = ["capacity"]

    def summarize(entry: Entry[Any, Any]) -> str:
        # A stand-in for an LLM summary; it records which entries were summarized.
        summarized[entry.key] = None
        return "summary: " + preview(entry.value, 40)

    def evicted(entries: tuple[Entry[Any, Any], ...]) -> None:
        for e in entries:
            report.evicted.append(
                {"key": e.key, "reason": reason[0], "at": clock.now.isoformat(), "summary": e.summary}
            )

    mem: Memory[Any, Any] = Memory(
        max_entries=capacity, decay_fn=fn, summarize_fn=summarize, on_evict=evicted, clock_fn=clock
    )
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0
    progress = Progress("simulate", size)
    done_bytes = 0
    try:
        for lineno, line in enumerate(read_lines(path, "surrogateescape"), start=1):
            try:
                done_bytes += len(line.encode("utf-8"))
            except UnicodeEncodeError as exc:  # (only a byte read_lines escaped cannot be encoded)
                byte = ord(line[exc.start]) - 0xDC00
                raise CLIError(f"{path}:{lineno}: not UTF-8 (byte 0x{byte:02x} at column {exc.start + 1})") from None
            if lineno % 256 == 0:
                progress.update(done_bytes)
            if not line.strip():
                continue
            try:
                mem = _replay(line, mem, clock, report, reason)
            except CLIError as exc:
                raise CLIError(f"{path}:{lineno}: {exc}") from None
            except MemoryFullError:
                report.rejected += 1
            except KeyError:
                report.misses += 1
            except (TypeError, ValueError) as exc:
                raise CLIError(f"{path}:{lineno}: {exc}") from None
    finally:
        progress.done()
    report.end = clock.now.isoformat()
    report.kept = [
        {"key": e.key, "score": s, "state": state(e, s, mem, clock.now), "preview": preview(e.value)}
        for e, s in mem.scored()
    ]
    report.summarized = list(summarized)
    return report


def _check_field(name: str, data: Any) -> None:
    """Refuse a field nested deeper than :data:`MAX_DEPTH`, or holding a number too large
    for a float (``1e400`` reads as ``inf``, which the ``--json`` report cannot hold)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise CLIError(f"{name}: must be finite, got a number too large for a float")
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise CLIError(f"{name}: nested deeper than {MAX_DEPTH} levels")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def _not_json(name: str) -> Any:
    """Refuse ``NaN`` and ``Infinity``, which Python's ``json`` reads but JSON does not have:
    the report written with ``--json`` must be JSON too."""
    raise ValueError(f"{name} is not a JSON number")


def _replay(line: str, mem: Any, clock: ManualClock, report: SimulationReport, reason: list[str]) -> Any:
    """Apply one log line to ``mem``; returns the new memory."""
    try:
        event = json.loads(line, parse_constant=_not_json)
    except ValueError as exc:
        raise CLIError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise CLIError("not valid JSON: nested too deeply") from None
    if not isinstance(event, dict):
        raise CLIError(f"expected a JSON object, got a JSON {json_type(event)}")
    unknown = sorted(set(event) - EVENT_FIELDS)
    if unknown:
        raise CLIError(f"unknown field {unknown[0]!r}")
    op = event.get("op")
    if op not in OPS:
        raise CLIError(f"op: expected one of {', '.join(OPS)}, got {op!r}")
    fields = OP_FIELDS[op]
    misplaced = sorted(set(event) - fields - {"t", "op"})
    if misplaced:
        raise CLIError(f"{misplaced[0]}: not taken by op {op!r}")
    for name, data in event.items():
        _check_field(name, data)
    if "t" not in event:
        raise CLIError("t: missing")
    if report.start is None:
        # Seconds count from the first event's ISO time, or from 2026-01-01T00:00Z.
        first = event["t"]
        report.start = parse_time(first, "t") if isinstance(first, str) else _SIM_START
    when = _event_time(event["t"], report.start)
    if when < clock.now and report.events:
        raise CLIError(f"t: {when.isoformat()} is earlier than the previous event ({clock.now.isoformat()})")
    key = event.get("key")
    if key is not None and (isinstance(key, bool) or not isinstance(key, (str, int, float))):
        raise CLIError(f"key: expected a string or a number, got a JSON {json_type(key)}")
    if op != "put" and "key" in fields and key is None:
        raise CLIError(f"key: required for {op!r}")
    if "value" in fields and "value" not in event:
        raise CLIError(f"value: required for {op!r}")
    clock.set(when)
    report.events += 1
    report.ops[op] = report.ops.get(op, 0) + 1
    reason[0] = "capacity"
    if op == "put":
        return mem.put(
            event["value"],
            key=key,
            importance=event.get("importance", 1.0),
            pinned=event.get("pinned", False),
            metadata=event.get("metadata"),
        )
    if op in ("get", "touch"):
        importance = event.get("importance")
        return mem.get(key)[0] if importance is None else mem.touch(key, importance=importance)
    if op == "update":
        return mem.update(key, event["value"])
    if op == "pin":
        return mem.pin(key)
    if op == "unpin":
        return mem.unpin(key)
    if op == "delete":
        if key not in mem:
            raise KeyError(key)
        return mem.delete(key)
    reason[0] = "threshold"
    return mem.evict()[0]


def print_simulation(report: SimulationReport, out: TextIO, limit: int = 20) -> None:
    """``report`` as text: the counts, then what was kept, summarized and evicted (``limit`` lines each)."""
    w = printing(out)
    scale = "no half-life" if report.half_life is None else f"half-life {format_duration(report.half_life)}"
    w(f"replayed {report.events} events with {report.model}, {scale}, capacity {report.capacity}; ended {report.end}\n")
    ops = ", ".join(f"{op} {report.ops[op]}" for op in OPS if op in report.ops) or "none"
    w(f"ops: {ops}; misses (unknown key) {report.misses}; puts rejected (all pinned) {report.rejected}\n")
    w(
        f"kept {len(report.kept)} ({count_text(report.kept_states())}), "
        f"summarized {len(report.summarized)}, evicted {len(report.evicted)}\n"
    )

    def section(title: str, items: list[str]) -> None:
        w(f"\n{title} ({len(items)}):\n")
        for item in items[:limit]:
            w(f"  {item}\n")
        if len(items) > limit:
            w(f"  ... and {len(items) - limit} more (use --json for all)\n")

    kept = [f"{preview(k['key'], 16):<16} {k['score']:.3f}  {k['state']:<14} {k['preview']}" for k in report.kept]
    section("kept", kept)
    section("summarized", [preview(k, 40) for k in report.summarized])
    section("evicted", [f"{preview(e['key'], 16):<16} {e['reason']:<9} at {e['at']}" for e in report.evicted])
