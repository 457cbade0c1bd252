"""Benchmarks, each run as `python -m benchmarks.NAME`, printing one JSON line per figure."""
