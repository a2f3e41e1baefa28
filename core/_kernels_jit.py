"""Compiled kernel arithmetic (Numba); the public interface is :mod:`core.kernels`.

Every routine here computes each kernel value as a deterministic function of
its two feature vectors alone: the same bits whichever routine computes it
(one row, a block of any shape or offset, dense or sparse storage), whatever
the thread count, on any IEEE-754 machine.  That is what makes "resume equals
never stopping" hold by construction: a value that was a cache hit before a
restart and is recomputed after it, through another path, is the same value.

How, concretely:

* **One summation order.**  An inner product <a, b> (and the min-sum of the
  Tanimoto kernel) is accumulated in eight stripes: stripe r sums the terms of
  the features k with k mod 8 = r, in increasing k, each term a_k * b_k
  rounded to float64 before it is added; the result is
  ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).  ``stripe_reference``
  below spells it out in plain Python; the tests compare every routine with it
  bit for bit.  The eight stripes of one entry are independent, so they fill
  a vector register without reassociating any sum.
* **No fused multiply-add, no fast-math.**  Numba's default (``fastmath=False``)
  keeps every multiplication and addition a separately rounded IEEE
  operation; LLVM contracts a*b + c into an FMA only under fast-math flags.
  The reference tests would fail on a machine where that were not so.
* **Register tiles.**  A block is computed in tiles of 4 x 2 entries whose
  4 x 2 x 8 stripe sums stay in registers while the features stream by; the
  rows and columns left over are computed one entry at a time.  Both give the
  same bits (each entry has its own eight sums, in the same order).
* **Sparse rows give the dense bits.**  On a CSR row the terms of the common
  nonzero features are added to stripe k mod 8 in increasing k.  The dense sum
  adds, in between, products with a zero factor (+0 or -0); adding a signed
  zero leaves a nonzero partial sum unchanged and leaves +0 at +0, and a
  stripe that starts at +0 is never -0 (x + y is -0 only when both are -0),
  so both give the same bits (tested).
* **Float32 storage**: each factor is widened to float64 (exactly) before the
  product; sums are float64.
* **Our own exp and integer power.**  The rbf kernel's exp and the polynomial
  kernel's power are computed here (fdlibm's exp algorithm, error below 1 ulp;
  the power by repeated squaring) rather than by ``np.exp`` / libm, whose
  results can depend on the CPU (NumPy dispatches AVX-512, AVX2 or scalar
  exp loops, glibc has FMA variants of exp and pow).
* **Symmetric**: a*b == b*a and x + y == y + x in IEEE arithmetic, so
  K(a, b) and K(b, a) are the same bits, and <a, a> is bit for bit the
  squared norm the store keeps, so an rbf K(x, x) is exactly 1.

Compilation.  :func:`routine` compiles each routine on first use for the
argument types :mod:`core.kernels` passes (dense float64 or float32
C-contiguous rows, CSR with int64 ``indptr`` and int32 ``indices``, intp
index arrays), with Numba's on-disk cache (``cache=True``: the next process
loads the machine code instead of compiling); nothing else is compiled (a
call with other types raises ``TypeError``).  They are compiled
with LLVM's SLP vectoriser, which Numba leaves off by default (numba#8852:
miscompilations in some LLVM versions): it is what turns the eight stripes
into vector operations (about 7x faster here).  The setting is scoped to
these functions, and the bit-for-bit reference tests over every routine,
shape remainder, dtype and storage would catch a miscompilation.

Routines take index arrays into the stored matrices instead of gathered
copies, so no block of rows is ever copied to compute against it.  All are
``nogil``: :mod:`core.kernels` runs large blocks on several threads by giving
each thread its own rows of the output.
"""

from __future__ import annotations

import threading
from typing import Literal, TypedDict

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import config as numba_config
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic

LINEAR, POLY, RBF, TANIMOTO = 0, 1, 2, 3
KIND = {"linear": LINEAR, "poly": POLY, "rbf": RBF, "tanimoto": TANIMOTO}


class _Options(TypedDict, total=False):
    """The keyword arguments of ``njit`` used here (typed, so that the type checker checks each one)."""

    nogil: bool
    cache: bool
    fastmath: bool
    boundscheck: bool
    error_model: Literal["python", "numpy"]
    inline: Literal["never", "always"]


