"""Build the wheelhouse that lets a machine with only JAX + CUDA train our ALBERT (no TensorFlow).

Run it here, in the project's venv (it reads the pins from constraints.txt); carry the folder to the
GPU machine and install it offline there:

    python benchmarks/gpu/wheelhouse.py --output .whl [--python-version 3.12]
    # on the GPU machine, with jax[cuda] already installed:
    pip install --no-index --no-deps --target /tmp/site .whl/*.whl && PYTHONPATH=/tmp/site python
    benchmarks/gpu/train.py

The wheelhouse holds Keras and what it imports beyond JAX and NumPy, pydantic + PyYAML + fsspec
(our configs and file I/O), SentencePiece (tokenization), Grain with protobuf and CRC32C (the
TF-free input over TFRecord shards), what the default install's exports need (safetensors and
tokenizers for export/hf, keras-hub and the regex module its import needs for export/keras_hub;
not kagglehub, which only downloads presets), and our own package built without its dependencies
(from a copy of the sources, so that no build/ or egg-info lands in the project). It fails if the
folder exceeds --max-mib (60 MiB by default: a device command carries at most 64 MiB). Prints one
JSON line: the wheels, their sizes and the total.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = (
    # Keras 3 and what it imports that a JAX install does not bring.
    "keras",
    "absl-py",
    "namex",
    "optree",
    "rich",
    "markdown-it-py",
    "mdurl",
    "pygments",
    "h5py",
    "packaging",
    # Our configs (pydantic), YAML configs, file I/O over fsspec, the tokenizer.
    "pydantic",
    "pydantic_core",
    "annotated-types",
    "typing-inspection",
    "typing_extensions",
    "PyYAML",
    "fsspec",
    "sentencepiece",
    # The TF-free input (model.input.grain): Grain and what it imports, our TFRecord reader's CRC32C
    # and the protobuf runtime of albert.pretraining_example.decode_example.
    "grain",
    "array_record",
    "etils",
    "zipp",
    "cloudpickle",
    "portpicker",
    "psutil",
    "protobuf",
    "google-crc32c",
    # The end-of-run exports of the default install: export/hf (safetensors, tokenizers) and
    # export/keras_hub (keras-hub, whose import needs regex; kagglehub only downloads presets).
    "safetensors",
    "tokenizers",
    "keras-hub",
    "regex",
)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)


def pinned_versions(constraints: Path) -> dict[str, str]:
    """`name -> version` from a pip constraints file (names normalised as PEP 503)."""
    pins = {}
    for line in constraints.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line)
        if match:
            pins[normalise(match.group(1))] = match.group(2)
    return pins


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def download(requirements: list[str], output: Path, python_version: str) -> None:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            python_version,
            *platforms,
            "-d",
            str(output),
            *requirements,
        ],
        check=True,
    )


SOURCES = ("pyproject.toml", "README.md", "albert", "pipelines", "model", "flows")


def build_own_wheel(output: Path) -> None:
    """Our package's wheel, built from a copy of its sources (setuptools writes build/ and an
    egg-info next to the sources it builds) by this environment's setuptools (TensorFlow's
    dependency): no isolated build environment, which pip would install from the index first
    (9 of the 11 seconds a build took)."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in SOURCES:
            source, copy = ROOT / name, Path(scratch) / name
            if source.is_dir():
                shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, copy)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--disable-pip-version-check",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                str(output.resolve()),
                scratch,
            ],
            check=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / ".whl")
    parser.add_argument(
        "--python-version", default="3.12", help="the GPU machine's Python (major.minor)"
    )
    parser.add_argument("--max-mib", type=float, default=60.0)
    args = parser.parse_args()

    pins = pinned_versions(ROOT / "constraints.txt")
    missing = [name for name in PACKAGES if normalise(name) not in pins]
    if missing:
        parser.error(f"constraints.txt pins no version of {missing}")
    args.output.mkdir(parents=True, exist_ok=True)
    download(
        [f"{name}=={pins[normalise(name)]}" for name in PACKAGES], args.output, args.python_version
    )
    build_own_wheel(args.output)

    wheels = sorted(args.output.glob("*.whl"))
    sizes = {wheel.name: round(wheel.stat().st_size / 2**20, 2) for wheel in wheels}
    total = round(sum(sizes.values()), 2)
    print(
        json.dumps(
            {
                "output": str(args.output),
                "python_version": args.python_version,
                "wheels": sizes,
                "total_mib": total,
                "limit_mib": args.max_mib,
            }
        )
    )
    if total > args.max_mib:
        print(f"wheelhouse is {total} MiB, over the {args.max_mib} MiB limit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
