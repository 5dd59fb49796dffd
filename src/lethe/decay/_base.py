"""The base of lethe's own decay models: each declares its parameters once.

A model lists its parameters as a tuple of :class:`Param` (name, check, JSON
form, repr form, how to read JSON back) in the order of its ``__init__``,
whose typed signature holds the defaults; :class:`Model` derives everything
else from that declaration:

* ``__init__`` validation: the explicit ``__init__`` passes its arguments to
  :meth:`Model._init`, which checks each with its ``Param.check`` (one of
  :mod:`lethe._core.validate`'s checks), stores it in a slot, then lets the model
  compute its derived fields (:meth:`Model._derive`);
* ``__repr__``: every parameter that differs from its default, so equal reprs
  mean equal models (``ACTR()``, ``ACTR(threshold=-2.0)``);
* ``__eq__`` and ``__hash__`` on the parameters;
* ``to_dict`` (the name, then every parameter as JSON) and :meth:`Model._from_json`
  (the registry's loader: exactly the fields ``to_dict`` writes, each read back
  and passed to the constructor, so hostile data meets the same checks);
* immutability (setting or deleting an attribute raises
  ``dataclasses.FrozenInstanceError``, an AttributeError) and pickling;
* ``score(entry, now)`` (and ``rehearse`` for :class:`Stateful` models) over
  the model's float fast path ``_raw(entry, now_us)``.

A :class:`Stateful` model also declares, beside ``dump_state`` and
``load_state``, how its ``decay_state`` moves in time
(:meth:`Stateful.moved_state`): which instants it holds, if any.

So every model's class body has one shape on purpose (a doctest, ``name``,
``params``, ``__slots__`` and a typed ``__init__`` that calls ``_init``): it
is the declaration itself, and a duplicate finder pairs such bodies (for
example ``Exponential`` and ``Recency``, ``AccessWeighted`` and ``PowerLaw``,
``Importance`` and ``AccessFrequency``) without there being logic to share.

Attributes are plain slots: scoring reads them as fast as before.  When a
class is created, ``__init_subclass__`` checks that the declaration and the
``__init__`` signature name the same parameters in the same order, so the two
cannot drift apart.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError
from datetime import datetime
from typing import Any, ClassVar, NamedTuple

from lethe._core.clock import to_us
from lethe._core.entry import Entry
from lethe._core.reprs import short_repr
from lethe.decay._adapter import CUSTOM, Custom

__all__ = ["Model", "Param", "Stateful"]

#: Reads a nested decay function from JSON: ``(data, where) -> function`` (the registry's).
Load = Callable[[Any, str], Any]


def _same(value: Any) -> Any:
    return value


def _as_is(value: Any, where: str, load: Load) -> Any:
    return value


class Param(NamedTuple):
    """One parameter of a model: how it is checked, written and shown.

    Attributes:
        name: The ``__init__`` parameter and the attribute (a slot) it is kept in.
        check: ``(value, name) -> stored value``; raises TypeError/ValueError naming ``name``.
        dump: Stored value to JSON for ``to_dict`` (as stored if omitted); may raise
            :class:`~lethe.decay._adapter.Custom` for a part lethe cannot rebuild.
        show: Stored value to the text ``__repr__`` shows (``repr`` if omitted);
            it must read back as an equal value.
        load: ``(json, where, load_part) -> __init__ argument`` for ``from_dict``
            (the JSON as is if omitted); ``load_part`` rebuilds a nested decay function.

    >>> from lethe._core.validate import duration
    >>> Param("half_life", duration).name
    'half_life'
    """

    name: str
    check: Callable[[Any, str], Any]
    dump: Callable[[Any], Any] = _same
    show: Callable[[Any], str] = repr
    load: Callable[[Any, str, Load], Any] = _as_is


_REQUIRED: Any = object()


class Model(ABC):
    """Base of lethe's own decay models: parameters declared once (see the module docstring).

    Subclasses set ``name`` (the registry name), ``params`` and ``__slots__``
    (the parameters, then any derived fields), write a typed ``__init__`` that
    calls ``self._init(...)`` with its arguments in declared order, and
    define ``_raw(entry, now_us)``.

    >>> from lethe.decay import ACTR
    >>> ACTR(), ACTR(threshold=-2.0), ACTR() == ACTR(threshold=None)
    (ACTR(), ACTR(threshold=-2.0), True)
    """

    __slots__ = ()

    #: The name ``to_dict`` writes and the registry knows.
    name: ClassVar[str]
    #: The constructor parameters, in ``__init__`` order.
    params: ClassVar[tuple[Param, ...]] = ()
    # Derived when the class is created: each parameter's stored default (or _REQUIRED),
    # and whether the one parameter is ``*args``.
    _defaults: ClassVar[tuple[Any, ...]] = ()
    _star: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params" not in cls.__dict__:
            return  # a subclass that declares nothing keeps its base's declaration
        signature = list(inspect.signature(cls.__init__).parameters.values())[1:]
        names = [p.name for p in signature]
        declared = [p.name for p in cls.params]
        if names != declared:
            raise TypeError(f"{cls.__name__}: __init__ takes {names}, but params declares {declared}")
        slots = cls.__dict__.get("__slots__", ())
        missing = [n for n in declared if n not in slots]
        if missing:
            raise TypeError(f"{cls.__name__}: parameters {missing} need a slot")
        cls._star = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature)
        cls._defaults = tuple(
            _REQUIRED if p.default is inspect.Parameter.empty else param.check(p.default, p.name)
            for p, param in zip(signature, cls.params)
        )

    def _init(self, *values: Any) -> None:
        """Check each argument with its ``Param.check``, store it, then :meth:`_derive`."""
        set_ = object.__setattr__
        for param, value in zip(self.params, values):
            set_(self, param.name, param.check(value, param.name))
        self._derive()

    def _derive(self) -> None:  # noqa: B027 - an optional hook: most models derive nothing
        """Compute derived fields (slots after the parameters) and cross-parameter checks."""

    def _args(self) -> tuple[Any, ...]:
        """The stored parameters, in declared order."""
        return tuple(getattr(self, p.name) for p in self.params)

    @abstractmethod
    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        """The raw score of ``entry`` at ``now_us`` (microseconds since the epoch): the fast path."""

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The entry's raw score at ``now`` (see the class for the formula and how importance enters).

        Args:
            entry: The entry to score.
            now: An aware datetime.

        Returns:
            The raw score: 1.0 at zero elapsed time, never rising without a rehearsal.

        Raises:
            ValueError, TypeError: ``now`` is naive or not a datetime.

        >>> from datetime import datetime, timedelta, timezone
        >>> from lethe import Entry
        >>> from lethe.decay import Exponential
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Exponential(60).score(Entry(key=1, value="v", inserted_at=t, last_accessed_at=t), t + timedelta(minutes=1))
        0.5
        """
        return self._raw(entry, to_us(now))

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters, JSON-ready: what :func:`lethe.decay.from_dict` reads back.

        Returns:
            ``{"name": ..., parameter: value, ...}``; for a combinator with a part
            that is not lethe's own, ``{"name": "custom", "repr": ...}``.

        >>> from lethe.decay import ACTR
        >>> ACTR(threshold=-2.0).to_dict()["threshold"]
        -2.0
        """
        out: dict[str, Any] = {"name": self.name}
        try:
            for param in self.params:
                out[param.name] = param.dump(getattr(self, param.name))
        except Custom:
            return {"name": CUSTOM, "repr": repr(self)[:200]}
        return out

    @classmethod
    def _fields(cls) -> frozenset[str]:
        """The parameter fields ``to_dict`` writes (besides ``name``): exactly what ``_from_json`` reads."""
        return frozenset(p.name for p in cls.params)

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], where: str, load: Load) -> Any:
        """Rebuild a model from ``to_dict()`` output (without ``name``); the registry's loader.

        Every field ``to_dict`` writes must be there and no other; each is read
        back (``Param.load``, with ``load`` for nested decay functions) and the
        constructor checks it as it checks any argument.

        Raises:
            ValueError: a missing or unknown field (``"decay_fn.half_life: missing"``),
                or a bad value (``"decay_fn: bad parameters for 'actr': ..."``).
        """
        exact(data, cls._fields(), where)
        args = [p.load(data[p.name], f"{where}.{p.name}", load) for p in cls.params]
        try:
            return cls(*args[0]) if cls._star else cls(*args)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: bad parameters for {short_repr(cls.name)}: {exc}") from None

    def __repr__(self) -> str:
        parts: list[str] = []
        for param, default in zip(self.params, self._defaults):
            value = getattr(self, param.name)
            if self._star:
                parts.extend(repr(v) for v in value)
            elif default is _REQUIRED or not _same_value(value, default):
                parts.append(f"{param.name}={param.show(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Model)
        return self._args() == other._args()

    def __hash__(self) -> int:
        return hash(self._args())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __replace__(self, **changes: Any) -> Any:
        """A copy with some parameters changed, checked as the constructor checks them (``copy.replace``).

        >>> from lethe.decay import ACTR
        >>> ACTR().__replace__(threshold=-2.0)
        ACTR(threshold=-2.0)
        """
        unknown = sorted(set(changes) - self._fields())
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {unknown[0]!r}")
        args = [changes.get(p.name, getattr(self, p.name)) for p in self.params]
        return type(self)(*args[0]) if self._star else type(self)(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        # Restored as stored, without re-checking (or re-normalizing Blend's weights).
        return (_restore, (type(self), self._args()))


def _same_value(value: Any, default: Any) -> bool:
    """Whether a parameter equals its default, for ``__repr__`` (an odd ``__eq__`` counts as different)."""
    try:
        return bool(value == default)
    except Exception:
        return False


def _restore(cls: type[Model], values: tuple[Any, ...]) -> Model:
    """Unpickle a model: its stored parameters, then its derived fields."""
    model = object.__new__(cls)
    for param, value in zip(cls.params, values):
        object.__setattr__(model, param.name, value)
    model._derive()
    return model


class Stateful(Model):
    """A model that keeps a per-entry ``decay_state``: ``rehearse`` over its fast path ``_rehearse``.

    Each one declares how its state moves in time (:meth:`moved_state`): the
    instants it holds, or none.  ``Memory.from_dict(..., shift_to=...)`` moves
    them with the rest of the document, and ``from_dict`` checks each against
    the entry's lifetime.  Forgetting the declaration is impossible:
    :meth:`moved_state` is abstract, and a class that names itself (``name``)
    without defining it is refused when it is created.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and getattr(cls.moved_state, "__isabstractmethod__", False):
            raise TypeError(
                f"{cls.__name__} keeps a decay_state: declare how it moves in time "
                "(moved_state; return the state as is when it holds no instant)"
            )

    @abstractmethod
    def moved_state(self, state: Any, move: Callable[[float], float], custom: Callable[[Any], Any]) -> Any:
        """``state`` with ``move`` applied to every instant it holds: how the state moves in time.

        ``Memory.from_dict(..., shift_to=...)`` passes a ``move`` that adds one
        delta to every instant; ``from_dict`` passes one that checks each
        instant lies within the entry's lifetime.  Call it through
        :func:`lethe.decay._adapter.moved_state`, which also handles a None
        state and functions that are not lethe's own.

        Args:
            state: A ``decay_state`` this model wrote (not None).
            move: An instant (microseconds since the epoch) to its new value; it may raise.
            custom: The state of a part lethe cannot look into (a custom decay
                function inside a combinator) to its new value; it may raise.

        Returns:
            The state with every instant moved, of the same type; ``state``
            itself when it holds no instant (FSRS's ``(S, D)``).

        >>> from lethe.decay import ACTR
        >>> ACTR().moved_state((1e6, 2e6), lambda t: t + 5.0, lambda state: state)
        (1000005.0, 2000005.0)
        """

    @abstractmethod
    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Any:
        """The new ``decay_state`` of ``entry`` rehearsed at ``now_us``: the fast path of ``rehearse``."""

    def rehearse(self, entry: Entry[Any, Any], now: datetime) -> Any:
        """The entry's new ``decay_state`` after a rehearsal at ``now``.

        Args:
            entry: The entry as it was before the rehearsal (``decay_state`` None when fresh).
            now: An aware datetime.

        Returns:
            The new state (ACT-R: recent access times; FSRS: ``(S, D)``; combinators:
            their parts' states).

        >>> from datetime import datetime, timezone
        >>> from lethe import Entry
        >>> from lethe.decay import ACTR
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> len(ACTR().rehearse(Entry(key=1, value="v", inserted_at=t, last_accessed_at=t), t))
        2
        """
        return self._rehearse(entry, to_us(now))


def _short(field: object) -> str:
    text = str(field)
    return text if len(text) <= 60 else text[:57] + "..."


def exact(params: Mapping[str, Any], fields: frozenset[str], where: str) -> None:
    """ValueError naming the first missing or unknown field of ``params``."""
    for field in sorted(fields):
        if field not in params:
            raise ValueError(f"{where}.{field}: missing")
    unknown = sorted(map(str, set(params) - fields))
    if unknown:
        raise ValueError(f"{where}.{_short(unknown[0])}: unknown field")
