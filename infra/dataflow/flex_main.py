"""Flex-template entry point: run the Beam stage named by $ALBERT_STAGE (segment, vocab, tfrecords).

Dataflow's launcher runs `python flex_main.py --param=value ...` with the template's parameters;
they are mapped to the stage's own flags (`infra.checks.flex_argv`) and the remaining flags go to
Beam, exactly as `python -m pipelines.<stage>` would take them.
"""

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the image's /template (repo root)

from infra.checks import DATAFLOW_STAGES, flex_argv


def main(argv=None) -> int:
    stage = os.environ.get("ALBERT_STAGE", "")
    if stage not in DATAFLOW_STAGES:
        print(f"flex_main: set ALBERT_STAGE to one of {sorted(DATAFLOW_STAGES)} (got {stage!r})", file=sys.stderr)
        return 2
    module = importlib.import_module(DATAFLOW_STAGES[stage][0])
    args = flex_argv(stage, sys.argv[1:] if argv is None else argv)
    return module.main(args, prog=f"albert {stage} (flex template)")


if __name__ == "__main__":
    sys.exit(main())
