"""access.open_read: an input file is read for its owner, checked after the open, so
a file swapped for a link between the check and the open is refused, not read as root."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from roost.daemons.schedd.access import open_read

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="reads for another user only as root")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory nobody can reach (pytest's own sits under a root-only one)."""
    d = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d)


def test_what_the_owner_may_read_it_reads_links_included(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    data = tmp_path / "data.txt"
    data.write_text("42\n")
    data.chmod(0o644)
    (tmp_path / "link.txt").symlink_to(data)
    for name in ("data.txt", "link.txt"):
        with open_read("nobody", str(tmp_path / name)) as f:
            assert f.read() == b"42\n"


def test_a_link_to_what_the_owner_may_not_read_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    behind = hidden / "open.txt"  # readable bits, but in a directory the owner cannot search
    behind.write_text("x\n")
    behind.chmod(0o644)
    (tmp_path / "a").symlink_to(secret)
    (tmp_path / "b").symlink_to(behind)
    for name in ("secret", "a", "b"):
        with pytest.raises(PermissionError, match="nobody may not read it"):
            open_read("nobody", str(tmp_path / name))
    with open_read("root", str(tmp_path / "a")) as f:  # root's own jobs: root's rights
        assert f.read() == b"root only\n"
