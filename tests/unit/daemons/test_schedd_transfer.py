"""Which files the schedd sends a starter and where returned files land (no sockets)."""

from __future__ import annotations

import os

import pytest

from roost.daemons.schedd.transfer import (
    OutputWriter,
    TransferError,
    input_files,
    output_destination,
    parse_remaps,
    safe_name,
)


def getter(ad):
    return lambda k, default=None: ad.get(k, default)


def test_input_files_executable_stdin_lists_and_directories(tmp_path):
    (tmp_path / "prog").write_text("#!/bin/sh\n")
    (tmp_path / "in.dat").write_text("stdin")
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "f").write_text("f")
    (tmp_path / "d" / "g").write_text("g")
    ad = {"Iwd": str(tmp_path), "Cmd": "prog", "In": "in.dat", "TransferInput": "a.txt, d, d/"}
    files = input_files(getter(ad))
    names = [(f.name, f.role) for f in files]
    assert names == [("prog", "executable"), ("in.dat", "stdin"), ("a.txt", ""), ("d/g", ""), ("d/e/f", ""),
                     ("g", ""), ("e/f", "")]
    assert files[2].size == 1 and files[2].path == str(tmp_path / "a.txt")
    assert input_files(getter(dict(ad, TransferExecutable=False, In="/dev/null", TransferInput=None))) == []
    assert input_files(getter(dict(ad, ShouldTransferFiles="NO"))) == []
    with pytest.raises(TransferError, match="missing"):
        input_files(getter(dict(ad, TransferInput="missing")))


def test_output_destinations_follow_out_err_and_remaps(tmp_path):
    ad = {"Iwd": str(tmp_path), "Out": "logs/out.1", "Err": "/abs/err", "TransferOutputRemaps": "r.dat = sub/x.dat; z=/tmp/z"}
    get = getter(ad)
    assert output_destination(get, {"name": "out.1"}) == str(tmp_path / "logs/out.1")
    assert output_destination(get, {"name": "anything", "role": "stderr"}) == "/abs/err"
    assert output_destination(get, {"name": "r.dat"}) == str(tmp_path / "sub/x.dat")
    assert output_destination(get, {"name": "z"}) == "/tmp/z"
    assert output_destination(get, {"name": "new/file"}) == str(tmp_path / "new/file")
    for bad in ("../escape", "/etc/passwd", "", "a/../../b"):
        with pytest.raises(TransferError):
            output_destination(get, {"name": bad})
    assert parse_remaps("a=b;c = d ;bad") == {"a": "b", "c": "d"}
    assert safe_name("x/./y") == "x/y"


def test_output_writer_replaces_atomically(tmp_path):
    dest = tmp_path / "deep" / "out.txt"
    w = OutputWriter(str(dest), 0o640, None)
    w.write(b"hello ")
    w.write(b"world")
    assert not dest.exists()
    w.finish()
    assert dest.read_bytes() == b"hello world" and (os.stat(dest).st_mode & 0o777) == 0o640
    assert [p.name for p in dest.parent.iterdir()] == ["out.txt"]
