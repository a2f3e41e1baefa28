"""The service under its first name: ``from app.service import MarginLab, ...`` keeps working.

The code lives in ``app.services`` (one module per concern); this module only
re-exports its public names.
"""

from app.services import *  # noqa: F403
from app.services import __all__  # noqa: F401
