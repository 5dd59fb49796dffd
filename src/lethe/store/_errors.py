"""The errors :mod:`lethe.store` raises when a store cannot be used as it is."""

from __future__ import annotations

from lethe._errors import LetheError


class StoreError(LetheError, RuntimeError):
    """A store that cannot be used as it is: nothing was written.

    Raised for a file that is not a lethe store, a store written by a newer
    lethe (a format version this one does not read), a log with a version
    missing or a record that does not decode (a truncated or damaged store),
    a past version or eviction feed asked for from before the retained log,
    and a server that stayed unreachable for longer than the store's ``timeout``.

    >>> issubclass(StoreError, RuntimeError)
    True
    """


class CommitUnknown(StoreError):
    """A commit whose outcome cannot be learned: it may or may not be in the store.

    Raised by an engine on a server (:class:`~lethe.store.PostgresStore`,
    :class:`~lethe.store.RedisStore`) when the connection failed while a
    commit was on its way and the server stayed unreachable for the store's
    ``timeout``, so the engine could not read back whether the commit went
    in.  The message names the memory and the version.  It is never applied
    twice: the commit carries an operation id, and a later try of the same
    version by anyone else is refused if it went in.  The replica of the
    :class:`~lethe.store.Shared` that raised it is unchanged; its next read
    or write catches up, and shows whether the version holds your change.

    Unlike the other :class:`StoreError`, something may have been written.

    >>> issubclass(CommitUnknown, StoreError)
    True
    """
