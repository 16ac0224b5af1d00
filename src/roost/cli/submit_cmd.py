"""``roost submit``: turn a submit description into job ads (condor_submit).

``-dry-run FILE`` writes condor_submit's dry-run listing (``roost.cli.submit_dryrun``)
without any daemon; ``-dry-run -json`` the ads as ``condor_q -json`` prints them.
Without it the text goes to the pool's schedd to be parsed there
(``roost.cli.submit_text``: the fast path) or, where the schedd will not or an
option needs the jobs counted or changed here (``-maxjobs``, ``-spool``,
``-interactive``), is parsed here and submitted (``roost.cli.submit_send``).
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
    terse = False
    verbose = False
    spool = False
    interactive = False
    maxjobs = None
    json = False

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
                   help="write condor_submit's dry-run listing of the job ads to FILE (- for stdout) "
                        "instead of submitting")
    p.add_argument("-json", "--json", action="store_true", help="with -dry-run: the ads as condor_q -json prints them")
    p.add_argument("-terse", "--terse", action="store_true", help="print only the job id ranges: C.0 - C.N")
    p.add_argument("-maxjobs", "--maxjobs", type=int, default=None, metavar="N",
                   help="submit nothing if more than N jobs would be queued")
    p.add_argument("-spool", "--spool", action="store_true",
                   help="send the input files to the schedd's spool now; the jobs wait held until they are there "
                        "(fetch the output with roost transfer_data)")
    p.add_argument("-remote", "--remote", default=None, metavar="SCHEDD",
                   help="submit to the schedd called SCHEDD, spooling the input (-name SCHEDD -spool)")
    p.add_argument("-interactive", "-i", "--interactive", action="store_true",
                   help="submit one interactive job and open a shell in it once it runs (as condor_submit -interactive)")
    p.add_argument("-verbose", "-v", "--verbose", action="store_true",
                   help="print each job's ad as it is queued (implied by a submit file '-', unless -terse)")
    p.add_argument("-disable", action="store_true", help="accepted for condor_submit's sake (no file checks are made)")
    # condor_submit's: named exactly, so that argparse never reads them as -a with a glued value
    for flag in ("-allow-crlf-script", "-debug", "-unused"):
        p.add_argument(flag, action="store_true", help="accepted for condor_submit's sake")
    p.add_argument("-a", "-append", "--append", dest="append", action="append", default=[], metavar="COMMAND",
                   help="a submit command, as if just before the queue statement")
    p.add_argument("-file", dest="file_opt", default=None, help="the submit description file")
    p.add_argument("-queue", "-q", dest="queue", nargs="+", default=None, metavar="ARG",
                   help="the queue statement's arguments (every word up to the next option: put it last), "
                        "for a submit file without one")
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
    # condor_submit reads no submit file when -queue and name=value pairs say it all
    no_file = ns.interactive or (ns.queue is not None and overrides)
    if ns.dry_run is not None:
        if not files and ns.dry_run != "-" and not no_file:
            files.append(ns.dry_run)
        else:
            out_path = ns.dry_run
    if len(files) > 1:
        print("roost submit: give one submit file", file=sys.stderr)
        return 1
    if ns.maxjobs is not None and ns.maxjobs < -1:
        print(f"ERROR: -maxjobs takes a number of jobs (-1 or more), not {ns.maxjobs}", file=sys.stderr)
        return 1
    src = files[0] if files else ("" if no_file else "-")
    try:
        text = "" if not src else sys.stdin.read() if src == "-" else open(src, encoding="utf-8").read()
    except OSError as e:
        print(f"roost submit: cannot read {src}: {e.strerror}", file=sys.stderr)
        return 1
    append = list(ns.append)
    if ns.batch_name:
        append.append(f"batch_name = {ns.batch_name}")
    if ns.queue is not None:
        if any(_is_queue(ln) for ln in text.splitlines()):
            print("ERROR: -queue argument conflicts with queue statement in submit file", file=sys.stderr)
            return 1
        text += f"\nqueue {' '.join(ns.queue)}\n"
    if ns.interactive:
        # lazy: only -interactive
        from roost.cli.submit_interactive import interactive_text

        text, append = interactive_text(text, append)
    if getattr(ns, "remote", None):
        ns.name, ns.spool = ns.remote, True  # condor_submit -remote: -name and -spool
    if ns.spool:
        # lazy: only -spool
        from roost.cli.submit_spool import HOLD_LINES, LEAVE_IN_QUEUE

        append += HOLD_LINES
        overrides.setdefault("leave_in_queue", LEAVE_IN_QUEUE)  # as at the top: the file's own wins
    fname = "<stdin>" if src == "-" else (src or "<interactive>")
    cwd = os.getcwd()
    name, pool = getattr(ns, "name", None), getattr(ns, "pool", None)
    # condor_submit: a submit file named "-" (stdin) implies -verbose unless -terse
    verbose = bool(ns.verbose or ("-" in files and not ns.terse)) and not ns.interactive and not ns.spool
    local = ns.dry_run is not None or ns.maxjobs is not None or ns.spool or ns.interactive or verbose
    if not local and name is None and pool is None:
        # lazy: -dry-run never reaches the schedd; keeps `import roost.cli.submit_cmd` at ~2 ms
        from roost.cli.submit_text import submit_text

        status = submit_text(text, file=fname, cwd=cwd, overrides=overrides, append=append, terse=ns.terse)
        if status is not None:
            return status
    # lazy: the submit language (~30 ms) only when the schedd does not parse the text itself
    from roost.submit.errors import SubmitError
    from roost.submit.reading import parse_text

    try:
        desc = parse_text(text, file=fname, cwd=cwd, overrides=overrides, append=append)
        if ns.maxjobs is not None and ns.maxjobs > 0:
            n = sum(len(c) for c in desc.expand(cluster_id=1, qdate=int(time.time()), owner=_user_name()))
            if n > ns.maxjobs:
                print(f"\nERROR: Number of submitted jobs would exceed -maxjobs ({ns.maxjobs})", file=sys.stderr)
                return 1
        if ns.dry_run is None:
            if ns.spool or ns.interactive:
                # lazy: only -spool/-interactive change jobs after submitting them
                from roost.cli import submit_interactive, submit_spool

                if ns.interactive:
                    return submit_interactive.run(desc, name=name, pool=pool, spool=ns.spool)
                return submit_spool.run(desc, name=name, pool=pool, terse=ns.terse)
            # lazy: the API (~15 ms) only to submit from here, never for -dry-run
            from roost.cli.submit_send import send

            return send(desc, name=name, pool=pool, terse=ns.terse, verbose=verbose)
        clusters = desc.expand(cluster_id=1, qdate=int(time.time()), owner=_user_name())
    except SubmitError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    # an empty description's warnings (no queued job, patterns that matched nothing) are its own
    for w in [w for c in clusters for w in c.warnings] if clusters else desc.warnings:
        print(str(w), file=sys.stderr)
    return _dry_run(clusters, out_path, ns.json, ns.terse)


def _is_queue(line: str) -> bool:
    words = line.split(None, 1)
    return bool(words) and words[0].lower() == "queue"


def _dry_run(clusters: list[Any], out_path: str, json: bool, terse: bool) -> int:
    if json:
        # lazy: only -dry-run -json prints the wire form
        from roost.submit.wire import iter_json

        if out_path == "-":
            sys.stdout.writelines(iter_json(clusters))
        else:
            with open(out_path, "w", encoding="utf-8") as fh:
                fh.writelines(iter_json(clusters))
        n = sum(len(c) for c in clusters)
        print(f"{n} job(s) dry-run in {len(clusters)} cluster(s).", file=sys.stderr)
        return 0
    # lazy: only -dry-run prints the listing
    from roost.cli import submit_dryrun

    if out_path == "-":
        submit_dryrun.write(clusters, sys.stdout, sys.stdout, terse)
        return 0
    try:
        with open(out_path, "w", encoding="utf-8") as fh:
            submit_dryrun.write(clusters, sys.stdout, fh, terse)
    except OSError as e:
        print(f"roost submit: cannot write {out_path}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
