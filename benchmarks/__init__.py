"""Benchmarks of the merge materialization (run with `make bench`; not part of the tests)."""
