"""Text in and out for every command: durations, times, previews, tables, JSON, files and the progress line.

Also :class:`CLIError`, the user error each command reports as one line on
stderr with exit status 2.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO


class CLIError(Exception):
    """A user error: reported as one line on stderr, exit status 2."""


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smhdw]?)\s*$", re.IGNORECASE)
#: The longest duration an option takes: 100 years, in seconds.
MAX_SECONDS = 100 * 365.25 * 86400.0


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
    if not 0.0 < secs <= MAX_SECONDS:
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
    """An ISO-8601 time with a UTC offset (``Z`` is accepted), within the range of ``datetime`` in UTC.

    Naive times are refused, as ``Memory`` refuses a naive clock: which zone
    they mean would be a guess.

    Raises:
        CLIError: not an ISO-8601 time, one without a UTC offset, or one
            outside the years 1 to 9999 in UTC.

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
    try:
        moment.astimezone(timezone.utc)
    except OverflowError:
        raise CLIError(f"{name}: {text!r} is outside the years 1 to 9999 in UTC") from None
    return moment


def preview(value: Any, width: int = 28) -> str:
    """``value`` (a string as it is, anything else as JSON) on one line of at most ``width``
    characters, printable (see :func:`printable`)."""
    text = value if isinstance(value, str) else json.dumps(value, default=repr, ensure_ascii=False)
    text = printable(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


#: The control characters a terminal acts on (C0 but the newline, DEL, C1), each as its escape.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x0A}


def printable(text: str) -> str:
    """``text`` with its control characters escaped (``\\x1b``): text from a file or a store
    is shown, never acted on (an escape sequence would recolour the terminal, or retitle it).

    >>> printable("red\\x1b[31m!")
    'red\\\\x1b[31m!'
    """
    return text.translate(_CONTROLS)


def printing(out: TextIO) -> Callable[[str], None]:
    """A function writing text from a file or a store to ``out``, made :func:`printable`."""

    def write(text: str) -> None:
        out.write(printable(text))

    return write


def json_type(data: Any) -> str:
    """The JSON name of the type of ``data`` (a value ``json.loads`` returned)."""
    names = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
    return names.get(type(data), type(data).__name__)


def write_json(doc: Any, out: TextIO) -> None:
    """``doc`` as indented JSON on ``out`` (anything JSON has no type for as its repr)."""
    out.write(json.dumps(doc, indent=2, default=repr, ensure_ascii=False) + "\n")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """``header`` and ``rows`` as lines of left-aligned columns two spaces apart (the last column unpadded)."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(header)]
    last = len(header) - 1
    return ["  ".join(c if i == last else c.ljust(widths[i]) for i, c in enumerate(row)) for row in [header, *rows]]


def read_lines(path: str, errors: str = "strict") -> Iterator[str]:
    """The lines of the UTF-8 text file at ``path``, read as they are needed; ``errors``:
    what a byte that is not UTF-8 does, as ``open`` takes it (``"surrogateescape"``: it
    comes as an escape, for the caller to name its line).

    Raises:
        CLIError: no such file, or it cannot be read or decoded.
    """
    try:
        with open(path, encoding="utf-8", errors=errors) as fh:
            yield from fh
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot read: {exc}") from None


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a stream without ``isatty`` is not)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Progress:
    """A progress line on stderr, shown only when stderr is a terminal.

    Updates are throttled to ten a second; :meth:`done` erases the line.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.total = max(total, 1)
        self.enabled = is_terminal(self.stream)
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
