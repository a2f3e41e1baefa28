"""Kernel throughput of MarginLab's kernel layer against BLAS / NumPy / SciPy, in one table.

    .venv/bin/python benchmarks/bench_kernels.py            # full sizes
    .venv/bin/python benchmarks/bench_kernels.py --quick    # smaller sizes, fewer repeats
    .venv/bin/python benchmarks/bench_kernels.py --cold     # also the first-call cost with an empty Numba cache

Every kernel value MarginLab uses comes from its own compiled routines
(``core.kernels``), which sum each inner product in one fixed order with no
fused multiply-add, so that a value is the same bits whatever the path, the
threads or the CPU (what makes a resumed session exact).  The reference
computes the same kernel values with BLAS (``A @ B.T``, which uses FMA and an
order that depends on the CPU, the block edges and the threads), NumPy's exp,
or SciPy's sparse product.  Without FMA the compiled code does twice the
arithmetic operations of BLAS, so about 2x BLAS is the bound for blocks; rows
(one example against many) are limited by memory bandwidth on both sides.

Rows:
* dense row      K(x_i, X) over a 3,500 x 784 pool (MNIST-sized), rbf
* dense block    K(X[:500], X[:500]) and K(pool, 500 support vectors), rbf
* decision       f = K(pool, sv) coef + b, 3,500 x 500 x 784
* sparse rows    K(x_i, X) and K(X[:200], X), linear on a 10k x 50k TF-IDF-like CSR matrix (60 terms a row)
* tanimoto       2,000 binary fingerprints of 2,048 bits against 2,000 (dense), and one row against them

Each is timed with the library's default threads (kernel blocks on every core;
BLAS as installed, no thread variables read or set) and with one thread on
both sides.  Seconds are the best of ``--repeats``; on a shared machine the
figures move, the ratios less so.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_info, threadpool_limits

from core.kernels import DataStore, Kernel, KernelCache
from core.threads import available_cores, kernel_threads, set_kernel_threads


def best(fn, repeats: int) -> float:
    fn()  # (warm: compiled code loaded, caches filled)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def blas_rbf(A, B, gamma, sq_a, sq_b):
    D = sq_a[:, None] + sq_b[None, :] - 2.0 * (A @ B.T)
    np.maximum(D, 0.0, out=D)
    D *= -gamma
    return np.exp(D, out=D)


def tanimoto_bits_blas(A, B, sa, sb):
    inter = A @ B.T
    return inter / (sa[:, None] + sb[None, :] - inter)


def cases(quick: bool):
    rng = np.random.default_rng(0)
    n_pool = 1500 if quick else 3500
    X = rng.random((n_pool, 784))
    gamma = 1.0 / 784
    rbf = Kernel("rbf", gamma=gamma)
    cache = KernelCache(rbf, DataStore(X), 0)
    sq = np.einsum("ij,ij->i", X, X)
    sv = np.arange(0, n_pool, n_pool // 500)[:500]
    coef = rng.standard_normal(len(sv))
    all_rows = np.arange(n_pool)
    yield (
        "dense row",
        f"rbf K(x, X), X {n_pool}x784",
        lambda: cache.row(7, keep=False),
        lambda: blas_rbf(X[7:8], X, gamma, sq[7:8], sq),
    )
    yield (
        "dense block",
        "rbf K(X[:500], X[:500])",
        lambda: cache.block(np.arange(500), np.arange(500)),
        lambda: blas_rbf(X[:500], X[:500], gamma, sq[:500], sq[:500]),
    )
    yield (
        "dense block",
        f"rbf K(pool {n_pool}, 500 SVs)",
        lambda: cache.block(all_rows, sv),
        lambda: blas_rbf(X, X[sv], gamma, sq, sq[sv]),
    )
    yield (
        "decision",
        f"f = K(pool {n_pool}, 500 SVs) coef + b",
        lambda: cache.decision(all_rows, sv, coef, 0.1),
        lambda: blas_rbf(X, X[sv], gamma, sq, sq[sv]) @ coef + 0.1,
    )

    n_docs, vocab, per_doc = (3000 if quick else 10_000), 50_000, 60
    indptr = np.arange(0, (n_docs + 1) * per_doc, per_doc)
    indices = np.sort(rng.integers(0, vocab, size=(n_docs, per_doc)), axis=1).ravel()
    T = sp.csr_matrix((rng.random(n_docs * per_doc), indices, indptr), shape=(n_docs, vocab))
    T.sum_duplicates()
    T = sp.csr_matrix(T.multiply(1.0 / np.sqrt(T.multiply(T).sum(axis=1))))
    linear = Kernel("linear")
    tcache = KernelCache(linear, DataStore(T), 0)
    docs = np.arange(n_docs)
    yield (
        "sparse rows",
        f"linear K(x, X), TF-IDF {n_docs}x{vocab} CSR",
        lambda: tcache.row(11, keep=False),
        lambda: (T @ T[11].T).toarray().ravel(),
    )
    yield (
        "sparse rows",
        "linear K(X[:200], X)",
        lambda: tcache.block(np.arange(200), docs),
        lambda: (T[:200] @ T.T).toarray(),
    )

    n_fp = 1000 if quick else 2000
    F = (rng.random((n_fp, 2048)) < 0.05).astype(np.float64)
    tani = Kernel("tanimoto")
    fcache = KernelCache(tani, DataStore(F), 0)
    s = F.sum(1)
    fps = np.arange(n_fp)
    yield (
        "tanimoto",
        f"K(F, F), {n_fp} fingerprints x 2048 bits",
        lambda: fcache.block(fps, fps),
        lambda: tanimoto_bits_blas(F, F, s, s),
    )
    yield (
        "tanimoto",
        "one row K(f, F)",
        lambda: fcache.row(3, keep=False),
        lambda: tanimoto_bits_blas(F[3:4], F, s[3:4], s),
    )


def first_call_seconds(cold: bool) -> float:
    """Wall seconds of a fresh process: import the kernel layer and compute one rbf block and one row."""
    code = (
        "import time; t0 = time.perf_counter();"
        "import numpy as np; from core.kernels import Kernel, DataStore, KernelCache;"
        "X = np.random.default_rng(0).random((50, 20)); c = KernelCache(Kernel('rbf', 0.1), DataStore(X));"
        "c.block(np.arange(50), np.arange(40)); c.row(3); Kernel('linear')(X[:2], X);"
        "print(time.perf_counter() - t0)"
    )
    env = dict(os.environ)
    if cold:
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="marginlab-numba-")  # an empty cache: compile
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--cold", action="store_true", help="also time the first call with an empty Numba cache")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 5)

    import numba

    print(
        f"machine: {platform.processor() or platform.machine()}, {available_cores()} cores available; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, Numba {numba.__version__}"
    )
    for lib in threadpool_info():
        print(
            f"  {lib['user_api']}: {lib['internal_api']} {lib.get('version')} ({lib.get('architecture')}), "
            f"{lib['num_threads']} threads by default"
        )
    print(
        f"  MarginLab kernel threads by default: {kernel_threads()} (large blocks only; the bits do not depend on it)"
    )
    print(
        "  no thread environment variable is read or set by MarginLab or by this script "
        f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})"
    )
    print("  machine shared with other jobs? load average:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print()
    header = (
        f"{'what':<12} {'case':<46} {'ours ms':>9} {'BLAS ms':>9} {'ratio':>6} | {'ours 1t':>8} "
        f"{'BLAS 1t':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    default_threads = kernel_threads()
    for what, case, ours, reference in cases(args.quick):
        set_kernel_threads(None)
        t_ours = best(ours, repeats)
        t_ref = best(reference, repeats)
        set_kernel_threads(1)
        with threadpool_limits(1):
            t_ours1 = best(ours, repeats)
            t_ref1 = best(reference, repeats)
        set_kernel_threads(None)
        print(
            f"{what:<12} {case:<46} {1e3 * t_ours:9.2f} {1e3 * t_ref:9.2f} {t_ours / t_ref:6.2f} | "
            f"{1e3 * t_ours1:8.2f} {1e3 * t_ref1:8.2f} {t_ours1 / t_ref1:6.2f}"
        )
    print()
    print(
        f"Target: blocks <= 2.5x BLAS (the compiled code does 2x BLAS's floating-point operations without "
        f"FMA), rows <= 1.5x (memory-bound); ratios are ours / reference (default threads: ours "
        f"{default_threads}, BLAS as installed; '1t': one thread each)."
    )
    warm = first_call_seconds(cold=False)
    print(f"First call in a fresh process (import + first kernel block, Numba cache warm): {warm:.2f} s")
    if args.cold:
        print(
            f"First call with an empty Numba cache (compiles the routines it uses): "
            f"{first_call_seconds(cold=True):.1f} s"
        )


if __name__ == "__main__":
    main()
