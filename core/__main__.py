"""``python -m core``: the MarginLab command line (see core.cli)."""

import sys

from core.cli import main
from core.process import prefer_small_pages

if __name__ == "__main__":
    prefer_small_pages()  # (this process's NumPy: see core.process)
    sys.exit(main())