_JIT: _Options = dict(nogil=True, cache=True, fastmath=False, boundscheck=False, error_model="numpy")
_INLINE: _Options = dict(inline="always", fastmath=False, boundscheck=False, error_model="numpy")
# (compiled with the caller)
_CALLED: _Options = dict(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
_Z8 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- the reference
def stripe_reference(a, b, minsum: bool = False) -> float:
    """The summation order of every routine here, in plain Python floats (for the tests)."""
    s = [0.0] * 8
    for k in range(len(a)):
        x, y = float(a[k]), float(b[k])
        s[k % 8] += min(x, y) if minsum else x * y
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


# --------------------------------------------------------------------------- scalar pieces
@intrinsic
def _f64_from_bits(typingctx, bits):
    """The float64 whose IEEE bit pattern is the int64 ``bits``."""
    if not isinstance(bits, types.Integer):
        return None
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
_EXP_UNDERFLOW = -7.45133219101941108420e02  # below it exp(x) rounds to 0
_TWO_M1000 = 9.33263618503218878990e-302  # 2**-1000


@njit(**_INLINE)
def exp_nonpositive(x):
    """exp(x) for x <= 0 (the rbf kernel's argument), fdlibm's algorithm (error < 1 ulp).

    x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is exact to
    about 2^-60); exp(r) from fdlibm's rational approximation; scaled by 2^k
    through the exponent bits (in two steps when the result is subnormal).
    """
    xc = max(x, _EXP_UNDERFLOW)
    k = np.floor(xc * _INV_LN2 + 0.5)
    hi = xc - k * _LN2_HI  # exact: k has at most 11 bits, _LN2_HI 32
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    ki = np.int64(k)
    normal = ki >= -1021
    scaled = y * _f64_from_bits(((ki + 1023) if normal else (ki + 2023)) << 52)
    value = scaled if normal else scaled * _TWO_M1000
    return 0.0 if x < _EXP_UNDERFLOW else value


@njit(**_INLINE)
def int_power(x, n):
    """x ** n for an integer n >= 1, by repeated squaring (a fixed sequence of products)."""
    result = 1.0
    base = x
    while n > 0:
        if n & 1:
            result = result * base
        n >>= 1
        if n > 0:
            base = base * base
    return result


@njit(**_INLINE)
def kernel_value(g, ta, tb, kind, gamma, coef0, degree):
    """K from the inner product g (min-sum for tanimoto) and the row terms ta, tb.

    Row terms: squared norms (linear, poly, rbf), sums of the features (tanimoto).
    rbf: exp(-gamma * max(0, (ta + tb) - 2 g)); poly: (gamma g + coef0)^degree;
    tanimoto: g / ((ta + tb) - g), and 1 when both vectors are 0.
    """
    if kind == LINEAR:
        return g
    if kind == RBF:
        d = (ta + tb) - 2.0 * g
        d = d if d > 0.0 else 0.0  # rounding can make a squared distance slightly negative
        return exp_nonpositive(-(gamma * d))
    if kind == POLY:
        return int_power(gamma * g + coef0, degree)
    union = (ta + tb) - g
    return 1.0 if union == 0.0 else g / union


@njit(**_INLINE)
def _transform_row(row, t, tb, kind, gamma, coef0, degree):
    """row[q] = K from the inner product row[q] and the row terms t, tb[q] (in place)."""
    n = len(row)
    if kind == LINEAR:
        return
    if kind == RBF:
        for q in range(n):
            d = (t + tb[q]) - 2.0 * row[q]
            d = d if d > 0.0 else 0.0
            row[q] = exp_nonpositive(-(gamma * d))
    elif kind == POLY:
        for q in range(n):
            row[q] = int_power(gamma * row[q] + coef0, degree)
    else:
        for q in range(n):
            g = row[q]
            union = (t + tb[q]) - g
            row[q] = 1.0 if union == 0.0 else g / union


# --------------------------------------------------------------------------- the eight stripes
@njit(**_INLINE)
def _mac8(s, a, b, k):
    """The eight stripe sums s plus the products of features k..k+7 of a and b."""
    return (
        s[0] + np.float64(a[k]) * np.float64(b[k]),
        s[1] + np.float64(a[k + 1]) * np.float64(b[k + 1]),
        s[2] + np.float64(a[k + 2]) * np.float64(b[k + 2]),
        s[3] + np.float64(a[k + 3]) * np.float64(b[k + 3]),
        s[4] + np.float64(a[k + 4]) * np.float64(b[k + 4]),
        s[5] + np.float64(a[k + 5]) * np.float64(b[k + 5]),
        s[6] + np.float64(a[k + 6]) * np.float64(b[k + 6]),
        s[7] + np.float64(a[k + 7]) * np.float64(b[k + 7]),
    )


@njit(**_INLINE)
def _fmin(x, y):
    """min(x, y) as a select (a vector min instruction); on ties it may return either signed zero,
    which changes no sum (see ``_tail8``)."""
    return x if x < y else y


@njit(**_INLINE)
def _min8(s, a, b, k):
    """The eight stripe sums s plus min(a_k, b_k) of features k..k+7.

    (The minimum of two float32 values is one of them, so it is taken before
    widening: the same bits as the minimum of the widened values.)
    """
    return (
        s[0] + _fmin(a[k], b[k]),
        s[1] + _fmin(a[k + 1], b[k + 1]),
        s[2] + _fmin(a[k + 2], b[k + 2]),
        s[3] + _fmin(a[k + 3], b[k + 3]),
        s[4] + _fmin(a[k + 4], b[k + 4]),
        s[5] + _fmin(a[k + 5], b[k + 5]),
        s[6] + _fmin(a[k + 6], b[k + 6]),
        s[7] + _fmin(a[k + 7], b[k + 7]),
    )


@njit(**_INLINE)
def _term(a, b, d8, rem, r, minsum):
    """The tail term of stripe r: features d8 + r < d, else +0.0 (which leaves a stripe's sum as it is)."""
    k = d8 + r if r < rem else 0  # (always a valid index: d >= 1 here)
    x = np.float64(a[k])
    y = np.float64(b[k])
    t = _fmin(x, y) if minsum else x * y
    return t if r < rem else 0.0


@njit(**_INLINE)
def _tail8(s, a, b, d8, d, minsum):
    """Features d8..d-1 (fewer than 8) into stripes 0..d-d8-1.

    Branch-free: every stripe gets a term, +0.0 for those without a feature
    left.  A stripe's sum is never -0.0 (it starts at +0.0, and x + y is -0.0
    only when both are), so adding +0.0 changes no bit.
    """
    rem = d - d8
    return (
        s[0] + _term(a, b, d8, rem, 0, minsum),
        s[1] + _term(a, b, d8, rem, 1, minsum),
        s[2] + _term(a, b, d8, rem, 2, minsum),
        s[3] + _term(a, b, d8, rem, 3, minsum),
        s[4] + _term(a, b, d8, rem, 4, minsum),
        s[5] + _term(a, b, d8, rem, 5, minsum),
        s[6] + _term(a, b, d8, rem, 6, minsum),
        s[7],
    )


@njit(**_INLINE)
def _sum8(s):
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


@njit(**_CALLED)
def _finish8(s, a, b, d8, d, minsum):
    """The tail features d8..d-1 into the stripes s, then their sum."""
    return _sum8(_tail8(s, a, b, d8, d, minsum))


@njit(**_INLINE)
def _term0(a, b, r, minsum):
    """+0.0 plus the term of feature r: what stripe r holds when it has that single feature."""
    x = np.float64(a[r])
    y = np.float64(b[r])
    return 0.0 + (_fmin(x, y) if minsum else x * y)


@njit(**_INLINE)
def _dot_small(a, b, d, minsum):
    """``_dot_dense`` for d < 8 features, straight-line: stripe r holds 0.0 + (term r) or 0.0."""
    s0 = _term0(a, b, 0, minsum) if d > 0 else 0.0
    s1 = _term0(a, b, 1, minsum) if d > 1 else 0.0
    s2 = _term0(a, b, 2, minsum) if d > 2 else 0.0
    s3 = _term0(a, b, 3, minsum) if d > 3 else 0.0
    s4 = _term0(a, b, 4, minsum) if d > 4 else 0.0
    s5 = _term0(a, b, 5, minsum) if d > 5 else 0.0
    s6 = _term0(a, b, 6, minsum) if d > 6 else 0.0
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + 0.0))


