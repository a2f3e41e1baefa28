"""Data sets for the LASVM benchmark (scikit-learn is a benchmark dependency): scikit-learn's real
8x8 digits as they ship, and generated ones."""

from __future__ import annotations

import numpy as np

DIGITS_TITLE = (
    "scikit-learn 8x8 digits upsampled to 28x28 = 784 features by bilinear interpolation "
    "with random shifts (+-1.5 px) and elastic noise (Gaussian-smoothed displacement field, "
    "sigma 3 px, amplitude 1.5 px), pixel values /16; label +1 = digit 8; originals split "
    "75/25 before augmentation"
)


REAL_DIGITS_TITLE = (
    "scikit-learn's digits as shipped (load_digits: 1,797 real handwritten 8x8 images, "
    "UCI optical recognition set; 64 features, pixel values /16), label +1 = digit 8, "
    "75/25 train/test split"
)


def real_digits(seed: int = 0):
    """(X_train, y_train, X_test, y_test): scikit-learn's 1,797 real 8x8 digits, "8 vs rest", unaltered."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = d.data / 16.0
    y = np.where(d.target == 8, 1.0, -1.0)
    order = np.random.default_rng(seed).permutation(len(X))
    cut = int(0.75 * len(X))
    train, test = order[:cut], order[cut:]
    return X[train], y[train], X[test], y[test]


def _warp(img8: np.ndarray, rng: np.random.Generator, distort: bool) -> np.ndarray:
    from scipy.ndimage import gaussian_filter, map_coordinates

    size, scale = 28, 28 / 8
    r, c = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    src_r = (r + 0.5) / scale - 0.5
    src_c = (c + 0.5) / scale - 0.5
    if distort:
        dr, dc = rng.uniform(-1.5, 1.5, size=2)
        fr = gaussian_filter(rng.uniform(-1, 1, (size, size)), 3.0, mode="constant")
        fc = gaussian_filter(rng.uniform(-1, 1, (size, size)), 3.0, mode="constant")
        amp = 1.5 / max(np.abs(fr).max(), np.abs(fc).max(), 1e-12)
        src_r = src_r + (dr + amp * fr) / scale
        src_c = src_c + (dc + amp * fc) / scale
    return map_coordinates(img8, [src_r, src_c], order=1, mode="constant", cval=0.0).ravel()


def digits_784(n_train: int = 4000, n_test: int = 1000, seed: int = 0):
    """(X_train, y_train, X_test, y_test): 784-feature "8 vs rest" digits."""
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    d = load_digits()
    images = d.images / 16.0
    order = rng.permutation(len(images))
    cut = int(0.75 * len(images))
    parts = []
    for idx, total in ((order[:cut], n_train), (order[cut:], n_test)):
        picks = np.concatenate([idx, rng.choice(idx, size=max(0, total - len(idx)))])[:total]
        distort = np.arange(len(picks)) >= len(idx)  # originals first, then distorted copies
        X = np.array([_warp(images[k], rng, bool(dist)) for k, dist in zip(picks, distort, strict=True)])
        y = np.where(d.target[picks] == 8, 1.0, -1.0)
        perm = rng.permutation(len(picks))
        parts += [X[perm], y[perm]]
    return tuple(parts)


def banana(n: int, seed: int = 0, noise: float = 0.6):
    """Two interleaved banana-shaped classes in 2-D (noisy half moons), labels -1/+1."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    t = rng.uniform(0, np.pi, n)
    X = np.where(
        y[:, None] > 0, np.c_[2.0 * np.cos(t), 2.0 * np.sin(t)], np.c_[2.0 - 2.0 * np.cos(t), 0.5 - 2.0 * np.sin(t)]
    )
    return X + noise * rng.standard_normal((n, 2)), y
