"""The exceptions lethe raises (besides ``KeyError``, ``ValueError`` and ``TypeError``)."""

from __future__ import annotations

from typing import Any


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

    The operation that called the hook had no effect.  The message is short
    (it names the key and the cause's type and first words); the whole story is
    in the cause chain.

    Attributes:
        key: The key of the entry that could not be summarized.
        entry: That entry, as the memory held it.

    To go on without that summary, drop the entry yourself and report it as
    your ``on_evict`` would, or keep it by pinning it (or touching it with an
    importance that ranks it above the others)::

        try:
            mem = mem.put(value)
        except SummarizeError as err:
            archive((err.entry,))          # what on_evict would have been told
            mem = mem.delete(err.key).put(value)
    """

    key: Any
    entry: Any

    def __init__(self, message: str, *, key: Any = None, entry: Any = None) -> None:
        super().__init__(message)
        self.key = key
        self.entry = entry

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_summarize_error, (str(self), self.key, self.entry))


def _rebuild_summarize_error(message: str, key: Any, entry: Any) -> SummarizeError:
    return SummarizeError(message, key=key, entry=entry)

class ClockWarning(UserWarning):
    """A loaded memory has seen a later time than its clock now reads.

    ``Memory.from_dict`` warns when the document's latest clock reading is
    ahead of ``clock_fn()``: the memory never lets time run backwards, so it
    scores as of that reading until the clock catches up.  Pass
    ``shift_to=`` to move every instant of the document to the present.

    >>> issubclass(ClockWarning, UserWarning)
    True
    """
