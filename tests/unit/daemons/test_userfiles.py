"""Opening a user's files as root (userfiles.py): a link anywhere on the path, a hard
link, a FIFO or a device never makes root open something else, block, or give a file
away; a new file is the user's."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from roost.daemons.userfiles import User, open_as, open_beneath

NOBODY = User(65534, 65534, frozenset({65534}))
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the checks matter (and chown works) as root")


def _home(tmp_path: Path) -> Path:
    """A directory nobody owns, reachable by nobody (pytest's own are root's 0700)."""
    for p in (tmp_path, *tmp_path.parents):
        if p == Path("/"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o001)
    home = tmp_path / "home"
    home.mkdir()
    if os.geteuid() == 0:
        os.chown(home, NOBODY.uid, NOBODY.gid)
    return home


@root_only
def test_a_link_in_the_middle_of_the_path_gives_root_no_more_than_the_user(tmp_path: Path) -> None:
    home = _home(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "shadow").write_text("root's")
    (home / "etc").symlink_to(secret)
    # as the user would: the link leads to root's file, which the user may not write
    with pytest.raises(OSError) as e:
        open_as(str(home / "etc" / "shadow"), NOBODY, write=True, create=True, truncate=True)
    assert e.value.errno == errno.EACCES
    with pytest.raises(OSError) as e:  # nor create in root's directory through it
        open_as(str(home / "etc" / "new"), NOBODY, write=True, create=True)
    assert not (secret / "new").exists()
    # below a trusted top (a sandbox, read as root with no rights to check): no link at all
    with pytest.raises(OSError) as e:
        open_beneath(str(home), str(home / "etc" / "shadow"))
    assert e.value.errno == errno.ELOOP
    assert (secret / "shadow").read_text() == "root's"


@root_only
def test_hard_links_fifos_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    home = _home(tmp_path)
    target = tmp_path / "roots-file"
    target.write_text("x")
    os.chmod(target, 0o666)
    os.link(target, home / "hard")
    os.mkfifo(home / "fifo")
    os.mknod(home / "null", 0o666 | 0o020000, os.makedev(1, 3))
    for name in ("hard", "fifo", "null"):
        with pytest.raises(OSError):
            open_as(str(home / name), NOBODY, write=True, create=True)
    assert os.stat(target).st_uid == 0  # never given away


@root_only
def test_a_new_file_is_the_users_and_an_existing_one_is_not_given_away(tmp_path: Path) -> None:
    home = _home(tmp_path)
    fd = open_as(str(home / "out"), NOBODY, write=True, create=True)
    os.close(fd)
    assert os.stat(home / "out").st_uid == NOBODY.uid
    theirs = home / "roots"
    theirs.write_text("keep")
    os.chmod(theirs, 0o644)  # root's, in the user's directory: the user may not write it
    with pytest.raises(OSError) as e:
        open_as(str(theirs), NOBODY, write=True, create=True, truncate=True)
    assert e.value.errno == errno.EACCES
    assert theirs.read_text() == "keep" and os.stat(theirs).st_uid == 0


@root_only
def test_a_directory_the_user_cannot_search_is_refused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    closed = home / "closed"
    closed.mkdir(mode=0o700)  # root's
    (closed / "f").write_text("x")
    os.chmod(closed / "f", 0o644)
    with pytest.raises(OSError) as e:
        open_as(str(closed / "f"), NOBODY)
    assert e.value.errno == errno.EACCES


def test_truncation_happens_only_after_the_checks(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("old content")
    me = User(os.geteuid(), os.getegid(), frozenset(os.getgroups()))
    fd = open_as(str(f), me, write=True, truncate=True)
    os.write(fd, b"new")
    os.close(fd)
    assert f.read_text() == "new"
