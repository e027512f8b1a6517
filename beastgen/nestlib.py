"""Compiled helpers the generated enumerators call (kept out of the generated code for readability)."""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload


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
    a fractional exponent raises ValueError (Python gives a complex number, compiled code nan), and
    a finite power that overflows raises OverflowError (compiled code gives inf)."""
    if base == 0 and exponent < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    if base < 0 and math.isfinite(exponent) and exponent != np.floor(exponent):  # no int: floor(1e300)
        raise ValueError("a negative number to a fractional power is complex")
    result = base ** exponent
    if math.isinf(result) and math.isfinite(base) and math.isfinite(exponent):
        raise OverflowError("a float power past the largest float")
    return result


@numba.njit(cache=True, nogil=True)
def range_length(start, stop, step):
    """``len(range(start, stop, step))`` of 64-bit integers whose difference may pass 64 bits
    (Numba's ``range`` computes ``stop - start`` in 64 bits and then counts nothing). A length past
    2**63 - 1 (no loop ends that) is that."""
    if step > 0 and start < stop:
        span = numba.uint64(stop) - numba.uint64(start) - numba.uint64(1)  # exact: wraps modulo 2**64
        length = span // numba.uint64(step) + numba.uint64(1)
    elif step < 0 and stop < start:
        span = numba.uint64(start) - numba.uint64(stop) - numba.uint64(1)
        length = span // (numba.uint64(0) - numba.uint64(step)) + numba.uint64(1)
    else:
        return 0
    return numba.int64(min(length, numba.uint64(9223372036854775807)))


@numba.njit(cache=True, nogil=True)
def range_value(start, index, step):
    """``range(start, stop, step)[index]`` for an index inside the range (exact: the value fits in
    64 bits, the wrap-around of ``index * step`` cancels)."""
    return numba.int64(numba.uint64(start) + numba.uint64(index) * numba.uint64(step))


@numba.njit(cache=True, nogil=True)
def range_contains(start, stop, step, value):
    """``value in range(start, stop, step)`` of 64-bit integers whose difference may pass 64 bits."""
    if step > 0 and start <= value < stop:
        return (numba.uint64(value) - numba.uint64(start)) % numba.uint64(step) == 0
    if step < 0 and stop < value <= start:
        return (numba.uint64(start) - numba.uint64(value)) % (numba.uint64(0) - numba.uint64(step)) == 0
    return False


def sequence_min(values):
    """``min(values)`` of one argument (a space function's helper calls this): Python's raises
    TypeError for a number (Numba's returns it) and ValueError for an empty sequence."""
    return min(values)


def sequence_max(values):
    """``max(values)`` of one argument, as :func:`sequence_min`."""
    return max(values)


def _one_argument(builtin):
    """The Numba implementation of ``builtin`` of one argument, refusing a number as Python does."""
    def typer(values):
        if isinstance(values, (types.Number, types.Boolean)):
            def refuse(values):  # returns the number's type to the typer; never returns
                if values == values or values != values:
                    raise TypeError("min() or max() of one number: it takes a sequence")
                return values
            return refuse
        if isinstance(values, types.RangeType):
            def of_range(values):
                if len(values) == 0:
                    raise ValueError("min() or max() of an empty range")
                return builtin(values)
            return of_range
        return lambda values: builtin(values)
    return typer


overload(sequence_min)(_one_argument(min))
overload(sequence_max)(_one_argument(max))


def range_argument(value):
    """``value`` as ``range`` takes it (a space function's helper calls this on each argument):
    Python raises TypeError for a float, where Numba's ``range`` truncates it."""
    return value


@overload(range_argument)
def _range_argument(value):
    if isinstance(value, types.Float):
        def refuse(value):  # returns an int to the typer; never returns
            if value == value or value != value:
                raise TypeError("range() takes integers, not a float")
            return 0
        return refuse
    return lambda value: value
