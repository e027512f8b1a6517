"""Compiled helpers the generated enumerators call (kept out of the generated code for readability)."""
from __future__ import annotations

import math
import operator

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
    ``0.0 ** negative`` raises ZeroDivisionError (compiled code gives inf), a finite power past the
    floats OverflowError (compiled code inf), and a negative base with a fractional exponent
    ValueError (Python gives a complex number, compiled code nan)."""
    value, reason = _float_pow(base, exponent)
    if reason == COMPLEX:
        raise ValueError("a negative number to a fractional power is complex")
    return _settled((value, reason), None, 0)


@numba.njit(cache=True, nogil=True)
def range_chunk(start, stop, step, chunk):
    """How many of ``range(start, stop, step)``'s values (64-bit integers whose difference may pass
    64 bits: Numba's ``range`` computes ``stop - start`` in 64 bits and then counts nothing) lie in
    its ``chunk``-th run of 2**62: its length, up to 2**64 - 1, is chunks 0 to 3 (a count's carry
    runs between them)."""
    if step > 0 and start < stop:
        span = numba.uint64(stop) - numba.uint64(start) - numba.uint64(1)  # exact: wraps modulo 2**64
        length = span // numba.uint64(step) + numba.uint64(1)
    elif step < 0 and stop < start:
        span = numba.uint64(start) - numba.uint64(stop) - numba.uint64(1)
        length = span // (numba.uint64(0) - numba.uint64(step)) + numba.uint64(1)
    else:
        return 0
    first = numba.uint64(chunk) << numba.uint64(62)
    if length <= first:
        return 0
    return numba.int64(min(length - first, numba.uint64(4611686018427387904)))


@numba.njit(cache=True, nogil=True)
def range_value(start, chunk, index, step):
    """``range(start, stop, step)[chunk * 2**62 + index]`` for an index inside the range (exact: the
    value fits in 64 bits, the wrap-around of the product cancels)."""
    position = (numba.uint64(chunk) << numba.uint64(62)) + numba.uint64(index)
    return numba.int64(numba.uint64(start) + position * numba.uint64(step))


@numba.njit(cache=True, nogil=True)
def range_contains(start, stop, step, value):
    """``value in range(start, stop, step)`` of 64-bit integers whose difference may pass 64 bits."""
    if step > 0 and start <= value < stop:
        return (numba.uint64(value) - numba.uint64(start)) % numba.uint64(step) == 0
    if step < 0 and stop < value <= start:
        return (numba.uint64(start) - numba.uint64(value)) % (numba.uint64(0) - numba.uint64(step)) == 0
    return False


#: a divisor loop lists the divisors of 1 <= n <= DIVISORS_LIMIT (at most 240 of them) into an array
#: of DIVISORS_MAX; larger numerators scan their range (``divisors.h``, the C target's twin)
DIVISORS_LIMIT = 1048576
DIVISORS_MAX = 256


@numba.njit(cache=True, nogil=True)
def divisors(n, out):
    """The positive divisors of ``0 <= n <= DIVISORS_LIMIT``, ascending, into ``out``; how many
    (none of 0): those up to its square root, then their partners ``n // d`` (no allocation)."""
    small = 0
    u = numba.uint64(n)  # unsigned: no sign fix-ups in % and //
    d = numba.uint64(1)
    while d * d <= u:
        if u % d == 0:
            out[small] = d
            small += 1
        d += numba.uint64(1)
    size = small
    for index in range(small - 1, -1, -1):
        partner = u // numba.uint64(out[index])
        if partner != numba.uint64(out[index]):
            out[size] = partner
            size += 1
    return size


@numba.njit(cache=True, nogil=True)
def count_between(values, size, factor, lo, hi):
    """How many of ``factor * values[:size]`` (ascending, ``factor >= 1``) lie in ``[lo, hi)``."""
    count = 0
    for index in range(size):
        value = factor * values[index]
        if value >= hi:
            break
        if value >= lo:
            count += 1
    return count


