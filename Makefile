# The two set-up commands in the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench venv

$(BIN)/roost: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/roost

demo: venv
	$(BIN)/roost classad match examples/classad/job.ad examples/classad/machines.ads
	$(BIN)/roost submit -dry-run examples/submit/sweep.sub | head -40

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n 2 tests

bench: venv
	for b in bench/*_bench.py; do $(BIN)/python $$b; done
