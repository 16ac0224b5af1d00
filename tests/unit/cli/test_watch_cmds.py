"""`roost ssh_to_job`'s command line: options before the job id, and every word after
it is the remote command's, dashes included (as ssh reads its command)."""

from __future__ import annotations

import pytest

from roost.cli.options import UsageError
from roost.cli.ssh_to_job_cmd import split_argv


def test_the_command_keeps_its_dashes() -> None:
    assert split_argv(["3.0", "id", "-un"]) == ([], "3.0", ["id", "-un"])
    assert split_argv(["-name", "schedd@h", "-auto-retry", "3", "ls", "-l"]) == (
        ["-name", "schedd@h", "-auto-retry"], "3", ["ls", "-l"])
    assert split_argv(["-po", "cm:9618", "12.1"]) == (["-po", "cm:9618"], "12.1", [])  # an abbreviated -pool


def test_no_job_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        split_argv(["-auto-retry"])
