"""Benchmarks: each *_bench.py module has a main() that prints its figures (nothing is asserted)."""
