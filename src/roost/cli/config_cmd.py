"""``roost config``: print configuration values, like condor_config_val."""

from __future__ import annotations

import argparse
import os
import sys

from roost.config import Config, ConfigError

USAGE = """\
roost config [options] NAME...     print the expanded value of each knob
roost config -dump                   print every knob

options:
  -v, -verbose        also say where each value was set (file:line)
  -raw                print values as written, without expanding $(...)
  -dump               print every defined knob as NAME = value
  -config             print the configuration files that were read
  -subsystem NAME     look up as daemon NAME would (SCHEDD, STARTD ...)
  -local-name NAME    look up with LOCALNAME.* overrides for NAME
  -file PATH          read PATH instead of $ROOST_CONFIG / $ROOST_HOME/roost_config
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="roost config", usage=USAGE, add_help=False)
    p.add_argument("names", nargs="*")
    p.add_argument("-v", "-verbose", "--verbose", dest="verbose", action="store_true")
    p.add_argument("-raw", "--raw", dest="raw", action="store_true")
    p.add_argument("-dump", "--dump", dest="dump", action="store_true")
    p.add_argument("-config", "--config", dest="show_files", action="store_true")
    p.add_argument("-subsystem", "--subsystem", dest="subsys")
    p.add_argument("-local-name", "--local-name", dest="localname")
    p.add_argument("-file", "--file", dest="file")
    p.add_argument("-h", "-help", "--help", dest="help", action="store_true")
    return p


def _where(cfg: Config, name: str) -> str:
    entry = cfg.entry(name)
    if entry is None:
        return ""
    place = f"{entry.file}:{entry.line}" if entry.line else entry.file
    return f"  # at: {place}" + (f" ({entry.via})" if entry.via else "")


def _value(cfg: Config, name: str, raw: bool) -> str | None:
    return cfg.raw(name) if raw else cfg.get(name)


def main(argv: list[str]) -> int:
    """Entry point: ``argv`` excludes the program and subcommand names."""
    args, unknown = _parser().parse_known_args(argv)
    if args.help:
        sys.stdout.write(USAGE)
        return 0
    if unknown:
        sys.stderr.write(f"roost config: unknown option {unknown[0]}\n{USAGE}")
        return 2
    try:
        cfg = Config.load(args.file, env=os.environ, subsys=args.subsys, localname=args.localname)
    except ConfigError as e:
        sys.stderr.write(f"roost config: {e}\n")
        return 1
    for warning in cfg.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if args.show_files:
        for f in cfg.files:
            print(f)
        if not cfg.files:
            print("(no configuration file; built-in defaults only)")
    if not args.names and not args.dump and not args.show_files:
        sys.stderr.write(USAGE)
        return 2
    status = 0
    try:
        if args.dump:
            for name in cfg.names():
                print(f"{name} = {_value(cfg, name, args.raw)}".rstrip())
                if args.verbose:
                    print(_where(cfg, name))
        for name in args.names:
            value = _value(cfg, name, args.raw)
            if value is None:
                sys.stderr.write(f"Not defined: {name}\n")
                status = 1
                continue
            if args.verbose:
                print(f"{name} = {value}")
                print(_where(cfg, name))
            else:
                print(value)
    except ConfigError as e:
        sys.stderr.write(f"roost config: {e}\n")
        return 1
    return status
