# The two set-up commands in the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench venv system-tools slurm sge

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
# and `unshare` (util-linux) and root; the KERBEROS tests start a real MIT KDC
# (krb5-kdc, krb5-admin-server, krb5-user); the MPI tests run Open MPI (openmpi-bin)
# programs written with mpi4py for the system's python3 (python3-mpi4py); the dask-jobqueue
# test builds its workers' venv from the system's python3 (python3-venv); the web
# dashboard's tests drive headless Chromium over its DevTools pipe (chromium; no driver).
# Container jobs run with podman (catatonit as the container's init; runc where crun
# refuses a hybrid cgroup host) in an image built from busybox-static; java jobs need a
# JDK (default-jdk-headless, ~250 MB); the grid universe's tests start a private Slurm
# (slurm-wlm, munge: tests/slurmkit.py; `make slurm` starts one to try jobs by hand)
# and a private Grid Engine cell (gridengine-master/-exec/-client: tests/sgekit.py;
# debconf is told not to make the package's own cell, sgekit makes its own).
# As root on Debian, install what is missing (elsewhere those tests skip and say why).
SYSTEM_PACKAGES := iproute2 krb5-kdc krb5-admin-server krb5-user openmpi-bin python3-mpi4py python3-venv chromium \
	podman catatonit runc busybox-static default-jdk-headless slurm-wlm munge \
	gridengine-master gridengine-exec gridengine-client
system-tools:
	@export DEBIAN_FRONTEND=noninteractive; \
	{ command -v ip && { command -v krb5kdc || test -x /usr/sbin/krb5kdc; } && command -v mpirun \
	  && /usr/bin/python3 -c 'import mpi4py, ensurepip' && command -v chromium && command -v podman \
	  && command -v runc && command -v catatonit && command -v javac && command -v busybox \
	  && { command -v slurmctld || test -x /usr/sbin/slurmctld; } && { command -v munged || test -x /usr/sbin/munged; } \
	  && command -v qsub && test -x /usr/sbin/sge_qmaster && test -x /usr/sbin/sge_execd; } >/dev/null 2>&1 || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { echo "gridengine-common shared/gridengineconfig boolean false" | debconf-set-selections || true; } \
	  && { apt-get install -y -q $(SYSTEM_PACKAGES) || { apt-get update -q && apt-get install -y -q $(SYSTEM_PACKAGES); }; } \
	  >/dev/null 2>&1; } || true

# A private Slurm on this host (munged, slurmctld, one slurmd; loopback ports), for
# grid_resource = batch slurm by hand: prints the SLURM_CONF line to export.
# `$(BIN)/python tests/slurmkit.py stop /tmp/roost-slurm` stops it.
slurm: venv system-tools
	$(BIN)/python tests/slurmkit.py start /tmp/roost-slurm

# A private Grid Engine cell (sge_qmaster, one sge_execd, roost.q; loopback ports), for
# grid_resource = batch sge by hand: prints the SGE_* lines to export.
# `$(BIN)/python tests/sgekit.py stop /tmp/roost-sge` stops it.
sge: venv system-tools
	$(BIN)/python tests/sgekit.py start /tmp/roost-sge
