.PHONY: setup demo test lint bench
SHELL := /bin/bash

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

lint: setup
	@.venv/bin/ruff check adapter tests benchmarks

test: setup lint
	@source scripts/env.sh && python -m pytest -q $(PYTEST_ARGS)

bench: setup
	@bash scripts/bench.sh $(BENCH_ARGS)
