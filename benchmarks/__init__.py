"""Benchmarks of selfattn on CPU: `make bench` (or `python -m benchmarks.run`) writes results/cpu.json."""
