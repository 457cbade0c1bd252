"""`python -m model.finetune`."""

import sys

from model.finetune.cli import main

if __name__ == "__main__":
    sys.exit(main())
