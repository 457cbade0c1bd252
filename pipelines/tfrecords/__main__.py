"""`python -m pipelines.tfrecords`: the stage's command line, `pipelines.tfrecords.stage.main`.

Run from the importable module: DoFns are pickled as pipelines.tfrecords.stage.X, which worker
processes can import, not as __main__.X, which they cannot."""

import sys

from pipelines.tfrecords.stage import main

if __name__ == "__main__":
    sys.exit(main())
