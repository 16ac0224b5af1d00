"""``roost submit_dag FILE.dag``: submit a DAG (condor_submit_dag).

Checks the DAG (every error before anything runs, one ``file:line: problem`` line),
writes ``FILE.dag.condor.sub`` and submits the DAG manager as a scheduler-universe
job; ``-no_submit`` stops after writing the file. A rescue DAG left by an earlier
run is used unless ``-f`` or ``-DoRescueFrom`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys

from roost.cli.options import add_pool_args


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="roost submit_dag", add_help=False, allow_abbrev=False,
                                description="Submit a DAG of jobs (condor_submit_dag).")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("dag", metavar="FILE.dag")
    p.add_argument("-maxjobs", type=int, default=0, help="at most this many node jobs queued at once")
    p.add_argument("-maxidle", type=int, default=0, help="submit no more while this many node procs are idle")
    p.add_argument("-maxpre", type=int, default=0, help="at most this many PRE scripts at once")
    p.add_argument("-maxpost", type=int, default=0, help="at most this many POST scripts at once")
    p.add_argument("-f", "-force", dest="force", action="store_true",
                   help="overwrite the files of an earlier run and ignore its rescue DAGs")
    p.add_argument("-no_submit", action="store_true", help="write FILE.dag.condor.sub, submit nothing")
    p.add_argument("-append", "-a", dest="append", action="append", default=[], metavar="COMMAND",
                   help="a submit command for the DAGMan job")
    p.add_argument("-insert_sub_file", metavar="FILE", help="submit commands for the DAGMan job, from a file")
    p.add_argument("-dagman", metavar="PROGRAM", help="the DAG manager to run instead of roost's")
    p.add_argument("-config", metavar="FILE", help="a DAGMan configuration file (DAGMAN_* knobs)")
    p.add_argument("-notification", metavar="WHEN", help="the DAGMan job's e-mail notification")
    p.add_argument("-batch-name", "-batch_name", dest="batch_name", help="the DAG's batch name (JobBatchName)")
    p.add_argument("-dorescuefrom", "-DoRescueFrom", dest="dorescuefrom", type=int, default=0, metavar="N",
                   help="run from rescue DAG N (later ones are renamed .old)")
    p.add_argument("-update_submit", action="store_true", help="rewrite an existing FILE.dag.condor.sub")
    p.add_argument("-alwaysrunpost", "-AlwaysRunPost", dest="always", action="store_true", default=None,
                   help="run POST scripts after a failed PRE script")
    p.add_argument("-dontalwaysrunpost", "-DontAlwaysRunPost", dest="always", action="store_false")
    p.add_argument("-dorecovery", "-DoRecovery", dest="dorecovery", action="store_true",
                   help="start in recovery mode (read the nodes log)")
    p.add_argument("-priority", type=int, help="the DAGMan job's and its nodes' priority")
    p.add_argument("-outfile_dir", help="(accepted for compatibility)")
    p.add_argument("-load_save", metavar="FILE", help="start from a save point file (SAVE_POINT_FILE)")
    p.add_argument("-terse", action="store_true", help="print only the job id")
    add_pool_args(p)
    return p


def main(argv: list[str]) -> int:
    # condor_submit_dag's options are case-insensitive: -MaxJobs is -maxjobs
    argv = [a.lower() if a.startswith("-") and not a.startswith("--") else a for a in argv]
    ns = _parser().parse_args(argv)
    # lazy: `roost <cmd>` imports only its own command's modules
    from roost.dagman.language import DagError
    from roost.dagman.submitdag import Options, prepare, write

    opts = Options(maxjobs=ns.maxjobs, maxidle=ns.maxidle, maxpre=ns.maxpre, maxpost=ns.maxpost, force=ns.force,
                   no_submit=ns.no_submit, append=ns.append, insert_sub_file=ns.insert_sub_file, dagman=ns.dagman,
                   config=ns.config, notification=ns.notification, batch_name=ns.batch_name,
                   do_rescue_from=ns.dorescuefrom, update_submit=ns.update_submit, always_run_post=ns.always,
                   do_recovery=ns.dorecovery, priority=ns.priority, outfile_dir=ns.outfile_dir,
                   load_save=ns.load_save)
    # lazy: the pool's modules only for a command that gets this far
    from roost.api.errors import PoolError
    from roost.api.schedd import Schedd
    from roost.dagman.api import refuse_if_running, submit_prepared
    from roost.submit import SubmitError

    schedd = None if ns.no_submit else Schedd(name=ns.name, pool=ns.pool)
    try:
        if schedd is not None:
            refuse_if_running(ns.dag, schedd)  # before -f removes the lock file
        prepared = prepare(ns.dag, opts)
        write(prepared)
        for note in prepared.notes:  # a warning even with -terse, on stderr
            if note.startswith("WARNING"):
                print(note, file=sys.stderr)
            elif not ns.terse:
                print(note)
        if not ns.terse:
            print("-----------------------------------------------------------------------")
            print(f"File for submitting this DAG to roost   : {os.path.relpath(prepared.sub_file)}")
            for what, suffix in (("Log of DAGMan debugging messages", "dagman.out"),
                                 ("Log of the life of condor_dagman itself", "dagman.log")):
                print(f"{what:<40}: {os.path.relpath(prepared.dag_file)}.{suffix}")
            print("-----------------------------------------------------------------------")
        if schedd is None:
            return 0
        result = submit_prepared(prepared, schedd)
    except DagError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    except (PoolError, SubmitError, OSError, ValueError) as e:
        print(str(e) if str(e).startswith("ERROR") else f"ERROR: {e}", file=sys.stderr)
        return 1
    finally:
        if schedd is not None:
            schedd.close()
    if ns.terse:
        print(f"{result.cluster}.0 - {result.cluster}.0")
    else:
        print("Submitting job(s).")
        print(f"1 job(s) submitted to cluster {result.cluster}.")
        print("-----------------------------------------------------------------------")
    return 0
