"""The garbage collector held back while a bulk write builds many objects at once.

A bulk write (``put_many``, a large ``evict()``, ``from_dict``, unpickling, opening a
stored memory) allocates tens of thousands of containers that all stay reachable: the
collector's passes while it runs find nothing to free, and each one that reaches the
oldest generation walks every live object of the process.  Held back, it runs no pass
while the block runs.  The collector is only touched when it is enabled, and enabled
again afterwards, whatever happens.

After a block that made many containers, they are moved into the oldest generation as
they stand (``gc.freeze()`` then ``gc.unfreeze()``: on CPython 3.10 to 3.13 each moves
whole generations in constant time), rather than walked once more by the pass their
number would start at once, which would find nothing to free either (a fifth of opening
100,000 entries).
The process's other young objects go with them: a few thousand at most (the collector's
youngest generations hold no more between passes), collected at the next full pass.
A process that froze objects of its own (a pre-forking server keeping its pages shared)
keeps them frozen: the usual pass runs instead (as on CPython 3.12, which starts with
a few hundred objects of its own frozen).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: Young containers, in multiples of the collector's first threshold, past which a block's
#: objects are moved to the oldest generation rather than walked by the next pass.
_MANY = 30
#: Where ``gc.freeze()`` and ``gc.unfreeze()`` splice whole generations (constant time):
#: CPython 3.10 to 3.13 with its GIL.  Elsewhere (3.14's incremental collector, a
#: free-threaded build, another interpreter), where they may walk every object, the usual
#: pass runs.
_SPLICED = (
    sys.implementation.name == "cpython"
    and sys.version_info < (3, 14)
    and getattr(sys, "_is_gil_enabled", lambda: True)()
    and hasattr(gc, "freeze")
)


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
        try:
            many = _MANY * max(gc.get_threshold()[0], 1)
            if _SPLICED and gc.get_count()[0] > many and not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
        finally:
            gc.enable()
