# The two set-up commands in the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench venv

$(BIN)/roost: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/roost

demo: venv
	$(BIN)/python -m roost.demo

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n 2 tests

bench: venv
	# submit_bench.py also runs eventlog_bench.py (the issue names both figures for it)
	for b in bench/*_bench.py; do [ $$b = bench/eventlog_bench.py ] || $(BIN)/python $$b; done
