"""A daemon's security from its configuration: a bad setting is one line naming the
file and line, the daemon refuses to start, and good settings give the policy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roost.config import Config, ConfigError
from roost.daemons.security import Security
from roost.net.tokens import TokenError

from .daemon_procs import make_home


def load(home: Path) -> Config:
    return Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)})


def test_a_bad_allow_entry_names_the_file_and_line(tmp_path: Path) -> None:
    home = make_home(tmp_path, "ALLOW_WRITE = alice@*, +staff\n")
    with pytest.raises(ConfigError) as err:
        Security(load(home), "SCHEDD", make_key=True)
    assert str(err.value).startswith(f"{home / 'roost_config'}:")
    assert "ALLOW_WRITE" in str(err.value) and "+staff" in str(err.value)


def test_a_trust_domain_that_is_no_word_is_refused(tmp_path: Path) -> None:
    home = make_home(tmp_path, "TRUST_DOMAIN = my pool\n")
    with pytest.raises(TokenError, match="TRUST_DOMAIN.*roost_config"):
        Security(load(home), "SCHEDD", make_key=True)


def test_the_daemon_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    home = make_home(tmp_path, "DENY_DAEMON = +staff\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("_ROOST_")}
    env.pop("ROOST_CONFIG", None)
    env["ROOST_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "roost.daemons.negotiator"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"roost negotiator: {home / 'roost_config'}:{len((home / 'roost_config').read_text().splitlines())}: "
        "DENY_DAEMON: entry '+staff': netgroups are not supported"
    ]


def test_defaults_give_the_daemons_and_the_owner_daemon_rights_and_users_write(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    sec = Security(load(home), "STARTD", make_key=True)
    me = f"{__import__('pwd').getpwuid(os.geteuid()).pw_name}@{sec.uid_domain}"
    assert sec.token is not None  # minted from the pool key this test made
    decide = sec.policy.decide
    assert decide(sec.identity, "10.1.1.1", "ACTIVATE_CLAIM", "STARTD").allowed
    assert decide(me, "127.0.0.1", "DRAIN", "STARTD").allowed
    assert not decide(f"bob@{sec.uid_domain}", "127.0.0.1", "ACTIVATE_CLAIM", "STARTD").allowed
    assert not decide(None, "127.0.0.1", "REQUEST_CLAIM", "STARTD").allowed
    assert decide(None, "127.0.0.1", "STATUS", "MASTER").allowed


def test_the_owner_token_is_written_once_and_again_when_its_key_changed(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    sec = Security(load(home), "MASTER", make_key=True)
    path = sec.ensure_owner_token()
    assert path is not None and os.stat(path).st_mode & 0o777 == 0o600
    first = Path(path).read_text()
    assert Security(load(home), "MASTER", make_key=True).ensure_owner_token() is None  # still good
    os.unlink(sec.settings.pool_key_file)  # a new pool key: the old token no longer verifies
    again = Security(load(home), "MASTER", make_key=True).ensure_owner_token()
    assert again == path and Path(path).read_text() != first


def test_queue_super_users_change_with_reconfig_and_the_schedds_account_stays_one() -> None:
    from roost.daemons.schedd.access import QueueRights

    rights = QueueRights("example", ["root", "alice"], "condor")
    assert rights.is_super("alice") and rights.is_super("condor") and not rights.is_super("bob")
    rights.set_super_users(["bob"])
    assert rights.is_super("bob") and rights.is_super("condor") and not rights.is_super("alice")


def test_bad_tls_and_map_settings_name_the_file_and_line(tmp_path: Path) -> None:
    home = make_home(tmp_path, "SEC_DEFAULT_ENCRYPTION = sometimes\n")
    with pytest.raises(ConfigError) as err:
        Security(load(home), "SCHEDD", make_key=True)
    assert str(err.value).startswith(f"{home / 'roost_config'}:") and "'sometimes'" in str(err.value)

    mapfile = tmp_path / "certmap"
    mapfile.write_text('SSL "/CN=a" a@x\nSSL /(/ b@x\n')
    home = make_home(tmp_path / "m", f"CERTIFICATE_MAPFILE = {mapfile}\n")
    with pytest.raises(ConfigError) as err:
        Security(load(home), "SCHEDD", make_key=True)
    assert str(err.value).startswith(f"{mapfile}:2: bad regular expression")

    home = make_home(tmp_path / "c", f"AUTH_SSL_SERVER_CAFILE = {tmp_path / 'none.crt'}\n")
    sec = Security(load(home), "SCHEDD", make_key=True)
    assert sec.server_tls("127.0.0.1") is None  # loopback listeners take no TLS
    with pytest.raises(ConfigError) as err:
        sec.server_tls("10.1.2.3")  # the self-signed certificate is made; the CA file is missing
    assert "AUTH_SSL_SERVER_CAFILE" in str(err.value) and "no such file" in str(err.value)
    assert (home / "ssl" / "host.crt").exists() and oct((home / "ssl" / "host.key").stat().st_mode)[-3:] == "600"