@njit(**_INLINE)
def _dot_main(a, b, d, minsum, tail):
    """<a, b> (or sum min(a_k, b_k)) of two 1-D rows of d >= 8 features in the stripe order.

    ``tail`` (a constant where it is inlined): whether d is not a multiple of 8.
    """
    d8 = d - (d & 7)
    s = _Z8
    if minsum:
        for k in range(0, d8, 8):
            s = _min8(s, a, b, k)
    else:
        for k in range(0, d8, 8):
            s = _mac8(s, a, b, k)
    if tail:
        return _finish8(s, a, b, d8, d, minsum)
    return _sum8(s)


@njit(**_CALLED)
def _dot_dense(a, b, d, minsum):
    """<a, b> (or sum min(a_k, b_k)) of two 1-D rows of any length in the stripe order."""
    if d < 8:
        return _dot_small(a, b, d, minsum)
    if d & 7:
        return _dot_main(a, b, d, minsum, True)
    return _dot_main(a, b, d, minsum, False)


# --------------------------------------------------------------------------- dense rows
def dense_row_terms(X, rows, minsum, out):
    """out[p] = <x, x> (squared norm) or, with minsum, the sum of x, for x = X[rows[p]]."""
    d = X.shape[1]
    for p in range(len(rows)):
        x = X[rows[p]]
        out[p] = _dot_dense(x, x, d, minsum)


@njit(**_INLINE)
def _rows(A, ia, B, ib, out, minsum):
    """One entry at a time, for rows of d >= 8 features (two copies of the loop, as in ``_tiles``)."""
    if A.shape[1] & 7:
        _row_loop(A, ia, B, ib, out, minsum, True)
    else:
        _row_loop(A, ia, B, ib, out, minsum, False)


