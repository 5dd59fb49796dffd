"""The errors :mod:`lethe.store` raises when a store cannot be used as it is."""

from __future__ import annotations

from lethe._core.errors import LetheError


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
    """A commit whose outcome could not be learned: it may be in the store, once, or not.

    Raised by an engine on a server (:class:`~lethe.store.PostgresStore`,
    :class:`~lethe.store.RedisStore`) when the connection failed while a
    commit was on its way and the server stayed unreachable for the store's
    ``timeout``, so the engine could not read back whether the commit went
    in; the message names the memory and the version.  The commit is never
    applied twice: it carries an operation id and goes in only at its
    version.  A request still on its way when the engine gave up may yet
    land, so read before doing the change again: the
    :class:`~lethe.store.Shared` that raised it keeps its replica as it was,
    and its next read catches up and shows the change if it went in.

    Unlike other :class:`StoreError`, this one may have written something.

    >>> issubclass(CommitUnknown, StoreError)
    True
    """


class MemoryGone(StoreError):
    """The memory is no longer in the store: dropped (``store.drop(name)``), its keys
    deleted (a Redis emptied, or evicting keys), or a server restarted without persistence.
    Nothing was written.

    The :class:`~lethe.store.Shared` that raised it raises it on every later call: open the
    name again, ``Shared(store, name, template)``, to create the memory afresh.  (The
    LangGraph store and the MCP server of :mod:`lethe.integrations` do so by themselves.)

    >>> issubclass(MemoryGone, StoreError)
    True
    """


class HistoryRewound(StoreError):
    """The store no longer holds versions the replica saw: a server restarted without its
    latest writes, a restored backup, or the memory dropped and made again by another
    client.  Nothing was written, and the :class:`~lethe.store.Shared` that raised it now
    follows the store as it is: call again to go on.

    >>> issubclass(HistoryRewound, StoreError)
    True
    """


class TemplateIgnored(UserWarning):
    """A :class:`~lethe.store.Shared` opened a name the store already holds with a
    template that has entries: those entries were not written.

    A template's entries only fill a name the store does not hold yet; once it
    exists, every process reads the stored entries.  Write new entries with
    :meth:`~lethe.store.Shared.update`, or open with an empty template.

    >>> issubclass(TemplateIgnored, UserWarning)
    True
    """
