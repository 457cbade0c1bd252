"""`python -m pipelines.segment`: the stage's command line, `pipelines.segment.stage.main`.

Run from the importable module: DoFns are pickled as pipelines.segment.stage.X, which worker
processes can import, not as __main__.X, which they cannot."""

import sys

from pipelines.segment.stage import main

if __name__ == "__main__":
    sys.exit(main())
