# Targets are named after what a user wants. Every target sets the machine up first (idempotent).
SHELL := /bin/bash
PY := .venv/bin/python
PY313_DIR = $(dir $(shell [ -x .venv/bin/python ] && readlink -f .venv/bin/python))
SAM := .venv-tools/bin/sam

.PHONY: setup setup-sdk demo test lint typecheck unit integration template build deploy bench bench-full bench-overspend bench-replay goldens clean

setup:
	@WITH_SAM=0 scripts/bootstrap.sh

setup-sdk:
	@WITH_SDK=1 WITH_SAM=1 scripts/bootstrap.sh

## The offline demo: the seed's XGBoost Hyperband job on the AMT stand-in, handlers in-process.
demo: setup
	$(PY) -m governor_client demo

## Everything CI runs: lint, types, unit, integration (moto + AMT stand-in + SDK), template checks, sam build.
## Bytecode is cached (PYTHONDONTWRITEBYTECODE unset for the run): each worker and each CLI or handler
## process a test starts would otherwise compile every module again (13 s of 420 on a fresh clone).
test: setup-sdk lint typecheck
	SAM_CLI=$(SAM) PATH="$(PY313_DIR):$$PATH" env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n 2 --dist loadgroup --durations=20

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	.venv/bin/lint-imports --no-logo

typecheck:
	$(PY) -m mypy layers/governor/tuning_governor client/governor_client functions

unit: setup
	$(PY) -m pytest tests/unit

integration: setup-sdk
	$(PY) -m pytest tests/integration

template: setup-sdk
	SAM_CLI=$(SAM) PATH="$(PY313_DIR):$$PATH" $(PY) -m pytest tests/template

## sam build needs python3.13, make and the SAM CLI: not the 1 GB SageMaker SDK the tests use.
build:
	@WITH_SDK=0 WITH_SAM=1 scripts/bootstrap.sh
	PATH="$(PY313_DIR):$$PATH" $(SAM) build

deploy: build
	$(SAM) deploy --guided

## The quick set (about 10 minutes on 2 cores): cold init and AWS work per event (benchmarks/lean.py),
## 5,000 trial events through simulator + handlers, the overspend table. Writes benchmarks/RESULTS.md.
bench: setup
	$(PY) benchmarks/lean.py --write
	$(PY) benchmarks/run.py --sizes 5000 --extra-repeats 0
	$(PY) benchmarks/overspend.py --write

## Everything (about an hour): adds N = 750 trials and 500 jobs, 50,000 trial events, stock moto and INFO logs.
bench-full: setup
	$(PY) benchmarks/lean.py --write --full
	$(PY) benchmarks/run.py
	$(PY) benchmarks/overspend.py --write

## Replay on the in-memory store and on moto against the simulator alone, 5,000 and 50,000 trial events
## (about 15 minutes on 2 cores, 8 of them the stock-moto replay at 5,000).
bench-replay: setup
	$(PY) benchmarks/replay_store.py --write

## Budget overspend of the event-driven governor + sweep against a 15-minute poller (a few minutes).
bench-overspend: setup
	$(PY) benchmarks/overspend.py --write

## Rewrite the golden files of tests/golden/expected/ (replay results, demo table items, SNS and Slack
## messages) from the current code. A changed golden file is a behaviour change: say why in the commit.
goldens: setup
	$(PY) -m tests.golden.regenerate

clean:
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache
