"""Compiled helpers the generated enumerators call (kept out of the generated code for readability)."""
from __future__ import annotations

import numba


@numba.njit(cache=True)
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
