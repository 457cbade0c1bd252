"""`python -m pipelines.decontaminate`: the stage's command line,
`pipelines.decontaminate.stage.main`.

Run from the importable module: DoFns are pickled as pipelines.decontaminate.stage.X, which worker
processes can import, not as __main__.X, which they cannot."""

import sys

from pipelines.decontaminate.stage import main

if __name__ == "__main__":
    sys.exit(main())
