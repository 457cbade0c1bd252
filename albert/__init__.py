"""Shared core of the project: typed stage configs, the `albert` CLI, logging, file I/O, tokenization.

Importing this package keeps TensorFlow's C++ logging quiet unless `--verbose` is on the command
line or ALBERT_VERBOSE=1; it must therefore be imported before TensorFlow (every package here does).
"""

import os
import sys

if "--verbose" not in sys.argv and os.environ.get("ALBERT_VERBOSE") != "1":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
