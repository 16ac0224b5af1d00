"""Whose fault a failed start is (startfault.py): the machine's shortages requeue the
job, the job's own faults hold it (issue 27: jobs were held for "Too many open files")."""

from __future__ import annotations

import errno
import os

import pytest

from roost.daemons.startd import launch, startfault


def _os_error(code: int, filename: str | None = None) -> OSError:
    return OSError(code, os.strerror(code), filename)


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM, errno.ENOSPC,
                                  errno.EDQUOT, errno.ENOBUFS])
@pytest.mark.parametrize("step", ["", "sandbox", "input", "spawn"])
def test_a_shortage_is_the_machines_wherever_it_happens(code: int, step: str) -> None:
    e = _os_error(code)
    assert startfault.is_shortage(e)
    assert startfault.machine_fault(e, step)


def test_blocking_io_from_fork_is_a_shortage() -> None:
    # os.fork / Popen raise BlockingIOError (EAGAIN) when the process table is full
    assert startfault.machine_fault(BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"))


@pytest.mark.parametrize("e", [
    FileNotFoundError(errno.ENOENT, "No such file or directory", "/no/such/exe"),
    PermissionError(errno.EACCES, "Permission denied", "/etc/shadow"),
    _os_error(errno.ENOEXEC, "./not-a-program"),
    _os_error(errno.ENOTDIR, "/etc/passwd/x"),
    _os_error(errno.ELOOP, "/tmp/loop"),
    _os_error(errno.E2BIG),
])
def test_the_jobs_own_faults_hold_it(e: OSError) -> None:
    assert not startfault.is_shortage(e)
    assert not startfault.machine_fault(e, "spawn")
    assert not startfault.machine_fault(e)


def test_anything_while_the_startd_makes_its_own_things_is_the_machines() -> None:
    # a cgroup or execute directory that vanished (ENOENT) says nothing about the job
    gone = FileNotFoundError(errno.ENOENT, "No such file or directory", "/sys/fs/cgroup/roost/x")
    assert startfault.machine_fault(gone, "sandbox")
    assert startfault.machine_fault(gone, "launcher")
    assert not startfault.machine_fault(gone, "spawn")


def test_an_unknown_errno_is_not_blamed_on_the_job() -> None:
    assert startfault.machine_fault(_os_error(errno.ECONNRESET))
    assert startfault.machine_fault(_os_error(errno.EPIPE), "input")


def test_non_os_errors_are_the_jobs() -> None:
    assert not startfault.machine_fault(ValueError("bad environment entry 'A=B'"))
    assert not startfault.machine_fault(RuntimeError("x"))
    assert startfault.machine_fault(ValueError("x"), "sandbox")


def test_the_launchers_report_becomes_the_errno_it_names() -> None:
    e = launch._helper_failure(b"!11 fork\n")
    assert e.errno == errno.EAGAIN and "fork" in str(e)
    assert startfault.machine_fault(e)
    assert launch._helper_failure(b"!junk\n").errno == errno.EIO
