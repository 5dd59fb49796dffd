"""Calling the caller's hooks: lethe calls them synchronously and uses what they return.

An ``async def`` hook returns a coroutine instead of its result.  Wherever lethe
finds an awaitable where it needed a value it refuses it, after closing it, so
the error is not followed by a "coroutine was never awaited" warning.
"""

from __future__ import annotations

import inspect


def closed_if_awaitable(value: object) -> bool:
    """Whether ``value`` is an awaitable, which is then closed (when it can be).

    >>> async def hook() -> int:
    ...     return 1
    >>> closed_if_awaitable(hook()), closed_if_awaitable(1)
    (True, False)
    """
    if not inspect.isawaitable(value):
        return False
    close = getattr(value, "close", None)
    if callable(close):
        close()
    return True
