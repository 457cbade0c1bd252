"""`python -m model.finetune`."""

import sys

from model.finetune.stage import main

sys.exit(main())
