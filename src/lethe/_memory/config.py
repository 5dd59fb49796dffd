"""A memory's configuration: checked once when a memory is built, shared by every version after.

:class:`Config` holds what the caller chose (the constructor's fields) and
what follows from it: the scorer that calls the decay function and the empty
ranking strategy (an index when the decay function allows one, else a scan:
:func:`lethe.ranking.choose`).
Every version of a memory made by a write carries the same ``Config`` object;
only :func:`build` makes a new one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from lethe._core.clock import from_us
from lethe._core.entry import Entry
from lethe._core.validate import duration, hook, integer, unit
from lethe.decay._adapter import CUSTOM, is_builtin, name_of
from lethe.decay._adapter import to_dict as decay_to_dict
from lethe.decay._registry import BUILTINS, by_name, from_dict
from lethe.decay._scorer import Scorer, make_scorer
from lethe.ranking import Ranking, choose
from lethe.search._index import Index

#: The fields a document (``to_dict``) and a store keep, in the order they are declared and saved.
STORED = ("max_entries", "decay_fn", "half_life", "eviction_threshold", "summarize_threshold")
#: The hooks: the process's own, never stored (each process passes its own).
HOOKS = ("summarize_fn", "on_evict", "clock_fn", "embed_fn")
#: The constructor's fields, in the order they are declared and shown.
FIELDS = STORED + HOOKS
MAX_ENTRIES = 2**63 - 1  # what any store can count
_MISSING: Any = object()


@dataclass(frozen=True, slots=True, eq=False)
class Config:
    """A validated configuration: the constructor's fields plus the scorer and ranking they imply."""

    max_entries: int
    decay_fn: Any
    half_life: float
    eviction_threshold: float
    summarize_threshold: float
    summarize_fn: Any
    on_evict: Any
    clock_fn: Any
    embed_fn: Any
    scorer: Scorer
    #: The ranking of an empty memory under this decay function.
    ranking: Ranking
    #: Whether the memory built ``decay_fn`` from a name (it then follows a new half-life);
    #: not a constructor field, so not part of equality.
    named: bool = False
    #: The search index every version under this configuration (and its copies with other
    #: hooks) shares: a cache of what the entries hold, never part of a version's value.
    index: Index = field(default_factory=Index, repr=False)

    def fields(self) -> dict[str, Any]:
        """The constructor's fields, as ``Memory(**fields)`` takes them."""
        return {name: getattr(self, name) for name in FIELDS}

    def changed(self, changes: dict[str, Any]) -> dict[str, Any]:
        """:meth:`fields` with ``changes`` (``Memory.configure``).

        Raises:
            TypeError: a change names no field (naming it).
        """
        unknown = set(changes) - set(FIELDS)
        if unknown:
            raise TypeError(f"unknown configuration field(s): {sorted(unknown)}")
        return {**self.fields(), **changes}

    def rebuild_fields(self) -> dict[str, Any]:
        """:meth:`fields`, but a decay function built from a name given as that name:
        ``build`` of them makes an equal configuration, named as this one is (pickling)."""
        fields = self.fields()
        if self.named:
            fields["decay_fn"] = name_of(self.decay_fn)
        return fields

    def to_document(self) -> dict[str, Any]:
        """The :data:`STORED` fields as JSON types: the decay function as the registry writes it
        (``{"name": "custom", ...}`` for one that is not lethe's), the half-life in seconds."""
        return {
            "max_entries": self.max_entries,
            "decay_fn": decay_to_dict(self.decay_fn),
            "half_life": self.half_life,
            "eviction_threshold": self.eviction_threshold,
            "summarize_threshold": self.summarize_threshold,
        }

    @staticmethod
    def from_document(doc: Mapping[str, Any], *, decay_fn: Any = None, **hooks: Any) -> tuple[Config, bool]:
        """The configuration :meth:`to_document` wrote, with the process's ``hooks``
        (``summarize_fn``, ``on_evict``, ``clock_fn``), and whether the entries saved with it
        hold states the configuration's decay function wrote (else they are read as None).

        The document's decay function is rebuilt from the registry, or ``decay_fn``
        stands for it (required for a custom one).  A decay function's own half-life is
        the one in use: the saved one is checked but not imposed on it (older documents
        saved 1 h beside FSRS, say); for a custom function it stays the half-life names
        are built with later.  The document does not say whether the function was given
        by name: one its name builds from the saved half-life counts as built by name, and
        follows a new half-life (``configure``).

        Raises:
            ValueError: a field is missing or invalid (naming it; those :func:`build`
                refuses as ``configuration: ...``).
        """
        saved = doc.get("decay_fn", _MISSING)
        saved_custom = isinstance(saved, Mapping) and saved.get("name") == CUSTOM
        loaded = decay_fn is None  # rebuilt from the document, not passed in
        if decay_fn is None:
            if saved is _MISSING:
                raise ValueError("decay_fn: missing")
            if saved_custom:
                raise ValueError("decay_fn: the memory was saved with a custom decay function; pass decay_fn=")
            decay_fn = from_dict(dict(saved) if isinstance(saved, Mapping) else saved)
        fields: dict[str, Any] = {name: doc[name] for name in STORED if name in doc}
        try:
            saved_half_life = duration(fields["half_life"], "half_life")
        except KeyError:
            raise ValueError("half_life: missing") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"configuration: {exc}") from None
        fields["decay_fn"] = decay_fn
        fields["half_life"] = ONE_HOUR if is_builtin(decay_fn) else unchosen_half_life(saved_half_life)
        named_as = name_built_from(decay_fn, saved_half_life) if loaded else None
        if named_as is not None:
            fields["decay_fn"], fields["half_life"] = named_as, saved_half_life
        try:
            config = build({**fields, **dict.fromkeys(HOOKS), **hooks})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"configuration: {exc}") from None
        if loaded or not isinstance(saved, Mapping):
            return config, loaded
        # The saved states belong to the saved function: a custom one only to a custom one
        # passed back in, a built-in only to an equal built-in.
        new = decay_to_dict(config.decay_fn)
        same_fn = saved_custom if new["name"] == CUSTOM else (not saved_custom and dict(saved) == new)
        return config, same_fn

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return self is other or self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]