@numba.njit(cache=True, nogil=True)
def gcd(a, b):
    """``gcd(a, |b|)`` of ``1 <= a`` and any 64-bit ``b`` (-2**63 included), in unsigned 64 bits."""
    u = numba.uint64(a)
    v = numba.uint64(0) - numba.uint64(b) if b < 0 else numba.uint64(b)
    while v != 0:
        u, v = v, u % v
    return numba.int64(u)


# -- the integers a space function computes, checked against the 64-bit range ---------------------
# A space function compiled as a helper (a loop, a generator: see analysis.checked_helpers) has each
# integer operation and float-to-int conversion replaced by one of the ``int_*`` functions below.
# On integers (and booleans) each gives Python's exact result where it fits in 64 bits; where
# Python's result does not fit, or is not a value compiled code has (an integer to a negative power
# is a float, a negative float to a fractional power a complex number), it raises after writing
# where that happened into ``left``, when the caller passes an array (``left[0] = where``;
# ``-where`` for a power without such a value): so the nest tells such a raise from the function's
# own errors (which reject a configuration) and stops the count with an error naming the operation.
# Python's own errors (a zero divisor, a negative shift count, int() of NaN or infinity, a float
# power past the floats) raise as in Python. ``int_pow`` of floats is Python's float power
# (:func:`_float_pow`); on anything else (floats, tuples, lists) each is the plain operation.
INT64_MIN = -2 ** 63
OK, PAST_64_BITS, NOT_AN_INTEGER, ZERO_DIVISOR, NEGATIVE_SHIFT, NO_INTEGER = -1, 0, 1, 2, 3, 4
COMPLEX, FLOAT_OVERFLOW = 5, 6
_TWO_63 = 9223372036854775808.0


@numba.njit(nogil=True)
def _add(x, y):
    s = numba.int64(numba.uint64(x) + numba.uint64(y))  # wraps modulo 2**64
    return s, OK if ((x ^ s) & (y ^ s)) >= 0 else PAST_64_BITS


@numba.njit(nogil=True)
def _sub(x, y):
    d = numba.int64(numba.uint64(x) - numba.uint64(y))
    return d, OK if ((x ^ y) & (x ^ d)) >= 0 else PAST_64_BITS


@numba.njit(nogil=True)
def _mul(x, y):
    p = numba.int64(numba.uint64(x) * numba.uint64(y))
    if y == 0 or y == -1:
        return p, OK if x != INT64_MIN or y == 0 else PAST_64_BITS
    # without overflow p is x * y exactly; with it p is off by a multiple of 2**64 > |y|
    return p, OK if p // y == x and p % y == 0 else PAST_64_BITS


@numba.njit(nogil=True)
def _floordiv(x, y):
    if y == 0:
        return numba.int64(0), ZERO_DIVISOR
    if y == -1:
        return _neg(x)
    return x // y, OK


@numba.njit(nogil=True)
def _dividend(x, y):
    """``x``, where ``x // y`` fits in 64 bits (only ``INT64_MIN // -1`` does not, and compiled
    code gives 0 for it); a zero ``y`` is left to the division."""
    return x, OK if x != INT64_MIN or y != -1 else PAST_64_BITS


@numba.njit(nogil=True)
def _first(x, y):
    return x


@numba.njit(nogil=True)
def _mod(x, y):
    if y == 0:
        return numba.int64(0), ZERO_DIVISOR
    return (numba.int64(0), OK) if y == -1 else (x % y, OK)  # INT64_MIN % -1 traps in hardware


@numba.njit(nogil=True)
def _pow(x, y):
    if y < 0:  # Python's result is a float (or 0 ** -1 raises)
        return numba.int64(0), NOT_AN_INTEGER if x != 0 else ZERO_DIVISOR
    result, base = numba.int64(1), x
    while y > 0:  # square and multiply, each step checked
        if y & 1:
            result, reason = _mul(result, base)
            if reason != OK:
                return result, reason
        y >>= 1
        if y > 0:
            base, reason = _mul(base, base)
            if reason != OK:
                return base, reason
    return result, OK


