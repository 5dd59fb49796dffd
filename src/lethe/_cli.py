"""The ``lethe`` command line: ``python -m lethe [demo | curves | inspect | simulate]``.

* ``demo`` (the default): a short demonstration with a simulated clock.
* ``curves``: the built-in decay curves as a terminal chart.
* ``inspect FILE.json``: a saved ``Memory.to_dict()`` as a table (or JSON).
* ``simulate LOG.jsonl``: replay a log of operations through a model and a capacity.

Bad input is reported in one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NoReturn, TextIO

from lethe._entry import Entry
from lethe._errors import ClockWarning
from lethe._memory import Memory


class _SimulatedClock:
    """A clock the demo moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def _table(mem: Memory[Any, Any], out: TextIO) -> None:
    for entry, score in mem.scored():
        flags = " pinned" if entry.pinned else ""
        summary = f"  summary: {entry.summary!r}" if entry.summary is not None else ""
        out.write(f"    {score:5.3f}  {entry.key!s:<10} {entry.value!s:<42}{flags}{summary}\n")


def demo(out: TextIO = sys.stdout) -> int:
    """Print a self-contained demonstration with a simulated clock."""
    clock = _SimulatedClock(datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc))
    evicted: list[Entry[Any, Any]] = []

    def summarize(entry: Entry[Any, Any]) -> str:
        # Where an agent would ask an LLM for a one-line summary.
        return str(entry.value).split(",")[0][:24] + "..."

    mem: Memory[str, str] = Memory(
        max_entries=4,
        half_life=timedelta(hours=1),
        summarize_fn=summarize,
        on_evict=evicted.extend,
        clock_fn=clock,
    )
    w = out.write
    w("lethe demo: a 4-entry memory, half-life 1 hour, simulated clock\n\n")
    mem = mem.put("AAPL price spiked to $195.50, volume 3x", key="spike")
    mem = mem.put("user asked for a weekly summary, Fridays", key="weekly")
    mem = mem.put("client X always pays late, chase early", key="client-x", pinned=True)
    mem = mem.put("deploy failed on node 7, disk full", key="deploy", importance=1.5)
    w("09:00  four entries put (client-x pinned, deploy with importance 1.5):\n")
    _table(mem, out)

    clock.advance(timedelta(hours=2))
    mem, _ = mem.get("weekly")
    w("\n11:00  two hours later; 'weekly' was rehearsed with get(), the others decayed:\n")
    _table(mem, out)

    clock.advance(timedelta(hours=1))
    w("\n12:00  one more hour; the pinned entry stays at 1.000:\n")
    _table(mem, out)

    mem = mem.put("new observation: latency p99 up 40%", key="latency")
    w("\n12:00  a fifth entry at capacity: the lowest-scored one is summarized and evicted:\n")
    _table(mem, out)
    for entry in evicted:
        w(f"    evicted {entry.key!r} with summary {entry.summary!r}\n")
    old = mem
    mem, _ = mem.get("deploy")
    w(
        "\nEvery write returned a new memory; older versions are unchanged: "
        f"'deploy' rehearsals before/after get(): {old.peek('deploy').access_count}/"
        f"{mem.peek('deploy').access_count}\n"
    )
    return 0



# -- shared helpers ----------------------------------------------------------


class CLIError(Exception):
    """A user error: reported as one line on stderr, exit status 2."""


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smhdw]?)\s*$", re.IGNORECASE)
_MAX_SECONDS = 100 * 365.25 * 86400.0


def parse_duration(text: str, name: str = "duration") -> float:
    """Seconds in ``text`` (``30s``, ``15m``, ``1h``, ``2d``, ``1w`` or plain seconds).

    Raises:
        CLIError: not a positive duration of at most 100 years.

    >>> parse_duration("90m"), parse_duration("2d"), parse_duration("45")
    (5400.0, 172800.0, 45.0)
    """
    match = _DURATION.match(text)
    if match is None:
        raise CLIError(f"{name}: expected a duration like 30s, 15m, 1h, 2d, 1w or seconds, got {text!r}")
    secs = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 0.0 < secs <= _MAX_SECONDS:
        raise CLIError(f"{name}: must be positive and at most 100 years, got {text!r}")
    return secs