class _DefaultHalfLife(timedelta):
    """``Memory.half_life``'s default, one hour: a ``timedelta`` the memory can tell from
    one given explicitly (a decay function with a half-life of its own overrides it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "datetime.timedelta(seconds=3600)"


ONE_HOUR: timedelta = _DefaultHalfLife(hours=1)


def unchosen_half_life(secs: float) -> timedelta:
    """``secs`` as a half-life the caller did not choose: a decay function's own overrides it."""
    return _DefaultHalfLife(seconds=secs)


def build(fields: dict[str, Any], source: Config | None = None, held: int = 0) -> Config:
    """Check the constructor's ``fields`` and derive the rest.

    ``source`` is the configuration of the memory whose entries the new one
    keeps (``configure``), ``held`` how many entries it holds.

    Raises:
        TypeError, ValueError: a field is invalid (the message names it).
    """
    max_entries = integer(
        fields["max_entries"],
        "max_entries",
        low=1,
        high=MAX_ENTRIES,
        kind="a positive int",
        low_text="a positive int",
        high_text="2**63 - 1",
    )
    # Entries past their deadline count until a write removes (and reports) them.
    if held > max_entries:
        # Evicting here would run summarize_fn and on_evict behind the caller's back.
        raise ValueError(
            f"max_entries={max_entries} is below the {held} entries held (expired ones count until "
            "a write removes them); evict first"
        )
    half_life = duration(fields["half_life"], "half_life")
    # A half-life the caller did not choose (the default, or the one carried over) yields
    # to the decay function's own; so does one a name was built with ("fsrs" ignores it).
    chosen = type(fields["half_life"]) is not _DefaultHalfLife
    eviction = unit(fields["eviction_threshold"], "eviction_threshold", kind="a number between 0 and 1")
    summarize = unit(fields["summarize_threshold"], "summarize_threshold", kind="a number between 0 and 1")
    if summarize < eviction:
        raise ValueError(f"summarize_threshold ({summarize}) must be >= eviction_threshold ({eviction})")
    hook(fields["summarize_fn"], "summarize_fn", 1, "(entry)")
    hook(fields["on_evict"], "on_evict", 1, "(entries)")
    hook(fields["clock_fn"], "clock_fn", 0, "()")
    hook(fields["embed_fn"], "embed_fn", 1, "(texts)")
    decay_fn: Any = fields["decay_fn"]
    # Built from a name: a name now, or the source's function, carried over, that it built from one.
    named = isinstance(decay_fn, str)
    if source is not None and decay_fn is source.decay_fn:
        named = source.named
    if source is not None and half_life == source.half_life:
        chosen = False
    elif named and not isinstance(decay_fn, str):
        # A built-in the source made by name from its half-life follows the new one;
        # one the caller passed keeps its own (and a different chosen half-life is refused).
        decay_fn = name_of(decay_fn)
    scorer = make_scorer(decay_fn, half_life)
    own = _own_half_life(scorer)
    if own is None and not scorer.is_builtin:
        # A custom function that declares a half-life has that one in use, as a built-in does.
        own = _declared_half_life(scorer.half_life)
    if own is not None and not math.isclose(own, half_life, rel_tol=1e-9, abs_tol=1e-6):
        if chosen and not isinstance(decay_fn, str):
            raise ValueError(
                f"half_life: {half_life:.6g} s is not the half-life of decay_fn {scorer.fn!r:.100} "
                f"({own:.6g} s: a fresh entry scores 0.5 then); leave half_life out, "
                "or pass a decay_fn built with it"
            )
        half_life = own
    return Config(
        max_entries=max_entries,
        decay_fn=scorer.fn,
        half_life=half_life,
        eviction_threshold=eviction,
        summarize_threshold=summarize,
        summarize_fn=fields["summarize_fn"],
        on_evict=fields["on_evict"],
        clock_fn=fields["clock_fn"],
        embed_fn=fields["embed_fn"],
        scorer=scorer,
        ranking=choose(scorer),
        named=named,
    )


