"""Benchmarks, run from the repository root as `python -m benchmarks.<name>`: the living ones here
(each cited by docs/measurements.md for a current figure; `make bench` runs those that need no
input), `helpers/` (what they share: the machine, process trees, fault scenarios, Hugging Face's
fine-tuning side), `studies/` (one-off comparisons that record a past decision) and `gpu/` (the
accelerator kit and its checks: `check.py` runs as a file too)."""
