"""`python -m model.distill`."""

import sys

from model.distill.cli import main

if __name__ == "__main__":
    sys.exit(main())
