"""The schedd's checkpoint store: transactional, the previous checkpoint safe until the
next one is whole."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from roost.daemons.schedd.checkpoints import CheckpointError, CheckpointStore
from roost.daemons.startd import criu


def test_a_failed_checkpoint_keeps_the_previous_one(tmp_path: Path) -> None:
    """A checkpoint that fails half-way (aborted) leaves the previous one whole; the next
    good one replaces it, and only it is kept."""
    store = CheckpointStore(str(tmp_path / "spool"))
    first = store.begin(7, 0)
    fd = first.open("state")
    os.write(fd, b"one")
    os.close(fd)
    first.commit()
    second = store.begin(7, 0)
    fd = second.open("state")
    os.write(fd, b"two")
    os.close(fd)
    second.abort()  # what the schedd does when anything in it fails
    assert dict((n, Path(p).read_text()) for n, p in store.files(7, 0)) == {"state": "one"}
    third = store.begin(7, 0)
    fd = third.open("state")
    os.write(fd, b"three")
    os.close(fd)
    third.commit()
    assert dict((n, Path(p).read_text()) for n, p in store.files(7, 0)) == {"state": "three"}
    assert sorted(os.listdir(store.job_dir(7, 0))) == ["ckpt.2", "current"]
    with pytest.raises(CheckpointError):
        store.begin(7, 0).open("../escape")


def test_a_half_written_checkpoint_of_a_killed_schedd_is_swept(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path / "spool"))
    first = store.begin(3, 1)
    os.close(first.open("a/b"))
    first.commit()
    store.begin(3, 1)  # never committed: the schedd died
    store.sweep_partial()
    assert sorted(os.listdir(store.job_dir(3, 1))) == ["ckpt.1", "current"]
    assert [n for n, _p in store.files(3, 1)] == ["a/b"]
    store.remove(3, 1)
    assert not os.path.exists(store.job_dir(3, 1)) and store.current(3, 1) is None


def test_criu_is_advertised_only_where_criu_check_passes() -> None:
    ok, why = criu.probe("roost-no-such-criu")
    assert not ok and "not installed" in why
    if shutil.which("criu"):
        ok, why = criu.probe()  # the real check: on this machine family it fails, and says why
        assert ("passed" in why) if ok else ("failed" in why or "did not" in why), why