@njit(**_INLINE)
def _row_loop(A, ia, B, ib, out, minsum, tail):
    """Four rows of A at a time against each row of B: four independent chains of vector sums
    (one entry alone waits on the latency of each addition)."""
    d = A.shape[1]
    d8 = d - (d & 7)
    m, n = len(ia), len(ib)
    for p in range(0, m - 3, 4):
        a0 = A[ia[p]]
        a1 = A[ia[p + 1]]
        a2 = A[ia[p + 2]]
        a3 = A[ia[p + 3]]
        for q in range(n):
            b = B[ib[q]]
            s0 = s1 = s2 = s3 = _Z8
            if minsum:
                for k in range(0, d8, 8):
                    s0 = _min8(s0, a0, b, k)
                    s1 = _min8(s1, a1, b, k)
                    s2 = _min8(s2, a2, b, k)
                    s3 = _min8(s3, a3, b, k)
            else:
                for k in range(0, d8, 8):
                    s0 = _mac8(s0, a0, b, k)
                    s1 = _mac8(s1, a1, b, k)
                    s2 = _mac8(s2, a2, b, k)
                    s3 = _mac8(s3, a3, b, k)
            if tail:
                out[p, q] = _finish8(s0, a0, b, d8, d, minsum)
                out[p + 1, q] = _finish8(s1, a1, b, d8, d, minsum)
                out[p + 2, q] = _finish8(s2, a2, b, d8, d, minsum)
                out[p + 3, q] = _finish8(s3, a3, b, d8, d, minsum)
            else:
                out[p, q] = _sum8(s0)
                out[p + 1, q] = _sum8(s1)
                out[p + 2, q] = _sum8(s2)
                out[p + 3, q] = _sum8(s3)
    for p in range(m - (m & 3), m):
        a = A[ia[p]]
        for q in range(n):
            out[p, q] = _dot_dense(a, B[ib[q]], d, minsum)


@njit(**_INLINE)
def _rows_small(A, ia, B, ib, out, minsum):
    """One entry at a time, for rows of fewer than 8 features (one short straight-line sum each)."""
    d = A.shape[1]
    for p in range(len(ia)):
        a = A[ia[p]]
        row = out[p]
        for q in range(len(ib)):
            row[q] = _dot_small(a, B[ib[q]], d, minsum)


@njit(**_INLINE)
def _tiles(A, ia, B, ib, out, minsum):
    """Inner products (min-sums) of A[ia] and B[ib] in register tiles of 4 x 2 entries.

    Two copies of the tile loop: without tail code when the number of features
    is a multiple of 8 (its mere presence keeps LLVM from vectorising the
    min-sums), with it otherwise.
    """
    if A.shape[1] & 7:
        _tile_loop(A, ia, B, ib, out, minsum, True)
    else:
        _tile_loop(A, ia, B, ib, out, minsum, False)


