"""Bounded reprs for error messages: a 400-digit int or a huge object never floods a message."""

from __future__ import annotations

import math

_LIMIT = 60


def short_repr(value: object, limit: int = _LIMIT) -> str:
    """``repr(value)``, cut to about ``limit`` characters; an int too long to print is described.

    >>> short_repr(10**400)
    'an int of 401 digits'
    >>> short_repr("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * limit:
        # Counting the digits of a huge int without printing it (which Python may refuse).
        digits = int(value.bit_length() * math.log10(2)) + 1
        if abs(value) < 10 ** (digits - 1):
            digits -= 1
        return f"an int of {digits} digits" if value > 0 else f"a negative int of {digits} digits"
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[:limit] + "..."