@numba.njit(nogil=True)
def _lshift(x, y):
    if y < 0:
        return numba.int64(0), NEGATIVE_SHIFT
    if x == 0:
        return x, OK
    if y >= 64:
        return numba.int64(0), PAST_64_BITS
    r = numba.int64(numba.uint64(x) << numba.uint64(y))
    return r, OK if r >> y == x else PAST_64_BITS


@numba.njit(nogil=True)
def _rshift(x, y):
    if y < 0:
        return numba.int64(0), NEGATIVE_SHIFT
    return x >> min(y, 63), OK  # past 63 bits Python's result is all sign bits too


@numba.njit(nogil=True)
def _neg(x):
    return numba.int64(numba.uint64(0) - numba.uint64(x)), OK if x != INT64_MIN else PAST_64_BITS


@numba.njit(nogil=True)
def _abs(x):
    return _neg(x) if x < 0 else (x, OK)


@numba.njit(nogil=True)
def _within_2_53(x):
    """An integer a float holds exactly (its value meets a float in the nest), or past 2**53."""
    return x, OK if -2 ** 53 <= x <= 2 ** 53 else PAST_64_BITS


@numba.njit(nogil=True)
def _gcd(x, y):
    g = math.gcd(x, y)  # negative only as gcd(INT64_MIN, 0 or INT64_MIN) = 2**63, wrapped
    return g, OK if g >= 0 else PAST_64_BITS


@numba.njit(nogil=True)
def _truediv(x, y):
    """Python's int / int, correctly rounded, where compiled code rounds each operand to a float
    first: the same where both are floats exactly (IEEE division rounds once), else no value."""
    if y == 0:
        return 0.0, ZERO_DIVISOR
    fx, fy = numba.float64(x), numba.float64(y)
    exact = fx < _TWO_63 and fy < _TWO_63 and numba.int64(fx) == x and numba.int64(fy) == y
    return fx / fy, OK if exact else PAST_64_BITS


@numba.njit(nogil=True)
def _integral(x):
    """An integral float as a 64-bit integer (Python raises for NaN and the infinities)."""
    if x != x or x == math.inf or x == -math.inf:
        return numba.int64(0), NO_INTEGER
    if not -_TWO_63 <= x < _TWO_63:
        return numba.int64(0), PAST_64_BITS
    return numba.int64(x), OK


@numba.njit(nogil=True)
def _trunc(x):
    return _integral(np.trunc(x))  # np.: math.trunc of a float is already a (wrapped) integer


@numba.njit(nogil=True)
def _floor(x):
    return _integral(np.floor(x))


@numba.njit(nogil=True)
def _ceil(x):
    return _integral(np.ceil(x))


@numba.njit(nogil=True)
def _round(x):
    if abs(x) < 4503599627370496.0:  # below 2**52: round half to even, as Python
        return numba.int64(round(x)), OK
    return _integral(x)  # every float this large is an integer already (or NaN, an infinity)


@numba.njit(nogil=True)
def _float_pow(x, y):
    """Python's ``float(x) ** float(y)`` (CPython's float_pow): ZERO_DIVISOR for ``0.0 ** negative``,
    COMPLEX for a negative base and a finite fractional exponent, FLOAT_OVERFLOW for a finite power
    past the floats; C's ``pow`` agrees with Python on NaN, the infinities and every other case."""
    x, y = numba.float64(x), numba.float64(y)
    finite = not (math.isinf(x) or math.isnan(x) or math.isinf(y) or math.isnan(y))
    if finite and y != 0:
        if x == 0 and y < 0:
            return 0.0, ZERO_DIVISOR
        if x < 0 and y != np.floor(y):  # np.: math.floor(1e300) would pass through int64
            return 0.0, COMPLEX
    value = x ** y
    if finite and math.isinf(value):
        return value, FLOAT_OVERFLOW
    return value, OK


