"""``roost ca``: a certificate authority for a pool that has none (the SSL method, and
host certificates its clients can check with ``AUTH_SSL_CLIENT_CAFILE``).

``create`` makes the CA on the central manager (``$(LOCAL_DIR)/ssl/ca``: ``ca.crt``,
and ``ca.key``, owner-only, which never leaves that host). ``issue`` signs a host's
certificate (its names and addresses in the certificate, so clients can check the
host they reach) or a user's (its subject is what CERTIFICATE_MAPFILE maps).
``subject`` prints a certificate's subject as the map file sees it.
"""

from __future__ import annotations

import argparse
import os
import sys

from roost.config import Config, ConfigError


def _default_ca_dir() -> str:
    try:
        cfg = Config.load(env=os.environ, subsys="TOOL")
    except ConfigError as e:
        raise SystemExit(f"roost ca: {e}") from None
    return os.path.join(cfg.get("LOCAL_DIR") or ".", "ssl", "ca")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="roost ca", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("create", help="make this pool's CA")
    c.add_argument("-dir", help="where (default $(LOCAL_DIR)/ssl/ca)")
    c.add_argument("-name", default="roost pool CA", help="the CA's common name")
    c.add_argument("-days", type=int, default=3650)
    i = sub.add_parser("issue", help="sign a host's or a user's certificate with the CA")
    who = i.add_mutually_exclusive_group(required=True)
    who.add_argument("-host", help="a host's name (its certificate names it, and every -ip/-dns)")
    who.add_argument("-user", help="a user's name (the certificate's CN)")
    i.add_argument("-ip", action="append", default=[], help="an address of the host (repeat)")
    i.add_argument("-dns", action="append", default=[], help="another DNS name of the host (repeat)")
    i.add_argument("-org", default=None, help="the certificate's O (organization)")
    i.add_argument("-out", help="PREFIX: writes PREFIX.crt and PREFIX.key (default: the name)")
    i.add_argument("-dir", help="the CA's directory (default $(LOCAL_DIR)/ssl/ca)")
    i.add_argument("-days", type=int, default=825)
    s = sub.add_parser("subject", help="a certificate's subject, as CERTIFICATE_MAPFILE sees it")
    s.add_argument("file")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    # lazy: cryptography loads only for this command
    from roost.net.certs import CertError, create_ca, issue, subject_of_file

    try:
        if args.what == "create":
            made = create_ca(args.dir or _default_ca_dir(), args.name, days=args.days)
            print(f"made CA {made.subject}\n  certificate {made.cert_path} (copy it to every host)\n"
                  f"  key         {made.key_path} (keep it here; owner-only)")
        elif args.what == "issue":
            name = args.host or args.user
            names = [args.host, *args.dns, *args.ip] if args.host else []
            made = issue(args.dir or _default_ca_dir(), args.out or name, name, names=names,
                         days=args.days, organization=args.org)
            print(f"issued {made.subject}\n  certificate {made.cert_path}\n  key         {made.key_path} (owner-only)")
        else:
            print(subject_of_file(args.file))
    except CertError as e:
        print(f"roost ca: {e}", file=sys.stderr)
        return 1
    return 0
