# The two set-up commands in the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench venv system-tools

$(BIN)/roost: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/roost

demo: venv
	$(BIN)/python -m roost.demo

test: venv system-tools
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n 2 tests

bench: venv
	# submit_bench.py also runs eventlog_bench.py (the issue names both figures for it)
	for b in bench/*_bench.py; do [ $$b = bench/eventlog_bench.py ] || $(BIN)/python $$b; done

# tests/system/ builds hosts in network namespaces: it needs `ip` (iproute2), `nsenter`
# and `unshare` (util-linux) and root; as root on Debian, install what is missing
# (elsewhere those tests skip and say why).
system-tools:
	@export DEBIAN_FRONTEND=noninteractive; command -v ip >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y -q iproute2 || { apt-get update -q && apt-get install -y -q iproute2; }; } \
	  >/dev/null 2>&1; } || true