@numba.njit(nogil=True)
def _settled(result, left, where):
    """The value of ``result`` (value, reason), or raise as Python would or for ``reason``."""
    value, reason = result
    if reason == OK:
        return value
    if reason == ZERO_DIVISOR:
        raise ZeroDivisionError("integer division or modulo by zero")
    if reason == NEGATIVE_SHIFT:
        raise ValueError("negative shift count")
    if reason == NO_INTEGER:
        raise ValueError("cannot convert NaN or an infinity to an integer")
    if reason == FLOAT_OVERFLOW:
        raise OverflowError("numerical result out of range")
    if left is not None:  # past 64 bits; or no integer, or complex: no value compiled code gives
        left[0] = where if reason == PAST_64_BITS else -where
    raise OverflowError("no 64-bit integer holds Python's result")


def _integers(*types_) -> bool:
    return all(isinstance(t, numba.types.Boolean) or isinstance(t, numba.types.Integer) and t.signed
               for t in types_)


def _binary(exact, plain, floats=None):
    """``op(a, b, left=None, where=0)`` for the generated code: ``exact`` on integers (njit,
    giving (value, reason)), ``floats`` (the same) on other numbers when given, ``plain`` (an
    ``operator`` function) on anything else."""
    def op(a, b, left=None, where=0):
        return plain(a, b)

    @overload(op, jit_options={"nogil": True})
    def compiled(a, b, left=None, where=0):
        numbers = all(isinstance(t, (numba.types.Number, numba.types.Boolean)) for t in (a, b))
        if floats is not None and numbers and not _integers(a, b):
            return lambda a, b, left=None, where=0: _settled(floats(a, b), left, where)
        if not _integers(a, b):
            return lambda a, b, left=None, where=0: plain(a, b)
        return lambda a, b, left=None, where=0: _settled(exact(numba.int64(a), numba.int64(b)), left, where)
    return op


def _unary(exact, plain, converts: bool = False):
    """``op(a, left=None, where=0)``: as :func:`_binary`; one that ``converts`` a float to an
    integer applies ``exact`` to floats and is the identity on integers."""
    def op(a, left=None, where=0):
        return plain(a)

    @overload(op, jit_options={"nogil": True})
    def compiled(a, left=None, where=0):
        if _integers(a):
            if converts:
                return lambda a, left=None, where=0: numba.int64(a)
            return lambda a, left=None, where=0: _settled(exact(numba.int64(a)), left, where)
        if converts and isinstance(a, numba.types.Float):
            return lambda a, left=None, where=0: _settled(exact(a), left, where)
        return lambda a, left=None, where=0: plain(a)
    return op


int_add, int_sub, int_mul = _binary(_add, operator.add), _binary(_sub, operator.sub), _binary(_mul, operator.mul)
int_floordiv, int_mod = _binary(_floordiv, operator.floordiv), _binary(_mod, operator.mod)
int_truediv = _binary(_truediv, operator.truediv)
int_dividend = _binary(_dividend, _first)  # the nest's a // b on a space function's value
int_pow = _binary(_pow, operator.pow, _float_pow)
int_lshift, int_rshift = _binary(_lshift, operator.lshift), _binary(_rshift, operator.rshift)
int_neg, int_abs = _unary(_neg, operator.neg), _unary(_abs, abs)
int_of, int_round = _unary(_trunc, int, converts=True), _unary(_round, round, converts=True)
int_floor, int_ceil = _unary(_floor, math.floor, converts=True), _unary(_ceil, math.ceil, converts=True)
int_trunc = _unary(_trunc, math.trunc, converts=True)
int_gcd = _binary(_gcd, math.gcd)
int_exact = _unary(_within_2_53, operator.pos)  # a helper's result meeting a float (mixed_numbers)


def _choice(plain):
    """``op(a, b, left=None, where=0)``: ``plain`` (min or max) of two numbers of one kind; an
    integer (or bool) against a float raises, ``left`` set to ``-where``: Python's result keeps the
    type of the argument it picks (``min(3, 4.5)`` is the int 3), compiled code's is a float."""
    def op(a, b, left=None, where=0):
        return plain(a, b)

    @overload(op, jit_options={"nogil": True})
    def compiled(a, b, left=None, where=0):
        whole = (numba.types.Integer, numba.types.Boolean)
        if (isinstance(a, whole) and isinstance(b, numba.types.Float)) or (
                isinstance(a, numba.types.Float) and isinstance(b, whole)):
            def mixed(a, b, left=None, where=0):
                if left is not None:
                    left[0] = -where
                if where == where:  # always: a test the typer keeps, so the int below types it
                    raise OverflowError("min() or max() of an integer and a float")
                return 0  # never reached: an int for the typer, which range() also takes
            return mixed
        return lambda a, b, left=None, where=0: plain(a, b)
    return op