def format_duration(secs: float) -> str:
    """``secs`` exactly, to the millisecond, in weeks, days, hours, minutes and seconds.

    Units from the largest to the smallest non-zero one are shown (trailing
    zero units are left out, so nothing is rounded away): ``90`` is ``1m30s``,
    ``3601`` is ``1h00m01s``.  Negative durations get a ``-``.

    >>> format_duration(90), format_duration(3900), format_duration(200000), format_duration(0.25)
    ('1m30s', '1h05m', '2d07h33m20s', '0.25s')
    """
    ms = round(abs(secs) * 1000)
    sign = "-" if secs < 0 and ms else ""
    whole, frac = divmod(ms, 1000)
    parts = [(whole // 604800, "w"), (whole % 604800 // 86400, "d"), (whole % 86400 // 3600, "h")]
    parts += [(whole % 3600 // 60, "m"), (whole % 60, "s")]
    first = next((i for i, (n, _) in enumerate(parts) if n), len(parts) - 1)
    last = 4 if frac else max((i for i, (n, _) in enumerate(parts) if n), default=4)
    out = []
    for i in range(first, last + 1):
        n, unit = parts[i]
        text = str(n) if i == first or unit in "wd" else f"{n:02d}"
        if unit == "s" and frac:
            text += f".{frac:03d}".rstrip("0")
        out.append(text + unit)
    return sign + "".join(out)


def parse_time(text: str, name: str = "time") -> datetime:
    """An ISO-8601 time with a UTC offset (``Z`` is accepted).

    Naive times are refused, as ``Memory`` refuses a naive clock: which zone
    they mean would be a guess.

    Raises:
        CLIError: not an ISO-8601 time, or one without a UTC offset.

    >>> parse_time("2026-01-01T12:00:00Z")
    datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)
    """
    raw = text.strip()
    if raw[-1:] in ("Z", "z"):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise CLIError(f"{name}: expected an ISO-8601 time like 2026-01-01T12:00:00Z, got {text!r}") from None
    if moment.utcoffset() is None:
        raise CLIError(f"{name}: {text!r} has no UTC offset; add Z or +HH:MM (for example 2026-01-01T12:00:00Z)")
    return moment


class _ArgumentParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Clock:
    """A clock the commands set by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Progress:
    """A progress line on stderr, shown only when stderr is a terminal.

    Updates are throttled to ten a second; :meth:`done` erases the line.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.total = max(total, 1)
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty is not None and isatty())
        self._last = 0.0
        self._shown = False

    def update(self, done: int) -> None:
        """Report that ``done`` of ``total`` steps are finished."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        pct = 100.0 * done / self.total
        self.stream.write(f"\r{self.label}: {done}/{self.total} ({pct:3.0f}%)")
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        """Erase the progress line, if one was shown."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def _models() -> dict[str, Callable[..., Any]]:
    """Built-in decay models by name, aliases of an already listed class left out."""
    from lethe.decay import BUILTINS

    seen: set[int] = set()
    out: dict[str, Callable[..., Any]] = {}
    for name, cls in BUILTINS.items():
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        out[name] = cls
    return out


def _build_model(name: str, half_life: float) -> Any:
    """The built-in decay function ``name`` for ``half_life`` (CLIError if unknown or invalid)."""
    from lethe.decay import by_name

    try:
        return by_name(name, half_life)
    except (TypeError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def _uses_half_life(name: str, half_life: float) -> bool:
    """Whether the built-in ``name`` is built from ``half_life`` (``fsrs`` has its own time scale)."""
    from lethe.decay import by_name

    return bool(by_name(name, half_life) != by_name(name, 2.0 * half_life))


def _half_life_of(mem: Any) -> float | None:
    """The memory's half-life if its decay function is the built-in made from it, else None."""
    from lethe.decay import BUILTINS, by_name

    name = getattr(mem.decay_fn, "name", None)
    if not isinstance(name, str) or name not in BUILTINS or not _uses_half_life(name, mem.half_life):
        return None
    return float(mem.half_life) if by_name(name, mem.half_life) == mem.decay_fn else None


def _preview(value: Any, width: int = 28) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# -- curves ------------------------------------------------------------------

_MARKERS = "●■▲◆★✚✖◉"
_COLORS = ("31", "32", "34", "35", "36", "33", "91", "94")
# Braille dot bits for (column 0..1, row 0..3) inside one character cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def curve_points(model: Any, half_life: float, span: float, samples: int) -> list[float]:
    """Scores of a once-inserted, never-rehearsed entry at ``samples`` evenly spaced times in 0..span."""
    from lethe._memory import Memory

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = _Clock(start)
    empty: Memory[str, str] = Memory(decay_fn=model, clock_fn=clock)  # model is built with half_life
    mem = empty.put("x", key="x")
    out = []
    for i in range(samples):
        clock.now = start + timedelta(seconds=span * i / max(samples - 1, 1))
        out.append(mem.score("x"))
    return out


def render_curves(
    curves: Mapping[str, Sequence[float]], span: float, *, width: int = 80, height: int = 16, color: bool = False
) -> list[str]:
    """A braille chart of ``curves`` (scores 0..1 over 0..span seconds), lines of at most ``width`` columns.

    Each curve is marked with its legend symbol at a point along it; with
    ``color`` the curves are drawn in ANSI colors.
    """
    label_w = 5  # "1.00 "
    cols = width - label_w - 2
    rows = height
    cells: list[list[int]] = [[0] * cols for _ in range(rows)]
    owner: list[list[int]] = [[-1] * cols for _ in range(rows)]
    marks: dict[tuple[int, int], int] = {}
    dots_y = rows * 4 - 1
    for ci, ys in enumerate(curves.values()):
        n = len(ys)
        prev: int | None = None
        for x in range(cols * 2):
            v = ys[min(n - 1, round(x * (n - 1) / max(cols * 2 - 1, 1)))]
            y = dots_y - round(min(max(v, 0.0), 1.0) * dots_y)
            # Fill the gap from the previous point so steep drops stay connected.
            low, high = (y, y) if prev is None else (min(y, prev + 1), max(y, prev - 1))
            for yy in range(low, high + 1):
                r, c = yy // 4, x // 2
                cells[r][c] |= _DOTS[x % 2][yy % 4]
                owner[r][c] = ci if owner[r][c] in (-1, ci) else -2
            prev = y
        # The legend marker, staggered so markers do not collide.
        mx = int(cols * (ci + 1) / (len(curves) + 1))
        v = ys[min(n - 1, round(2 * mx * (n - 1) / max(cols * 2 - 1, 1)))]
        marks[((dots_y - round(min(max(v, 0.0), 1.0) * dots_y)) // 4, mx)] = ci
    lines: list[str] = []
    ticks_at = {(dots_y - round(v * dots_y)) // 4: v for v in (1.0, 0.75, 0.5, 0.25, 0.0)}
    for r in range(rows):
        label = f"{ticks_at[r]:4.2f} ┤" if r in ticks_at else "     │"
        chars: list[str] = []
        for c in range(cols):
            if (r, c) in marks:
                ch, ci = _MARKERS[marks[(r, c)] % len(_MARKERS)], marks[(r, c)]
            else:
                ch = chr(0x2800 + cells[r][c]) if cells[r][c] else " "
                ci = owner[r][c]
            if color and ci >= 0 and ch != " ":
                ch = f"\x1b[{_COLORS[ci % len(_COLORS)]}m{ch}\x1b[0m"
            chars.append(ch)
        lines.append(label + "".join(chars))
    axis = "     └" + "─" * cols
    lines.append(axis)
    ticks = [" "] * (cols + 6)
    for k in range(5):
        text = "0" if k == 0 else format_duration(span * k / 4)
        pos = 6 + round((cols - 1) * k / 4)
        pos = min(pos, len(ticks) - len(text))
        ticks[pos : pos + len(text)] = list(text)
    lines.append("".join(ticks).rstrip())
    for ci, name in enumerate(curves):
        sym = _MARKERS[ci % len(_MARKERS)]
        if color:
            sym = f"\x1b[{_COLORS[ci % len(_COLORS)]}m{sym}\x1b[0m"
        lines.append(f"  {sym} {name}")
    return lines


def curves(models: Sequence[str] | None, half_life: str, span: str, out: TextIO = sys.stdout) -> int:
    """Draw the decay curves of ``models`` (default: every built-in) as a terminal chart."""
    hl = parse_duration(half_life, "--half-life")
    sp = parse_duration(span, "--span")
    names = list(models) if models else list(_models())
    built = {name: _build_model(name, hl) for name in dict.fromkeys(names)}
    data = {name: curve_points(model, hl, sp, 160) for name, model in built.items()}
    isatty = getattr(out, "isatty", None)
    color = bool(isatty is not None and isatty())
    without = [name for name in built if not _uses_half_life(name, hl)]
    scale = "no half-life" if len(without) == len(built) else f"half-life {format_duration(hl)}"
    out.write(f"score of an entry put at 0 and never rehearsed; {scale}\n")
    if without:
        out.write(f"({', '.join(without)}: no half-life, a time scale of its own)\n")
    for line in render_curves(data, sp, color=color):
        out.write(line + "\n")
    out.write("  (time since put →, score ↑; importance 1)\n")
    return 0


# -- inspect -----------------------------------------------------------------

#: Every state ``inspect`` and ``simulate`` label an entry with, in the order they are counted.
STATES = ("pinned", "active", "fading", "summarized", "below eviction", "expired", "unscored")


def _unscored(entry: Entry[Any, Any], now: datetime) -> float:
    """The stand-in for a saved custom decay function: ``inspect`` never scores with it."""
    raise RuntimeError("scores are unavailable: the memory was saved with a custom decay function")


@dataclass
class Loaded:
    """A memory read by ``lethe inspect``, and where its scores come from."""

    memory: Any
    scored: bool
    scores: str
    decay_fn: Any


def _load(path: str, clock: _Clock, model: str | None = None) -> Loaded:
    """The memory saved in ``path`` (CLIError with one line for every kind of bad file).

    A memory saved with a custom decay function is loaded unscored unless
    ``model`` names a built-in to score it with.
    """
    from lethe._memory import Memory
    from lethe.decay import BUILTINS

    if model is not None and model not in BUILTINS:
        raise CLIError(f"--model: unknown decay function {model!r}; choose one of {sorted(BUILTINS)}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CLIError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CLIError(f"{path}: expected a JSON object saved by Memory.to_dict(), got a JSON {_json_type(data)}")
    saved: Any = data.get("decay_fn")
    custom = isinstance(saved, dict) and saved.get("name") == "custom"
    saved_repr = f"a custom decay function ({saved.get('repr', '?')!s:.60})" if custom else "its saved decay function"
    if model is not None:
        decay_fn: Any = model
        scores = f"scored with --model {model} (built from the saved half_life), not {saved_repr}"
    elif custom:
        decay_fn = _unscored
        scores = f"unavailable: saved with {saved_repr}; pass --model NAME to score with a built-in model"
    else:
        decay_fn, scores = None, "scored with its saved decay function"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ClockWarning)
            mem = Memory.from_dict(data, clock_fn=clock, decay_fn=decay_fn)
    except Exception as exc:
        raise CLIError(f"{path}: not a saved memory: {exc}") from None
    for warning in caught:
        if issubclass(warning.category, ClockWarning):  # one plain line, not a Python warning
            print(f"note: {path}: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    shown = saved if decay_fn is _unscored else getattr(mem.decay_fn, "to_dict", lambda: {"name": "?"})()
    return Loaded(memory=mem, scored=decay_fn is not _unscored, scores=scores, decay_fn=shown)


def _json_type(data: Any) -> str:
    names = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
    return names.get(type(data), type(data).__name__)


def _after(mem: Any, key: Any, threshold: float, at: datetime) -> float | None:
    """Seconds after ``at`` when the entry first scores below ``threshold`` (``Memory.time_until``).

    0.0 when it already does; None when it never will, or not before the
    largest representable time (``datetime.max``).
    """
    try:
        if key not in mem:  # past its deadline: gone already
            return 0.0
        wait = mem.time_until(key, threshold)
        if wait is None:
            return None
        _ = at + wait  # past datetime.max: OverflowError
    except OverflowError:
        return None
    seconds: float = wait.total_seconds()
    return seconds


def _next_eviction(mem: Any) -> datetime | None:
    """``Memory.next_eviction()``, None when it lies beyond the representable time."""
    try:
        when: datetime | None = mem.next_eviction()
    except OverflowError:
        return None
    return when


@dataclass
class Row:
    """One entry of ``lethe inspect``; ``score`` and the forecasts are None when unavailable."""

    key: Any
    score: float | None
    state: str
    age: float
    last_access: float
    access_count: int
    importance: float
    preview: str
    value: Any
    summary: Any
    summarize_in: float | None
    evict_in: float | None
    extra: dict[str, Any] = field(default_factory=dict)


def _state(entry: Any, score: float | None, mem: Any, at: datetime) -> str:
    """The entry's state at ``at`` (one of :data:`STATES`).

    ``expired`` (past its deadline), ``pinned``, ``below eviction`` (the next
    ``evict()`` removes it), ``summarized`` (``summarize_fn`` has run on its
    current value: ``Entry.summarized``), ``fading`` (below
    ``summarize_threshold``, not summarized yet), ``active``; ``unscored`` when
    scores are unavailable and none of the others is known.
    """
    if entry.expires_at is not None and entry.expires_at <= at:
        return "expired"
    if entry.pinned:
        return "pinned"
    if score is not None and score < mem.eviction_threshold:
        return "below eviction"
    if entry.summarized:
        return "summarized"
    if score is None:
        return "unscored"
    if score < mem.summarize_threshold:
        return "fading"
    return "active"


def _counts(states: Sequence[str]) -> dict[str, int]:
    """How many of ``states`` are each state, in the order of :data:`STATES`, zeros left out."""
    return {s: n for s in STATES if (n := states.count(s))}


def inspect_rows(
    mem: Any, clock: _Clock, at: datetime, sort: str = "score", top: int | None = None, scored: bool = True
) -> tuple[list[Row], dict[str, int]]:
    """The rows of ``lethe inspect`` for ``mem`` at ``at``, sorted and cut to ``top``, and every entry's state counts.

    Without scores (``scored=False``) the ``score`` order is pinned first, then the latest put first.
    """
    clock.now = at
    pairs: list[tuple[Any, float | None]]
    if scored:
        pairs = list(mem.scored())
    else:
        keys = mem.keys()  # not iter(mem): that ranks by score
        entries = sorted((mem.peek(k) for k in keys), key=lambda e: (e.pinned, e.seq), reverse=True)
        pairs = [(e, None) for e in entries]
    # Entries past their deadline are gone for every read, but the file still holds them
    # (the next write would remove and report them): listed last, as expired.
    gone = sorted((e for e in mem._entries.values() if e.key not in mem), key=lambda e: e.seq, reverse=True)
    pairs += [(e, 0.0 if scored else None) for e in gone]
    states = [_state(entry, score, mem, at) for entry, score in pairs]
    counts = _counts(states)
    order = list(range(len(pairs)))
    if sort == "age":
        order.sort(key=lambda i: (pairs[i][0].inserted_at, pairs[i][0].seq))
    elif sort == "key":
        order.sort(key=lambda i: (type(pairs[i][0].key).__name__, str(pairs[i][0].key)))
    if top is not None:
        order = order[:top]
    progress = Progress("inspect", len(order))
    rows = []
    try:
        for n, i in enumerate(order):
            progress.update(n)
            entry, score = pairs[i]
            rows.append(
                Row(
                    key=entry.key,
                    score=score,
                    state=states[i],
                    age=(at - entry.inserted_at).total_seconds(),
                    last_access=(at - entry.last_accessed_at).total_seconds(),
                    access_count=entry.access_count,
                    importance=entry.importance,
                    preview=_preview(entry.value),
                    value=entry.value,
                    summary=entry.summary,
                    summarize_in=_after(mem, entry.key, mem.summarize_threshold, at) if scored else None,
                    evict_in=_after(mem, entry.key, mem.eviction_threshold, at) if scored else None,
                )
            )
    finally:
        progress.done()
    return rows, counts


def _when(after: float | None, scored: bool = True) -> str:
    if not scored:
        return "unavailable"
    if after is None:
        return "never"
    if after == 0.0:
        return "now"
    return "in " + format_duration(after)


def _iso(at: datetime, after: float | None) -> str | None:
    return None if after is None else (at + timedelta(seconds=after)).isoformat()


def _count_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {state}" for state, n in counts.items()) or "none"


def inspect(
    path: str,
    at: str | None = None,
    top: int | None = None,
    sort: str = "score",
    as_json: bool = False,
    out: TextIO = sys.stdout,
    model: str | None = None,
) -> int:
    """Print the entries of a saved memory with their scores, states, summaries and threshold crossings."""
    moment = datetime.now(timezone.utc) if at is None else parse_time(at, "--at")
    if top is not None and top < 0:
        raise CLIError(f"--top: must be >= 0, got {top}")
    clock = _Clock(moment)
    loaded = _load(path, clock, model)
    mem = loaded.memory
    rows, counts = inspect_rows(mem, clock, moment, sort, top, loaded.scored)
    half_life = _half_life_of(mem) if loaded.scored else None
    clock.now = moment
    upcoming = _next_eviction(mem) if loaded.scored else None
    expired = counts.get("expired", 0)  # gone for every read, still in the file
    held = f"{len(mem)}/{mem.max_entries} entries" + (f" (+{expired} expired, still in the file)" if expired else "")
    if as_json:
        doc = {
            "file": path,
            "at": moment.isoformat(),
            "size": len(mem),
            "expired": expired,
            "max_entries": mem.max_entries,
            "decay_fn": loaded.decay_fn,
            "scores": loaded.scores,
            "half_life": half_life,
            "summarize_threshold": mem.summarize_threshold,
            "eviction_threshold": mem.eviction_threshold,
            "next_eviction": None if upcoming is None else upcoming.isoformat(),
            "counts": counts,
            "entries": [
                {
                    "key": r.key,
                    "score": r.score,
                    "state": r.state,
                    "age_seconds": r.age,
                    "last_access_seconds_ago": r.last_access,
                    "access_count": r.access_count,
                    "importance": r.importance,
                    "preview": r.preview,
                    "value": r.value,
                    "summary": r.summary,
                    "summarize_in_seconds": r.summarize_in,
                    "summarize_at": _iso(moment, r.summarize_in),
                    "evict_in_seconds": r.evict_in,
                    "evict_at": _iso(moment, r.evict_in),
                }
                for r in rows
            ],
        }
        out.write(json.dumps(doc, indent=2, default=repr, ensure_ascii=False) + "\n")
        return 0
    w = out.write
    if loaded.scored:
        model_text = repr(mem.decay_fn)
    else:
        model_text = f"custom decay function {loaded.decay_fn.get('repr', '?')!s:.60}"
    next_text = "unavailable" if not loaded.scored else "never" if upcoming is None else upcoming.isoformat()
    w(
        f"{path}: {held}, {model_text}, at {moment.isoformat()}\n"
        f"scores: {loaded.scores}; "
        + (f"half-life {format_duration(half_life)}\n" if half_life is not None else "no half-life\n")
        + f"thresholds: summarize < {mem.summarize_threshold:g}, evict < {mem.eviction_threshold:g}; "
        f"next eviction: {next_text}\n"
        f"states: {_count_text(counts)}\n\n"
    )
    header = ("key", "score", "state", "age", "accessed", "n", "imp", "summarize", "evict", "value", "summary")
    table = [
        (
            _preview(r.key, 14),
            "n/a" if r.score is None else f"{r.score:.3f}",
            r.state,
            format_duration(r.age),
            format_duration(r.last_access) + " ago",
            str(r.access_count),
            f"{r.importance:g}",
            _when(r.summarize_in, loaded.scored),
            _when(r.evict_in, loaded.scored),
            r.preview,
            "-" if r.summary is None else _preview(r.summary, 40),
        )
        for r in rows
    ]
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(header)]
    for cells in [header, *table]:
        w("  ".join(c.ljust(widths[i]) if i < len(cells) - 1 else c for i, c in enumerate(cells)) + "\n")
    if not rows:
        w("(no entries)\n")
    return 0


# -- simulate ----------------------------------------------------------------

_OPS = ("put", "get", "touch", "update", "pin", "unpin", "delete", "evict")
_KEYED = frozenset(_OPS) - {"put", "evict"}
_EVENT_FIELDS = frozenset({"t", "op", "key", "value", "importance", "pinned", "metadata"})
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
        return _counts([k["state"] for k in self.kept])

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON types."""
        return {
            "model": self.model,
            "half_life": self.half_life,
            "capacity": self.capacity,
            "events": self.events,
            "ops": self.ops,
            "misses": self.misses,
            "rejected": self.rejected,
            "start": None if self.start is None else self.start.isoformat(),
            "end": self.end,
            "counts": {
                "kept": len(self.kept),
                "kept_states": self.kept_states(),
                "summarized": len(self.summarized),
                "evicted": len(self.evicted),
            },
            "kept": self.kept,
            "summarized": self.summarized,
            "evicted": self.evicted,
        }


def _event_time(raw: Any, start: datetime) -> datetime:
    if isinstance(raw, bool):
        raise CLIError("t: expected an ISO time or seconds since start, got a boolean")
    if isinstance(raw, (int, float)):
        if not math.isfinite(raw) or raw < 0 or raw > _MAX_SECONDS * 10:
            raise CLIError(f"t: seconds since start must be finite and >= 0, got {raw!r}")
        try:
            return start + timedelta(seconds=raw)
        except OverflowError:
            raise CLIError(f"t: {raw!r} seconds after {start.isoformat()} is past the year 9999") from None
    if isinstance(raw, str):
        return parse_time(raw, "t")
    raise CLIError(f"t: expected an ISO time or seconds since start, got {_json_type(raw)}")


def _lines(path: str) -> Iterator[tuple[int, str]]:
    try:
        with open(path, encoding="utf-8") as fh:
            yield from enumerate(fh, start=1)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot read: {exc}") from None


def simulate(path: str, model: str = "exponential", half_life: str = "1h", capacity: int = 100) -> SimulationReport:
    """Replay the JSON-lines log at ``path`` through ``model`` with ``capacity`` entries.

    Raises:
        CLIError: a bad option, an unreadable file or a bad line (named by number).
    """
    from lethe._errors import MemoryFullError
    from lethe._memory import Memory

    hl = parse_duration(half_life, "--half-life")
    if capacity < 1:
        raise CLIError(f"--capacity: must be >= 1, got {capacity}")
    fn = _build_model(model, hl)
    report = SimulationReport(model=model, half_life=hl if _uses_half_life(model, hl) else None, capacity=capacity)
    clock = _Clock(_SIM_START)
    summarized: dict[Any, None] = {}
    reason = ["capacity"]

    def summarize(entry: Entry[Any, Any]) -> str:
        # A stand-in for an LLM summary; it records which entries were summarized.
        summarized[entry.key] = None
        return "summary: " + _preview(entry.value, 40)

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
        for lineno, line in _lines(path):
            done_bytes += len(line.encode("utf-8"))
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
        {"key": e.key, "score": s, "state": _state(e, s, mem, clock.now), "preview": _preview(e.value)}
        for e, s in mem.scored()
    ]
    report.summarized = list(summarized)
    return report


def _replay(line: str, mem: Any, clock: _Clock, report: SimulationReport, reason: list[str]) -> Any:
    """Apply one log line to ``mem``; returns the new memory."""
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise CLIError(f"not valid JSON: {exc}") from None
    if not isinstance(event, dict):
        raise CLIError(f"expected a JSON object, got a JSON {_json_type(event)}")
    unknown = sorted(set(event) - _EVENT_FIELDS)
    if unknown:
        raise CLIError(f"unknown field {unknown[0]!r}")
    op = event.get("op")
    if op not in _OPS:
        raise CLIError(f"op: expected one of {', '.join(_OPS)}, got {op!r}")
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
        raise CLIError(f"key: expected a string or a number, got a JSON {_json_type(key)}")
    if op in _KEYED and key is None:
        raise CLIError(f"key: required for {op!r}")
    if op in ("put", "update") and "value" not in event:
        raise CLIError(f"value: required for {op!r}")
    clock.now = when
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


def _print_simulation(report: SimulationReport, out: TextIO, limit: int = 20) -> None:
    w = out.write
    scale = "no half-life" if report.half_life is None else f"half-life {format_duration(report.half_life)}"
    w(f"replayed {report.events} events with {report.model}, {scale}, capacity {report.capacity}; ended {report.end}\n")
    ops = ", ".join(f"{op} {report.ops[op]}" for op in _OPS if op in report.ops) or "none"
    w(f"ops: {ops}; misses (unknown key) {report.misses}; puts rejected (all pinned) {report.rejected}\n")
    w(
        f"kept {len(report.kept)} ({_count_text(report.kept_states())}), "
        f"summarized {len(report.summarized)}, evicted {len(report.evicted)}\n"
    )

    def section(title: str, items: list[str]) -> None:
        w(f"\n{title} ({len(items)}):\n")
        for item in items[:limit]:
            w(f"  {item}\n")
        if len(items) > limit:
            w(f"  ... and {len(items) - limit} more (use --json for all)\n")

    kept = [f"{_preview(k['key'], 16):<16} {k['score']:.3f}  {k['state']:<14} {k['preview']}" for k in report.kept]
    section("kept", kept)
    section("summarized", [_preview(k, 40) for k in report.summarized])
    section("evicted", [f"{_preview(e['key'], 16):<16} {e['reason']:<9} at {e['at']}" for e in report.evicted])


# -- entry point ---------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``python -m lethe``."""
    parser = _ArgumentParser(prog="lethe", description="Immutable memory with decay.")
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)
    sub.add_parser("demo", help="a short demonstration with a simulated clock (the default)")
    c = sub.add_parser("curves", help="draw the decay curves of the built-in models")
    c.add_argument("--model", action="append", metavar="NAME", help="a model to draw (repeatable; default: all)")
    c.add_argument("--half-life", default="1h", help="half-life, e.g. 30s, 15m, 1h, 2d, 1w (default 1h)")
    c.add_argument("--span", default="24h", help="time shown on the x axis (default 24h)")
    i = sub.add_parser("inspect", help="show the entries of a saved Memory.to_dict() JSON file")
    i.add_argument("file", metavar="FILE.json")
    i.add_argument("--at", metavar="ISO-TIME", help="the moment to score at (default: now)")
    i.add_argument("--top", type=int, metavar="N", help="show only the first N entries")
    i.add_argument("--sort", choices=("score", "age", "key"), default="score")
    i.add_argument("--json", action="store_true", help="print machine-readable JSON")
    i.add_argument(
        "--model",
        metavar="NAME",
        help="score with this built-in model (built from the saved half_life) instead of the saved one; "
        "needed for scores of a memory saved with a custom decay function",
    )
    s = sub.add_parser(
        "simulate",
        help="replay a JSON-lines log of operations",
        description="Replay a JSON-lines log of operations through a decay model and a capacity,\n"
        "and report what was kept, summarized and evicted.",
        epilog=SIMULATE_LOG_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("log", metavar="LOG.jsonl")
    s.add_argument("--model", default="exponential", metavar="NAME", help="a built-in decay model")
    s.add_argument("--half-life", default="1h")
    s.add_argument("--capacity", type=int, default=100, metavar="N", help="max_entries (default 100)")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.command in (None, "demo"):
            return demo()
        if args.command == "curves":
            return curves(args.model, args.half_life, args.span)
        if args.command == "inspect":
            return inspect(args.file, args.at, args.top, args.sort, args.json, model=args.model)
        if args.command == "simulate":
            report = simulate(args.log, args.model, args.half_life, args.capacity)
            if args.json:
                sys.stdout.write(json.dumps(report.to_dict(), indent=2, default=repr, ensure_ascii=False) + "\n")
            else:
                _print_simulation(report, sys.stdout)
            return 0
    except CLIError as exc:
        sys.stderr.write(f"lethe {args.command}: error: {exc}\n")
        return 2
    return 2  # pragma: no cover - argparse rejects unknown commands first
