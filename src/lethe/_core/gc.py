"""The garbage collector held back while a bulk write builds many objects at once.

A bulk write (``put_many``, a large ``evict()``, ``from_dict``, unpickling)
allocates tens of thousands of containers that all stay reachable: the
collector's passes while it runs find nothing to free, and each one that
reaches the oldest generation walks every live object of the process.  Held
back, it collects once afterwards instead, as usual.  The collector is only
touched when it is enabled, and enabled again afterwards, whatever happens.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No collection while the block runs (the collector as it was, afterwards)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
