"""Compiled helpers the generated enumerators call (kept out of the generated code for readability)."""
from __future__ import annotations

import math

import numba


@numba.njit(cache=True, nogil=True)
def heap_offer(bounds, terms, rows, size, bound, term, row):
    """Offer a configuration to a max-heap of the ``len(bounds)`` smallest bounds seen so far.

    ``rows[i]`` holds the configuration of ``bounds[i]`` and ``terms[i]`` its dominant term.
    Returns the new size. The root (``bounds[0]``) is the largest bound kept.
    """
    capacity = bounds.shape[0]
    if size < capacity:
        i = size
        while i > 0:  # sift the hole up
            parent = (i - 1) // 2
            if bounds[parent] >= bound:
                break
            bounds[i] = bounds[parent]
            terms[i] = terms[parent]
            rows[i, :] = rows[parent, :]
            i = parent
        bounds[i] = bound
        terms[i] = term
        rows[i, :] = row
        return size + 1
    if bound >= bounds[0]:
        return size
    i = 0
    while True:  # sift the hole down from the root
        child = 2 * i + 1
        if child >= capacity:
            break
        if child + 1 < capacity and bounds[child + 1] > bounds[child]:
            child += 1
        if bounds[child] <= bound:
            break
        bounds[i] = bounds[child]
        terms[i] = terms[child]
        rows[i, :] = rows[child, :]
        i = child
    bounds[i] = bound
    terms[i] = term
    rows[i, :] = row
    return size


@numba.njit(cache=True, nogil=True)
def float_power(base, exponent):
    """``base ** exponent`` as Python computes a float power, raising where Python gives no float:
    ``0.0 ** negative`` raises ZeroDivisionError (compiled code gives inf), and a negative base with
    a fractional exponent raises ValueError (Python gives a complex number, compiled code nan)."""
    if base == 0 and exponent < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    if base < 0 and exponent != math.floor(exponent):
        raise ValueError("a negative number to a fractional power is complex")
    return base ** exponent
