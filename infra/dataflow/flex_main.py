"""Flex-template entry point: run the Beam stage named by $ALBERT_STAGE (segment, vocab, tfrecords,
predict).

Dataflow's launcher runs `python flex_main.py --param=value ...` with the template's parameters;
`pipelines.common.flex_template.main` (installed in the image with the project) maps them to the
stage's own flags and passes the remaining flags to Beam, exactly as `python -m pipelines.<stage>`
would take them.
"""

import sys

from pipelines.common.flex_template import main

if __name__ == "__main__":
    sys.exit(main())
