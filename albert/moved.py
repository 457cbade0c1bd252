"""Module paths that moved: the one-line shims left at the old paths, and the stage packages' names.

A shim is `moved("OLD", "NEW", __name__)`, with `command=` where `python -m` runs another module:
it says on stderr where the module went, then is the new module (imported: the old name is the new
module object) or runs it (`python -m OLD`). The shims keep the paths users type working for one
release; nothing of the project imports them.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from pathlib import Path


def moved(old: str, new: str, name: str, command: str | None = None) -> None:
    """Make module `old` (whose `__name__` is `name`) the module `new`, saying so on stderr; run as
    `python -m old`, it runs `python -m command` (default: `new`)."""
    if name == "__main__":
        print(f"python -m {old} moved to python -m {command or new}", file=sys.stderr)
        runpy.run_module(command or new, run_name="__main__", alter_sys=True)
    else:
        print(f"{old} moved to {new}", file=sys.stderr)
        sys.modules[old] = importlib.import_module(new)


def forward_to_stage(package: str, init_file: str):
    """A stage package's `__getattr__`: `pipelines.segment.run` (and every other name of the stage
    module, `PACKAGE.stage`), loaded when first asked for; the package's own modules are imported as
    usual, so importing `PACKAGE.config` loads no Beam."""
    folder = Path(init_file).parent

    def __getattr__(attribute: str):
        if attribute.startswith("_") or (folder / f"{attribute}.py").exists():
            raise AttributeError(f"module {package!r} has no attribute {attribute!r}")
        return getattr(importlib.import_module(f"{package}.stage"), attribute)

    return __getattr__
