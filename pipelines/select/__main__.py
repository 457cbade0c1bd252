"""`python -m pipelines.select`: the stage's command line, `pipelines.select.stage.main`.

Run from the importable module: DoFns are pickled as pipelines.select.stage.X, which worker
processes can import, not as __main__.X, which they cannot."""

import sys

from pipelines.select.stage import main

if __name__ == "__main__":
    sys.exit(main())
