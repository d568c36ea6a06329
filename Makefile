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

# The documentation site into site/; Python and pip only (scripts/tools.sh).
docs:
	@bash scripts/docs.sh

# The sdist and the wheel of this version into dist/ (RELEASING.md); Python and pip only.
dist:
	@bash scripts/dist.sh
