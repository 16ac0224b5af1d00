"""Reading config files from disk: search order, includes, local files, personal config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from roost.config import Config, ConfigError, write_personal_config

FACTS = {"DETECTED_CPUS": "2", "DETECTED_MEMORY": "4096"}


def load(path=None, env=None, **kw) -> Config:
    env = env or {}
    return Config.load(path, env=env, facts={**FACTS, "ROOST_HOME": env.get("ROOST_HOME", "/no-home")}, **kw)


def test_explicit_path(tmp_path: Path) -> None:
    f = tmp_path / "c"
    f.write_text("A = 1\n")
    c = load(f)
    assert c.get("A") == "1"
    assert c.source("A") == (str(f), 1)
    assert c.files == [str(f)]


def test_search_order_roost_config_then_roost_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "roost_config").write_text("WHO = home\n")
    other = tmp_path / "other"
    other.write_text("WHO = env\n")
    assert load(env={"ROOST_HOME": str(home)}).get("WHO") == "home"
    assert load(env={"ROOST_HOME": str(home), "ROOST_CONFIG": str(other)}).get("WHO") == "env"


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load(env={"ROOST_CONFIG": str(tmp_path / "absent")})
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "absent")


def test_only_env_reads_no_file(tmp_path: Path) -> None:
    c = load(env={"ROOST_CONFIG": "ONLY_ENV", "_ROOST_FROM_ENV": "1"})
    assert c.files == []
    assert c.get("FROM_ENV") == "1"


def test_missing_implicit_config_means_defaults(tmp_path: Path) -> None:
    c = load(env={"ROOST_HOME": str(tmp_path)})
    assert c.files == []
    assert c.get("LOG") == f"{tmp_path}/log"


def test_config_load_classmethod_uses_real_host_facts(tmp_path: Path) -> None:
    f = tmp_path / "c"
    f.write_text("X = $(NUM_CPUS)\n")
    c = Config.load(f, env={"ROOST_HOME": str(tmp_path)}, subsys="SCHEDD")
    assert int(c.get("X")) >= 1
    assert c.get("ROOST_HOME") == str(tmp_path)
    assert c.get("SUBSYSTEM") == "SCHEDD"


def test_include_relative_ifexist_and_sources(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "extra.conf").write_text("\nB = from-extra\n")
    main = tmp_path / "main"
    main.write_text("include : sub/extra.conf\ninclude ifexist : nothing-here\nA = $(B)\n")
    c = load(main)
    assert c.get("A") == "from-extra"
    assert c.source("B") == (str(tmp_path / "sub" / "extra.conf"), 2)


def test_include_path_is_macro_expanded(tmp_path: Path) -> None:
    (tmp_path / "x.conf").write_text("B = 2\n")
    main = tmp_path / "main"
    main.write_text(f"DIR = {tmp_path}\ninclude : $(DIR)/x.conf\n")
    assert load(main).get("B") == "2"


def test_missing_include_is_an_error_at_the_include_line(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.write_text("A = 1\ninclude : gone.conf\n")
    with pytest.raises(ConfigError) as err:
        load(main)
    assert (err.value.file, err.value.line) == (str(main), 2)
    assert "does not exist" in err.value.message


def test_include_loop(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("include : b\n")
    b.write_text("X = 1\ninclude : a\n")
    with pytest.raises(ConfigError) as err:
        load(a)
    assert err.value.file == str(b) and err.value.line == 2
    assert f"include loop: {a} -> {b} -> {a}" in err.value.message


def test_include_command_only_when_allowed(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.write_text(f"include : {sys.executable} -c \"print('FROM_CMD = yes')\" |\n")
    with pytest.raises(ConfigError, match="refusing to run include command"):
        load(main)
    c = load(main, allow_commands=True)
    assert c.get("FROM_CMD") == "yes"
    assert c.source("FROM_CMD")[0].startswith("<command: ")


def test_failing_include_command(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.write_text("include command : exit 3\n")
    with pytest.raises(ConfigError, match="failed: exit status 3"):
        load(main, allow_commands=True)


def test_local_config_file_and_dir(tmp_path: Path) -> None:
    local = tmp_path / "local.conf"
    local.write_text("A = local\nB = local\n")
    d = tmp_path / "config.d"
    d.mkdir()
    (d / "10-first").write_text("B = dir10\nC = dir10\n")
    (d / "20-second").write_text("C = dir20\n")
    (d / "30-skip~").write_text("C = backup\n")
    (d / ".hidden").write_text("C = hidden\n")
    main = tmp_path / "main"
    main.write_text(f"A = main\nLOCAL_CONFIG_FILE = {local}\nLOCAL_CONFIG_DIR = {d}\n")
    c = load(main)
    assert (c.get("A"), c.get("B"), c.get("C")) == ("local", "dir10", "dir20")
    assert c.files == [str(main), str(local), str(d / "10-first"), str(d / "20-second")]


def test_default_local_config_dir_under_home(tmp_path: Path) -> None:
    (tmp_path / "config.d").mkdir()
    (tmp_path / "config.d" / "site").write_text("SITE = yes\n")
    c = Config.load(env={"ROOST_HOME": str(tmp_path)})
    assert c.get("SITE") == "yes"


def test_env_override_after_files(tmp_path: Path) -> None:
    f = tmp_path / "c"
    f.write_text("NEGOTIATOR_INTERVAL = 60\n")
    c = load(f, env={"_ROOST_NEGOTIATOR_INTERVAL": "2"})
    assert c.get_int("NEGOTIATOR_INTERVAL") == 2


def test_personal_config_is_written_once_and_loads(tmp_path: Path) -> None:
    home = tmp_path / "pool"
    path = write_personal_config(home)
    assert path == home / "roost_config"
    path.write_text(path.read_text() + "MINE = 1\n")
    assert write_personal_config(home) == path  # not overwritten
    c = Config.load(env={"ROOST_HOME": str(home)})
    assert c.get("MINE") == "1"
    assert c.get_list("DAEMON_LIST") == ["MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD", "WEB"]
    assert c.get("BIND_ADDRESS") == "127.0.0.1"
    assert c.get("SPOOL") == f"{home.resolve()}/spool"
    assert c.get_bool("SLOT_TYPE_1_PARTITIONABLE") is True
