"""A real MIT Kerberos KDC for tests: a realm of its own in a temporary directory,
on a port of loopback (or of an address the test gives), started with ``krb5kdc``
and stopped after. Principals are made with ``kadmin.local``, tickets with ``kinit``.

Needs Debian's ``krb5-kdc``, ``krb5-admin-server`` and ``krb5-user`` (``make test``
installs them as root); :func:`unavailable` says why not, for a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REALM = "ROOST.TEST"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")


def unavailable() -> str | None:
    for tool in TOOLS:
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"no `{tool}` (Debian: krb5-kdc, krb5-admin-server, krb5-user)"
    try:
        # lazy: the library is what the method itself needs
        from roost.net.gss import library

        library()
    except Exception as e:
        return str(e)
    return None


def _tool(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class KDC:
    """A running KDC; ``env`` is what a client or a daemon of this realm needs."""

    def __init__(self, host: str = "127.0.0.1", prefix: list[str] | None = None) -> None:
        """``prefix`` runs the KDC inside a host of tests/system (its ``nsenter`` argv)."""
        self.host = host
        self.prefix = prefix or []
        self.dir = Path(tempfile.mkdtemp(prefix="roost-kdc-", dir="/tmp"))
        self.dir.chmod(0o755)
        self.port = _free_port(host) if not prefix else 88
        self.proc: subprocess.Popen[bytes] | None = None
        (self.dir / "krb5.conf").write_text(
            f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
            " rdns = false\n dns_canonicalize_hostname = false\n udp_preference_limit = 1\n"
            f"[realms]\n {REALM} = {{\n  kdc = {host}:{self.port}\n }}\n"
        )
        (self.dir / "kdc.conf").write_text(
            f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            f"[realms]\n {REALM} = {{\n  database_name = {self.dir}/principal\n"
            f"  key_stash_file = {self.dir}/stash\n  acl_file = {self.dir}/kadm5.acl\n"
            f"  kdc_listen = {host}:{self.port}\n  kdc_tcp_listen = {host}:{self.port}\n }}\n"
            f"[logging]\n kdc = FILE:{self.dir}/kdc.log\n"
        )
        (self.dir / "kadm5.acl").write_text("")
        self.env = {"KRB5_CONFIG": str(self.dir / "krb5.conf"), "KRB5_KDC_PROFILE": str(self.dir / "kdc.conf")}

    def _run(self, *argv: str, stdin: str | None = None) -> str:
        done = subprocess.run(list(argv), env={**os.environ, **self.env}, input=stdin, capture_output=True,
                              text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def start(self) -> KDC:
        self._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "master-password-for-tests")
        self.proc = subprocess.Popen([*self.prefix, _tool("krb5kdc"), "-n", "-r", REALM], env={**os.environ, **self.env},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        log = self.dir / "kdc.log"
        while True:  # it logs that it listens once it does (in a namespace we cannot connect from here)
            text = log.read_text(errors="replace") if log.exists() else ""
            if "commencing operation" in text:
                return self
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"krb5kdc did not start: {text}")
            time.sleep(0.05)

    def add_user(self, name: str, password: str) -> None:
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -pw {password} {name}")

    def add_service(self, name: str, keytab: Path) -> str:
        """A service principal with a random key, written to ``keytab``; its full name."""
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -randkey {name}")
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"ktadd -k {keytab} {name}")
        return f"{name}@{REALM}"

    def kinit(self, name: str, password: str, ccache: Path, prefix: list[str] | None = None) -> None:
        """A ticket for ``name`` in ``ccache`` (``prefix``: asked from inside a host)."""
        self._run(*(prefix or []), _tool("kinit"), "-c", f"FILE:{ccache}", name, stdin=password + "\n")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
