"""The error :mod:`lethe.store` raises when a store cannot be used as it is."""

from __future__ import annotations

from lethe._errors import LetheError


class StoreError(LetheError, RuntimeError):
    """A store that cannot be used as it is: nothing was written.

    Raised for a file that is not a lethe store, a store written by a newer
    lethe (a format version this one does not read), a log with a version
    missing or a record that does not decode (a truncated or damaged store),
    and a past version or eviction feed asked for from before the retained log.

    >>> issubclass(StoreError, RuntimeError)
    True
    """