def name_built_from(decay_fn: object, half_life: float) -> str | None:
    """The built-in name that gives ``decay_fn`` when built with ``half_life``, else None
    (``from_dict``: a document does not record whether its decay function was given by name)."""
    name = name_of(decay_fn)
    if name is None or name not in BUILTINS:
        return None
    try:
        same = by_name(name, half_life) == decay_fn
    except (TypeError, ValueError):  # a half-life the name cannot be built with
        return None
    return name if same is True else None


_FRESH = Entry(key=0, value=None, inserted_at=from_us(0.0), last_accessed_at=from_us(0.0))


def _declared_half_life(declared: object) -> float | None:
    """The ``half_life`` a custom decay function declares (seconds or a ``timedelta``), if any."""
    try:
        return duration(declared, "decay_fn.half_life")
    except (TypeError, ValueError):
        return None


def _own_half_life(scorer: Scorer) -> float | None:
    """Seconds after which an entry put once, never rehearsed, of importance 1 scores 0.5
    under a built-in decay function (its declared ``half_life`` when that is so, else
    found by bisection: scores never rise without a rehearsal).  None for a custom
    function, or one under which such an entry never scores 0.5."""
    if not scorer.is_builtin:
        return None

    def above(secs: float) -> bool:
        us = secs * 1e6
        return scorer.unclamped(_FRESH, from_us(us), us) > 0.5

    try:
        declared = scorer.half_life
        if type(declared) is float and 0.0 < declared < math.inf:
            us = declared * 1e6
            if math.isclose(scorer.unclamped(_FRESH, from_us(us), us), 0.5, rel_tol=1e-9):
                return declared
        if not above(0.0):
            return None
        low, high = 0.0, 1.0
        while above(high):
            low, high = high, high * 2.0
            if high > 1e13:  # some 300,000 years
                return None
        for _ in range(200):
            mid = (low + high) / 2.0
            if not low < mid < high:
                break
            if above(mid):
                low = mid
            else:
                high = mid
    except Exception:  # a combinator's custom part that cannot score a bare entry: no half-life known
        return None
    return high
