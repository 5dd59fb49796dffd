"""``python -m lethe``: the command-line interface (the demo by default)."""

import sys

from lethe._cli import main

if __name__ == "__main__":
    sys.exit(main())
