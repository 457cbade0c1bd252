"""Speed, memory and quality figures of the project: run each as python -m benchmarks.NAME."""