int_min, int_max = _choice(min), _choice(max)


def int_span(start, stop, step, left=None, where=0):
    """``range(*int_span(start, stop, step))`` in the generated code: the range's arguments, which
    must leave ``stop - start`` inside 64 bits (Numba's range computes it, then counts nothing)."""
    return start, stop, step


@overload(int_span, jit_options={"nogil": True})
def _compiled_span(start, stop, step, left=None, where=0):
    if not _integers(start, stop, step):
        return lambda start, stop, step, left=None, where=0: (start, stop, step)

    def span(start, stop, step, left=None, where=0):
        _settled(_sub(numba.int64(stop), numba.int64(start)), left, where)
        return numba.int64(start), numba.int64(stop), numba.int64(step)
    return span


# -- comparisons of an integer with a float, exact as in Python -----------------------------------
# Python compares an int with a float exactly; compiled code rounds the int to a float first
# (``2**53 + 1 == 2.0**53`` is False in Python, True compiled). The ``cmp_*`` functions a helper's
# comparisons become (analysis.checked_helpers) compare such a pair exactly; anything else plainly.
@numba.njit(nogil=True)
def _order(i, f):
    """-1, 0 or 1 as the integer ``i`` is below, equal to or above the float ``f``; 2: ``f`` is NaN."""
    if f != f:
        return 2
    if f >= _TWO_63:
        return -1
    if f < -_TWO_63:
        return 1
    whole = np.trunc(f)
    t = numba.int64(whole)  # exact: inside the 64-bit range
    if i != t:
        return -1 if i < t else 1
    return 0 if f == whole else (-1 if f > whole else 1)


def _comparison(plain, holds):
    """``cmp(a, b)``: ``plain`` (an ``operator`` comparison), exact between an integer and a float,
    where ``holds(order)`` tells from :func:`_order` of the integer and the float whether it holds
    with the integer on the left."""
    def cmp(a, b):
        return plain(a, b)

    held = numba.njit(nogil=True)(holds)

    @overload(cmp, jit_options={"nogil": True})
    def compiled(a, b):
        integer, floating = numba.types.Integer, numba.types.Float
        if isinstance(a, integer) and isinstance(b, floating):
            return lambda a, b: held(_order(numba.int64(a), b))
        if isinstance(a, floating) and isinstance(b, integer):
            return lambda a, b: held(-_order(numba.int64(b), a))  # NaN: -2, unordered too
        return lambda a, b: plain(a, b)
    return cmp


cmp_lt = _comparison(operator.lt, lambda order: order == -1)
cmp_le = _comparison(operator.le, lambda order: order == -1 or order == 0)
cmp_gt = _comparison(operator.gt, lambda order: order == 1)
cmp_ge = _comparison(operator.ge, lambda order: order == 1 or order == 0)
cmp_eq = _comparison(operator.eq, lambda order: order == 0)
cmp_ne = _comparison(operator.ne, lambda order: order != 0)


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


def sequence_len(values):
    """``len(values)`` (a space function's helper calls this): Python's raises TypeError for a
    number, where Numba's cannot type it (the count stopped with a compiler's dump)."""
    return len(values)


overload(sequence_min)(_one_argument(min))
overload(sequence_max)(_one_argument(max))


@overload(sequence_len)
def _sequence_len(values):
    if isinstance(values, (types.Number, types.Boolean)):
        def refuse(values):  # returns an int to the typer; never returns
            if values == values or values != values:
                raise TypeError("len() of a number: it takes a sequence")
            return 0
        return refuse
    return lambda values: len(values)


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
