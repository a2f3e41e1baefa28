"""The feature matrix as it is built: its parts side by side, their names and blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp


@dataclass
class Features:
    """Parts of the feature matrix (dense or sparse), their feature names and blocks (``kind``, ``start``,
    ``stop`` and what the block's kind needs), ``width`` the columns so far."""

    parts: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    width: int = 0

    def add(self, part, names, kind: str, column: str, **extra) -> None:
        """A block of ``part`` (its features named ``names``) from ``column``."""
        self.parts.append(part)
        self.names.extend(names)
        self.blocks.append(
            {"kind": kind, "column": column, "start": self.width, "stop": self.width + part.shape[1], **extra}
        )
        self.width += part.shape[1]

    def matrix(self):
        """The parts side by side: CSR when any is sparse."""
        parts = self.parts
        if any(sp.issparse(p) for p in parts):
            X = sp.hstack([sp.csr_matrix(p) for p in parts], format="csr", dtype=np.float64)
            X.sort_indices()
            return X
        return np.hstack(parts) if len(parts) > 1 else parts[0]
