"""`python -m model.pretrain`: the stage's command line (flags: `--help`)."""

import sys

from model.pretrain import main

if __name__ == "__main__":
    sys.exit(main())
