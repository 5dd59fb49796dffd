"""The terminal chart ``lethe curves`` draws: score curves in braille dots, with axes, ticks and a legend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lethe._cli._format import format_duration

#: The legend symbols, one a curve (repeating after eight curves).
MARKERS = "●■▲◆★✚✖◉"
_COLORS = ("31", "32", "34", "35", "36", "33", "91", "94")
# Braille dot bits for (column 0..1, row 0..3) inside one character cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def _colored(text: str, curve: int) -> str:
    return f"\x1b[{_COLORS[curve % len(_COLORS)]}m{text}\x1b[0m"


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

    def dot_row(v: float) -> int:
        return dots_y - round(min(max(v, 0.0), 1.0) * dots_y)

    for ci, ys in enumerate(curves.values()):
        n = len(ys)
        prev: int | None = None
        for x in range(cols * 2):
            y = dot_row(ys[min(n - 1, round(x * (n - 1) / max(cols * 2 - 1, 1)))])
            # Fill the gap from the previous point so steep drops stay connected.
            low, high = (y, y) if prev is None else (min(y, prev + 1), max(y, prev - 1))
            for yy in range(low, high + 1):
                r, c = yy // 4, x // 2
                cells[r][c] |= _DOTS[x % 2][yy % 4]
                owner[r][c] = ci if owner[r][c] in (-1, ci) else -2
            prev = y
        # The legend marker, staggered so markers do not collide.
        mx = int(cols * (ci + 1) / (len(curves) + 1))
        marks[(dot_row(ys[min(n - 1, round(2 * mx * (n - 1) / max(cols * 2 - 1, 1)))]) // 4, mx)] = ci
    lines: list[str] = []
    ticks_at = {dot_row(v) // 4: v for v in (1.0, 0.75, 0.5, 0.25, 0.0)}
    for r in range(rows):
        label = f"{ticks_at[r]:4.2f} ┤" if r in ticks_at else "     │"
        chars: list[str] = []
        for c in range(cols):
            if (r, c) in marks:
                ch, ci = MARKERS[marks[(r, c)] % len(MARKERS)], marks[(r, c)]
            else:
                ch = chr(0x2800 + cells[r][c]) if cells[r][c] else " "
                ci = owner[r][c]
            chars.append(_colored(ch, ci) if color and ci >= 0 and ch != " " else ch)
        lines.append(label + "".join(chars))
    lines.append("     └" + "─" * cols)
    ticks = [" "] * (cols + 6)
    for k in range(5):
        text = "0" if k == 0 else format_duration(span * k / 4)
        pos = min(6 + round((cols - 1) * k / 4), len(ticks) - len(text))
        ticks[pos : pos + len(text)] = list(text)
    lines.append("".join(ticks).rstrip())
    for ci, name in enumerate(curves):
        sym = MARKERS[ci % len(MARKERS)]
        lines.append(f"  {_colored(sym, ci) if color else sym} {name}")
    return lines
