.PHONY: setup demo test lint bench docs dist
SHELL := /bin/bash

setup:
	@bash scripts/setup.sh

demo:
	@bash scripts/demo.sh

test:
	@bash scripts/test.sh $(PYTEST_ARGS)

lint: setup
	@.venv/bin/ruff check adapter tests benchmarks scripts

bench: setup
	@bash scripts/bench.sh $(BENCH_ARGS)

docs: setup
	@bash scripts/docs.sh

# The sdist and the wheel of this version into dist/ (RELEASING.md).
dist: setup
	@rm -rf dist
	@.venv/bin/python -m build --outdir dist .
