"""What the benchmarks share; nothing here is run on its own."""
