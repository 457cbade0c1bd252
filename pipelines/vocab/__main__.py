"""`python -m pipelines.vocab`: the stage's command line, `pipelines.vocab.stage.main`.

Run from the importable module: DoFns are pickled as pipelines.vocab.stage.X, which worker
processes can import, not as __main__.X, which they cannot."""

import sys

from pipelines.vocab.stage import main

if __name__ == "__main__":
    sys.exit(main())
