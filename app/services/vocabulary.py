"""Names the New session form offers besides ``common``'s lists: the kernels and the ramp solver's losses.

Kept light: importing it loads nothing more than the Label page loaded before (the data-file names are in
``reading``, which loads the CSV reader).
"""

from __future__ import annotations

from core.kernels import KERNEL_NAMES
from core.solvers.ramp import LOSSES

__all__ = ["KERNEL_NAMES", "LOSSES"]
