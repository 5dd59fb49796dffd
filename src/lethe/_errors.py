"""The exceptions lethe raises (besides ``KeyError``, ``ValueError`` and ``TypeError``)."""

from __future__ import annotations


class LetheError(Exception):
    """Base class of every lethe-specific error.

    >>> issubclass(MemoryFullError, LetheError)
    True
    """


class MemoryFullError(LetheError, RuntimeError):
    """A new entry does not fit: the memory is at capacity and every entry is pinned.

    Nothing is dropped and the memory is unchanged; unpin or delete an entry,
    or build the memory with a larger ``max_entries``.
    """


class SummarizeError(LetheError, RuntimeError):
    """The ``summarize_fn`` hook raised; the original exception is ``__cause__``.

    The operation that called the hook had no effect.
    """


class ClockWarning(UserWarning):
    """A loaded memory has seen a later time than its clock now reads.

    ``Memory.from_dict`` warns when the document's latest clock reading is
    ahead of ``clock_fn()``: the memory never lets time run backwards, so it
    scores as of that reading until the clock catches up.  Pass
    ``shift_to=`` to move every instant of the document to the present.

    >>> issubclass(ClockWarning, UserWarning)
    True
    """