@njit(**_INLINE)
def _tile_loop(A, ia, B, ib, out, minsum, tail):
    d = A.shape[1]  # (>= 8: fewer features go to _rows_small)
    d8 = d - (d & 7)
    m, n = len(ia), len(ib)
    # (the loop bounds are written m - 3 and n - 1: LLVM vectorises this loop nest several times
    # slower when they are m - (m & 3) and n - (n & 1), and when the leftover columns are done inside it)
    # Column blocks of about 256 KB of B's rows, so that they stay in the CPU cache while every
    # tile of A's rows passes over them (one pass over a large B per tile would be memory-bound).
    block = max(2, (262144 // (8 * d)) & ~1)
    for q_start in range(0, n - 1, block):
        q_stop = min(n - 1, q_start + block)
        for p in range(0, m - 3, 4):
            a0 = A[ia[p]]
            a1 = A[ia[p + 1]]
            a2 = A[ia[p + 2]]
            a3 = A[ia[p + 3]]
            for q in range(q_start, q_stop, 2):
                b0 = B[ib[q]]
                b1 = B[ib[q + 1]]
                s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = _Z8
                if minsum:
                    for k in range(0, d8, 8):
                        s00 = _min8(s00, a0, b0, k)
                        s01 = _min8(s01, a0, b1, k)
                        s10 = _min8(s10, a1, b0, k)
                        s11 = _min8(s11, a1, b1, k)
                        s20 = _min8(s20, a2, b0, k)
                        s21 = _min8(s21, a2, b1, k)
                        s30 = _min8(s30, a3, b0, k)
                        s31 = _min8(s31, a3, b1, k)
                else:
                    for k in range(0, d8, 8):
                        s00 = _mac8(s00, a0, b0, k)
                        s01 = _mac8(s01, a0, b1, k)
                        s10 = _mac8(s10, a1, b0, k)
                        s11 = _mac8(s11, a1, b1, k)
                        s20 = _mac8(s20, a2, b0, k)
                        s21 = _mac8(s21, a2, b1, k)
                        s30 = _mac8(s30, a3, b0, k)
                        s31 = _mac8(s31, a3, b1, k)
                if tail:  # (the tail features through a called function: eight inlined copies
                    # make LLVM vectorise the main loop worse and compile for minutes)
                    out[p, q] = _finish8(s00, a0, b0, d8, d, minsum)
                    out[p, q + 1] = _finish8(s01, a0, b1, d8, d, minsum)
                    out[p + 1, q] = _finish8(s10, a1, b0, d8, d, minsum)
                    out[p + 1, q + 1] = _finish8(s11, a1, b1, d8, d, minsum)
                    out[p + 2, q] = _finish8(s20, a2, b0, d8, d, minsum)
                    out[p + 2, q + 1] = _finish8(s21, a2, b1, d8, d, minsum)
                    out[p + 3, q] = _finish8(s30, a3, b0, d8, d, minsum)
                    out[p + 3, q + 1] = _finish8(s31, a3, b1, d8, d, minsum)
                else:
                    out[p, q] = _sum8(s00)
                    out[p, q + 1] = _sum8(s01)
                    out[p + 1, q] = _sum8(s10)
                    out[p + 1, q + 1] = _sum8(s11)
                    out[p + 2, q] = _sum8(s20)
                    out[p + 2, q + 1] = _sum8(s21)
                    out[p + 3, q] = _sum8(s30)
                    out[p + 3, q + 1] = _sum8(s31)
    m4 = m - (m & 3)
    n2 = n - (n & 1)
    for p in range(m4):  # the last column, when n is odd
        a = A[ia[p]]
        for q in range(n2, n):
            out[p, q] = _dot_dense(a, B[ib[q]], d, minsum)
    for p in range(m4, m):  # the last rows, when m is not a multiple of 4
        a = A[ia[p]]
        for q in range(n):
            out[p, q] = _dot_dense(a, B[ib[q]], d, minsum)


@njit(**_CALLED)
def _transform(out, ta, tb, kind, gamma, coef0, degree):
    m = out.shape[0]
    if out.shape[1] == 1 and m > 1:
        # one column (a kernel row asked for as a column, the long side split across threads):
        # transformed as one vector, so the exponentials are computed several at a time.  The
        # same bits: the row terms are only added, t + tb[q] == tb[q] + t
        _transform_row(out.reshape(m), tb[0], ta, kind, gamma, coef0, degree)
        return
    for p in range(m):
        _transform_row(out[p], ta[p], tb, kind, gamma, coef0, degree)


def dense_rows(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """out[p, q] = K(A[ia[p]], B[ib[q]]) for linear / poly / rbf, one entry at a time (d >= 8 features).

    ``ta`` / ``tb``: row terms of A[ia] / B[ib] (aligned with ia / ib).
    """
    _rows(A, ia, B, ib, out, False)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


def dense_rows_min(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """``dense_rows`` for tanimoto (min-sums)."""
    _rows(A, ia, B, ib, out, True)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


def dense_small(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """``dense_rows`` for rows of fewer than 8 features (linear / poly / rbf)."""
    _rows_small(A, ia, B, ib, out, False)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


def dense_small_min(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """``dense_small`` for tanimoto (min-sums)."""
    _rows_small(A, ia, B, ib, out, True)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


def dense_block(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """``dense_rows`` in register tiles of 4 x 2 entries (the same bits, faster on blocks)."""
    _tiles(A, ia, B, ib, out, False)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


def dense_block_min(A, ia, ta, B, ib, tb, kind, gamma, coef0, degree, out):
    """``dense_block`` for tanimoto (min-sums)."""
    _tiles(A, ia, B, ib, out, True)
    _transform(out, ta, tb, kind, gamma, coef0, degree)


# --------------------------------------------------------------------------- sparse (CSR) rows
def csr_row_terms(indptr, indices, data, rows, minsum, out):
    """``dense_row_terms`` for CSR rows (the same bits as the dense row)."""
    acc = np.empty(8)
    for p in range(len(rows)):
        i = rows[p]
        acc[:] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            x = np.float64(data[t])
            acc[indices[t] & 7] += x if minsum else x * x
        out[p] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


def csr_rows(a_ptr, a_ind, a_dat, ia, ta, b_ptr, b_ind, b_dat, ib, tb, d, kind, gamma, coef0, degree, out):
    """out[p, q] = K(A[ia[p]], B[ib[q]]) for CSR matrices with sorted column indices.

    Each left-hand row is scattered into a dense work vector; the right-hand
    row's nonzeros, in increasing feature order, are added to their stripes
    (features the left row lacks add a signed zero, which changes nothing).
    """
    minsum = kind == TANIMOTO
    w = np.zeros(d)
    acc = np.empty(8)
    for p in range(len(ia)):
        i = ia[p]
        for t in range(a_ptr[i], a_ptr[i + 1]):
            w[a_ind[t]] = np.float64(a_dat[t])
        row = out[p]
        for q in range(len(ib)):
            j = ib[q]
            acc[:] = 0.0
            if minsum:
                for t in range(b_ptr[j], b_ptr[j + 1]):
                    k = b_ind[t]
                    acc[k & 7] += _fmin(w[k], np.float64(b_dat[t]))
            else:
                for t in range(b_ptr[j], b_ptr[j + 1]):
                    k = b_ind[t]
                    acc[k & 7] += w[k] * np.float64(b_dat[t])
            row[q] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        _transform_row(row, ta[p], tb, kind, gamma, coef0, degree)
        for t in range(a_ptr[i], a_ptr[i + 1]):
            w[a_ind[t]] = 0.0


def csr_rows_inverted(
    a_ptr, a_ind, a_dat, ia, ta, t_ptr, t_row, t_dat, j0, j1, ib, tb, kind, gamma, coef0, degree, out
):
    """out[p, q] = K(A[ia[p]], B[ib[q]]) for rows ib of B in j0..j1-1, B given column by column (CSC).

    An inverted index: for each nonzero feature k of the left-hand row, in
    increasing k, the rows of B that have feature k (``t_row[t_ptr[k]:t_ptr[k+1]]``,
    sorted) get the term added to their stripe k mod 8, so every entry sums its
    common features in increasing order, as the dense sum does.  The work is
    the number of (feature, row) pairs the two share, not the size of B.  Only
    rows j0 <= j < j1 are visited (found by bisection in each feature's list),
    so the work arrays stay small however large B is.
    """
    minsum = kind == TANIMOTO
    width = j1 - j0
    acc = np.zeros((width, 8))
    g = np.zeros(width)
    touched = np.empty(width, dtype=np.int64)
    seen = np.zeros(width, dtype=np.bool_)
    for p in range(len(ia)):
        i = ia[p]
        nt = 0
        for t in range(a_ptr[i], a_ptr[i + 1]):
            k = a_ind[t]
            x = np.float64(a_dat[t])
            r = k & 7
            start = t_ptr[k]
            column = t_row[start : t_ptr[k + 1]]
            lo = start + np.searchsorted(column, j0)
            hi = start + np.searchsorted(column, j1)
            for u in range(lo, hi):
                j = t_row[u] - j0
                if not seen[j]:
                    seen[j] = True
                    touched[nt] = j
                    nt += 1
                v = np.float64(t_dat[u])
                acc[j, r] += _fmin(x, v) if minsum else x * v
        for e in range(nt):
            j = touched[e]
            a8 = acc[j]
            g[j] = ((a8[0] + a8[1]) + (a8[2] + a8[3])) + ((a8[4] + a8[5]) + (a8[6] + a8[7]))
            a8[:] = 0.0
            seen[j] = False
        row = out[p]
        for q in range(len(ib)):
            row[q] = g[ib[q] - j0]
        _transform_row(row, ta[p], tb, kind, gamma, coef0, degree)
        for e in range(nt):
            g[touched[e]] = 0.0


# --------------------------------------------------------------------------- sums that feed solver state
def rows_dot(M, v, out):
    """out[p] = sum_q M[p, q] v[q] in the stripe order (decision values from a kernel block)."""
    n = M.shape[1]
    for p in range(M.shape[0]):
        out[p] = _dot_dense(M[p], v, n, False)


def dot(a, b):
    """<a, b> of two 1-D arrays in the stripe order."""
    return _dot_dense(a, b, len(a), False)


def add_weighted_rows(f, rows, slots, weights, extra, d, k, start, stop):
    """f[j] = (((f[j] + d[0] extra[0][j]) + ...) + d[k-1] extra[k-1][j]) + sum_t weights[t] * rows[slots[t], j]
    for start <= j < stop, in one pass over f: first the k (0..EXTRA_ROWS) rows ``extra`` one after the other,
    each product and sum rounded in turn (the bits of ``add_scaled_rows``), then the sum over t in
    the stripe order (stripe t mod 8), which is not added when no weight is nonzero.

    The weighted sum has the same bits as ``rows_dot`` of the transposed rows with ``weights``: the
    loop's pool scores and evaluation scores are decision values summed like
    every other.  Entries are processed in chunks whose stripe sums stay in the
    CPU cache; SIMD lanes are entries, so the bits do not depend on the vector
    width, nor on the range (each entry is summed on its own: ranges may run on
    several threads).  A zero weight adds a signed zero to its stripe, which
    changes nothing, so it is skipped.  float32 rows are widened to float64 before the product
    (the bits of the float64 rows holding the same values).

    A stripe's rows (t, t + 8, t + 16, ...) are added four in one pass over the chunk, each product
    and sum rounded in turn as row by row; and the chunk is read through views that start at it
    (indexed from 0), which LLVM vectorises, where an offset index into the whole row was not:
    3-5x faster, the same bits.  The rows ``extra`` (the loop's rows that are not in its buffer)
    are added to the chunk of f while it is in the CPU cache: one pass over f for the whole update
    instead of one more per four such rows.
    """
    nt = len(slots)
    order = np.empty(nt, np.int64)  # the rows with a weight, stripe after stripe, increasing t in each
    first = np.zeros(9, np.int64)  # stripe s's rows: order[first[s]:first[s + 1]]
    c = 0
    for s in range(8):
        first[s] = c
        for t in range(s, nt, 8):
            if weights[t] != 0.0:
                order[c] = t
                c += 1
    first[8] = c
    chunk = 1024
    work = np.empty((8, chunk))
    for j0 in range(start, stop, chunk):
        m = min(stop, j0 + chunk) - j0
        out = f[j0 : j0 + m]
        for e in range(k):
            de = d[e]
            xe = extra[e][j0 : j0 + m]
            for q in range(m):
                out[q] = out[q] + de * xe[q]
        if c == 0:
            continue
        for s in range(8):
            acc = work[s, :m]
            acc[:] = 0.0
            u = first[s]
            while u < first[s + 1]:
                if first[s + 1] - u >= 4:
                    t0, t1, t2, t3 = order[u], order[u + 1], order[u + 2], order[u + 3]
                    w0, w1, w2, w3 = weights[t0], weights[t1], weights[t2], weights[t3]
                    r0 = rows[slots[t0], j0 : j0 + m]
                    r1 = rows[slots[t1], j0 : j0 + m]
                    r2 = rows[slots[t2], j0 : j0 + m]
                    r3 = rows[slots[t3], j0 : j0 + m]
                    for j in range(m):
                        acc[j] = (((acc[j] + w0 * r0[j]) + w1 * r1[j]) + w2 * r2[j]) + w3 * r3[j]
                    u += 4
                else:
                    w0 = weights[order[u]]
                    r0 = rows[slots[order[u]], j0 : j0 + m]
                    for j in range(m):
                        acc[j] += w0 * r0[j]
                    u += 1
        for q in range(m):
            out[q] += ((work[0, q] + work[1, q]) + (work[2, q] + work[3, q])) + (
                (work[4, q] + work[5, q]) + (work[6, q] + work[7, q])
            )


def add_scaled_rows(f, r0, r1, r2, r3, d, k, start, stop):
    """f[j] = (((f[j] + d[0] r0[j]) + d[1] r1[j]) + ...) over the first k (1..4) rows, start <= j < stop.

    Each product and each sum rounded in turn (no fused multiply-add): the bits of the k NumPy
    updates ``f += d[t] * r_t`` made one after the other, in one pass over f and without their
    temporaries.  Each entry on its own: ranges may run on several threads.
    """
    d0, d1, d2, d3 = d[0], d[1], d[2], d[3]
    if k == 1:
        for j in range(start, stop):
            f[j] = f[j] + d0 * r0[j]
    elif k == 2:
        for j in range(start, stop):
            f[j] = (f[j] + d0 * r0[j]) + d1 * r1[j]
    elif k == 3:
        for j in range(start, stop):
            f[j] = ((f[j] + d0 * r0[j]) + d1 * r1[j]) + d2 * r2[j]
    else:
        for j in range(start, stop):
            f[j] = (((f[j] + d0 * r0[j]) + d1 * r1[j]) + d2 * r2[j]) + d3 * r3[j]


def masked_argmin_abs(f, mask):
    """The i with mask[i] whose |f[i]| is smallest, the lowest such i on ties; -1 when no mask[i]
    (what ``np.argmin(np.abs(f[mask]))`` picks, in one pass and without the gathered copy; a NaN
    score, which the solvers never give, is passed over where NumPy would pick it).  The
    running minimum is compared only where it may change (ten times faster than carrying the index
    and the minimum through every item)."""
    best, k = np.inf, -1
    for i in range(len(f)):
        if mask[i] and abs(f[i]) < best:
            best = abs(f[i])
            k = i
    return k if k >= 0 else _first(mask)


def masked_argmax(f, mask):
    """The i with mask[i] whose f[i] is largest, the lowest such i on ties; -1 when no mask[i]
    (a NaN score is passed over, as in ``masked_argmin_abs``)."""
    best, k = -np.inf, -1
    for i in range(len(f)):
        if mask[i] and f[i] > best:
            best = f[i]
            k = i
    return k if k >= 0 else _first(mask)


@njit(**_INLINE)
def _first(mask):
    """The first i with mask[i] (every score there infinite), or -1."""
    for i in range(len(mask)):
        if mask[i]:
            return i
    return -1


def masked_count_abs_below(f, mask, limit):
    """The number of i with mask[i] and |f[i]| < limit."""
    c = 0
    for i in range(len(f)):
        if mask[i] and abs(f[i]) < limit:
            c += 1
    return c


def diag_values(terms, kind, gamma, coef0, degree, out):
    """out[p] = K(x, x) from the row term t of x: the inner product <x, x> (min-sum for tanimoto) is t."""
    for p in range(len(terms)):
        t = terms[p]
        out[p] = kernel_value(t, t, t, kind, gamma, coef0, degree)


# --------------------------------------------------------------------------- compilation
_f8, _f4, _i8, _b1 = types.float64, types.float32, types.int64, types.boolean


def _ro(dtype, ndim=1):
    """A read-only C-contiguous array type (writable arrays convert to it safely, without a copy)."""
    return types.Array(dtype, ndim, "C", readonly=True)


def _csr(dt):
    return (_ro(_i8), _ro(types.int32), _ro(dt))


_params = (_i8, _f8, _f8, _i8)
EXTRA_ROWS = 16  # the rows outside the buffer that add_weighted_rows adds in its pass (a tuple of this many)


def _signatures(name: str, dtype: str) -> list[tuple]:
    """The argument types routine ``name`` is compiled for, with feature values of ``dtype``.

    Inputs are typed read-only: a writable array converts to that type without a copy.
    """
    idx, vec, out = _ro(types.intp), _ro(_f8), types.Array(_f8, 2, "C")
    work = types.Array(_f8, 1, "C")
    dt = _f8 if dtype == "float64" else _f4
    X = _ro(dt, 2)
    if name == "dense_row_terms":
        return [(X, idx, _b1, work)]
    if name.startswith(("dense_rows", "dense_block", "dense_small")):
        return [(X, idx, vec, X, idx, vec) + _params + (out,)]
    if name == "csr_row_terms":
        return [_csr(dt) + (idx, _b1, work)]
    if name == "csr_rows":
        return [_csr(dt) + (idx, vec) + _csr(dt) + (idx, vec, _i8) + _params + (out,)]
    if name == "csr_rows_inverted":
        return [_csr(dt) + (idx, vec) + _csr(dt) + (_i8, _i8, idx, vec) + _params + (out,)]
    others: dict[str, list[tuple]] = {
        "rows_dot": [(_ro(_f8, 2), vec, work)],
        "dot": [(vec, vec)],
        "add_weighted_rows": [
            (work, _ro(r, 2), idx, vec, types.UniTuple(vec, EXTRA_ROWS), vec, _i8, _i8, _i8) for r in (_f8, _f4)
        ],
        "add_scaled_rows": [(work, vec, vec, vec, vec, vec, _i8, _i8, _i8)],
        "diag_values": [(vec,) + _params + (work,)],
        "masked_argmin_abs": [(vec, _ro(_b1))],
        "masked_argmax": [(vec, _ro(_b1))],
        "masked_count_abs_below": [(vec, _ro(_b1), _f8)],
    }
    return others[name]


_PUBLIC = (
    "dense_row_terms",
    "dense_rows",
    "dense_rows_min",
    "dense_block",
    "dense_block_min",
    "dense_small",
    "dense_small_min",
    "csr_row_terms",
    "csr_rows",
    "csr_rows_inverted",
    "rows_dot",
    "dot",
    "add_weighted_rows",
    "add_scaled_rows",
    "diag_values",
    "masked_argmin_abs",
    "masked_argmax",
    "masked_count_abs_below",
)
_python = {name: globals()[name] for name in _PUBLIC}
ROUTINE_NAMES = _PUBLIC
# (their inputs are float64 sums)
FLOAT64_ONLY = (
    "rows_dot",
    "dot",
    "add_weighted_rows",
    "add_scaled_rows",
    "diag_values",
    "masked_argmin_abs",
    "masked_argmax",
    "masked_count_abs_below",
)
_dispatchers: dict = {}
_compile_lock = threading.Lock()  # guards _being_compiled
_being_compiled: dict[tuple[str, str], threading.Event] = {}  # set when that routine is in _dispatchers (or failed)


def routine(name: str, dtype: str = "float64"):
    """The compiled routine ``name`` for feature values of ``dtype`` ("float64" or "float32").

    Compiled (or loaded from Numba's on-disk cache) on first use, for the
    types of ``_signatures`` only, with the SLP vectoriser switched on for
    this compilation alone (see the module docstring; Numba's compiler lock is
    held meanwhile, so no other compilation sees the setting); further compilation is
    disabled, so a call with other types raises ``TypeError`` instead of
    compiling a variant without it.

    A thread that asks for a routine another thread is compiling (a label during the app's background
    compile) waits for that routine alone, not for Numba's compiler lock: the background, which takes
    the lock again at once for its next routine, would otherwise keep it waiting through that one too.
    """
    key = (name, dtype)
    while True:
        found = _dispatchers.get(key)
        if found is not None:
            return found
        with _compile_lock:
            found = _dispatchers.get(key)
            if found is not None:
                return found
            compiling = _being_compiled.get(key)
            if compiling is None:
                _being_compiled[key] = threading.Event()
        if compiling is not None:
            compiling.wait()  # (then found, or compiled here when that compile failed)
            continue
        try:
            return _compile(name, dtype)
        finally:
            with _compile_lock:
                _being_compiled.pop(key).set()


def _compile(name: str, dtype: str):
    # Numba's compiler lock: the vectoriser setting is global, and a solver loop compiled at the same
    # moment in another thread (the app's background compile, a first label) must not be compiled with it
    with global_compiler_lock:
        # (numba's config sets its settings as module globals at run time: its types do not name them)
        saved = numba_config.SLP_VECTORIZE  # type: ignore[attr-defined]
        numba_config.SLP_VECTORIZE = 1  # type: ignore[attr-defined]
        try:
            found = njit(**_JIT)(_python[name])
            for sig in _signatures(name, dtype):
                found.compile(sig)
            found.disable_compile()
        finally:
            numba_config.SLP_VECTORIZE = saved  # type: ignore[attr-defined]
        _dispatchers[(name, dtype)] = found
    return found
