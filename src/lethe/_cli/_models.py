"""The built-in decay models as the commands name, build and describe them (``--model``, ``--half-life``)."""

from __future__ import annotations

from typing import Any

from lethe._cli._format import CLIError
from lethe.decay import BUILTINS, by_name


def distinct_models() -> list[str]:
    """Built-in decay model names, aliases of an already listed class left out."""
    seen: set[int] = set()
    out: list[str] = []
    for name, cls in BUILTINS.items():
        if id(cls) not in seen:
            seen.add(id(cls))
            out.append(name)
    return out


def build_model(name: str, half_life: float) -> Any:
    """The built-in decay function ``name`` for ``half_life``.

    Raises:
        CLIError: naming ``--model`` (not a built-in) or ``--half-life`` (one the model
            cannot be built from).
    """
    if name not in BUILTINS:
        raise CLIError(f"--model: unknown decay model {name!r}; choose one of {sorted(BUILTINS)}")
    try:
        return by_name(name, half_life)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--half-life: {str(exc).removeprefix('half_life: ')}") from None


def uses_half_life(name: str, half_life: float) -> bool:
    """Whether the built-in ``name`` is built from ``half_life`` (``fsrs`` has its own time scale)."""
    return bool(by_name(name, half_life) != by_name(name, 2.0 * half_life))


def half_life_of(mem: Any) -> float | None:
    """The memory's half-life if its decay function is the built-in made from it, else None."""
    name = getattr(mem.decay_fn, "name", None)
    if not isinstance(name, str) or name not in BUILTINS or not uses_half_life(name, mem.half_life):
        return None
    return float(mem.half_life) if by_name(name, mem.half_life) == mem.decay_fn else None
