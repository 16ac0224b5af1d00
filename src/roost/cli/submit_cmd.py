"""``roost submit``: turn a submit description into job ads.

``-dry-run`` prints the ads it would submit (one JSON object per proc,
cluster attributes merged, as ``condor_q -json`` prints them) without any
daemon. Without it the text goes to the pool's schedd to be parsed there
(``roost.cli.submit_text``: the fast path) or, where the schedd will not, is
parsed here and submitted (``roost.cli.submit_send``).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


def _user_name() -> str:
    """The submitting account, as condor_submit records it in Owner (never $USER alone: it may be unset)."""
    # lazy: only -dry-run names the owner itself; the timed submit path never needs it
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER") or str(os.getuid())


class _Plain:
    """What ``_parse_args`` gives for a command line without options (no argparse needed)."""

    dry_run = None
    file_opt = None
    queue = None
    batch_name = None

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.append: list[str] = []


def _parse_args(argv: list[str]) -> _Plain | object:
    # `roost submit job.sub [name=value ...]` is the common case and is timed from the start
    # of a new process: importing argparse costs ~5 ms, so only a line with options pays it.
    if not any(a.startswith("-") for a in argv):
        return _Plain(list(argv))
    # lazy: only a command line with options pays for argparse (~5 ms, see above)
    import argparse

    p = argparse.ArgumentParser(prog="roost submit", description="Submit jobs described by an HTCondor submit file.",
                                add_help=False)
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-dry-run", "--dry-run", dest="dry_run", metavar="FILE", nargs="?", const="-", default=None,
                   help="print the job ads (condor_q -json form) instead of submitting; FILE is where to write (- for stdout)")
    p.add_argument("-a", "-append", "--append", dest="append", action="append", default=[], metavar="COMMAND",
                   help="a submit command, as if just before the queue statement")
    p.add_argument("-file", dest="file_opt", default=None, help="the submit description file")
    p.add_argument("-queue", dest="queue", default=None, help="queue arguments, in place of the file's queue statement")
    p.add_argument("-batch-name", dest="batch_name", default=None)
    # lazy: with the argparse path only (see above)
    from roost.cli.options import add_pool_args

    add_pool_args(p)
    p.add_argument("args", nargs="*", help="submit file (- for stdin) and name=value assignments")
    return p.parse_intermixed_args(argv)


def main(argv: list[str]) -> int:
    ns: Any = _parse_args(argv)
    overrides: dict[str, str] = {}
    files: list[str] = []
    for a in ns.args:
        if "=" in a and not os.path.exists(a):
            k, _, v = a.partition("=")
            overrides[k.strip()] = v.strip()
        else:
            files.append(a)
    if ns.file_opt:
        files.append(ns.file_opt)
    # condor_submit -dry-run takes an output file; "roost submit -dry-run job.sub" reads naturally,
    # so when no submit file was named, the -dry-run argument is the submit file and output is stdout.
    out_path = "-"
    if ns.dry_run is not None:
        if not files and ns.dry_run != "-":
            files.append(ns.dry_run)
        else:
            out_path = ns.dry_run
    if len(files) > 1:
        print("roost submit: give one submit file", file=sys.stderr)
        return 1
    src = files[0] if files else "-"
    try:
        text = sys.stdin.read() if src == "-" else open(src, encoding="utf-8").read()
    except OSError as e:
        print(f"roost submit: cannot read {src}: {e.strerror}", file=sys.stderr)
        return 1
    append = list(ns.append)
    if ns.batch_name:
        append.append(f"batch_name = {ns.batch_name}")
    if ns.queue is not None:
        text = "\n".join(ln for ln in text.splitlines() if not ln.strip().lower().startswith("queue")) + f"\nqueue {ns.queue}\n"
    fname = "<stdin>" if src == "-" else src
    cwd = os.getcwd()
    name, pool = getattr(ns, "name", None), getattr(ns, "pool", None)
    if ns.dry_run is None and name is None and pool is None:
        # lazy: -dry-run never reaches the schedd; keeps `import roost.cli.submit_cmd` at ~2 ms
        from roost.cli.submit_text import submit_text

        status = submit_text(text, file=fname, cwd=cwd, overrides=overrides, append=append)
        if status is not None:
            return status
    # lazy: the submit language (~30 ms) only when the schedd does not parse the text itself
    from roost.submit.errors import SubmitError
    from roost.submit.reading import parse_text

    try:
        desc = parse_text(text, file=fname, cwd=cwd, overrides=overrides, append=append)
        if ns.dry_run is None:
            # lazy: the API (~15 ms) only to submit from here, never for -dry-run
            from roost.cli.submit_send import send

            return send(desc, name=name, pool=pool)
        clusters = desc.expand(cluster_id=1, qdate=int(time.time()), owner=_user_name())
    except SubmitError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    for c in clusters:
        for w in c.warnings:
            print(str(w), file=sys.stderr)
    # lazy: only -dry-run prints the wire form
    from roost.submit.wire import iter_json

    if out_path == "-":
        sys.stdout.writelines(iter_json(clusters))
    else:
        with open(out_path, "w", encoding="utf-8") as fh:
            fh.writelines(iter_json(clusters))
    n = sum(len(c) for c in clusters)
    print(f"{n} job(s) dry-run in {len(clusters)} cluster(s).", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
