"""``roost submit_dag``: check a DAG, write ``FILE.dag.condor.sub`` and submit the DAG
manager as a scheduler-universe job, as condor_submit_dag does.

The manager is ``python -m roost.dagman``; the schedd runs it as the DAG's owner,
restarts it when it dies (exit codes 0-2 end the job, anything else restarts it in
recovery), and stops it with SIGUSR1 on ``roost rm`` (it then removes the node jobs
and writes a rescue DAG).
"""

from __future__ import annotations

import os
import pwd
import shlex
import sys
from dataclasses import dataclass, field

from roost.dagman.language import Dag, DagError, check, parse_file
from roost.dagman.rescue import rescue_numbers, rescue_path
from roost.dagman.splice import expand_splices

# What the manager needs from the submitter's environment (HTCondor's list, and roost's).
GETENV = "ROOST_*,_ROOST_*,CONDOR_CONFIG,_CONDOR_*,PATH,PYTHONPATH,PERL*,PEGASUS_*,TZ,HOME,USER,LANG,LC_ALL,VIRTUAL_ENV"


@dataclass
class Options:
    """condor_submit_dag's options that change what is submitted."""

    maxjobs: int = 0
    maxidle: int = 0
    maxpre: int = 0
    maxpost: int = 0
    force: bool = False
    no_submit: bool = False
    append: list[str] = field(default_factory=list)
    insert_sub_file: str | None = None
    dagman: str | None = None
    config: str | None = None
    notification: str | None = None
    batch_name: str | None = None
    do_rescue_from: int = 0
    update_submit: bool = False
    always_run_post: bool | None = None
    do_recovery: bool = False
    priority: int | None = None
    outfile_dir: str | None = None
    load_save: str | None = None
    extra_args: list[str] = field(default_factory=list)


@dataclass
class Prepared:
    dag: Dag
    dag_file: str
    sub_file: str
    text: str
    rescue: int  # the rescue DAG the run starts from (0: none)
    notes: list[str] = field(default_factory=list)


def files_of(dag_file: str) -> dict[str, str]:
    """The files a DAG's run writes, by condor_dagman's names."""
    return {k: f"{dag_file}.{k}" for k in ("condor.sub", "dagman.out", "dagman.log", "lib.out", "lib.err",
                                            "nodes.log", "metrics", "lock")}


def load(dag_file: str, notes: list[str] | None = None) -> Dag:
    """Parse the DAG with its splices. A node's submit file (or SUBDAG EXTERNAL's DAG
    file) that does not exist yet is no error: an earlier node or a PRE script may
    write it, and HTCondor's DAGMan looks for it when the node is about to run (a
    node whose file is still missing then fails, and may be retried). Each such file
    is named in ``notes`` as a warning."""
    base = os.path.dirname(dag_file)
    dag = parse_file(dag_file)
    expand_splices(dag, base_dir=base)
    # (check also ties a node naming a SUBMIT-DESCRIPTION to it)
    for problem in check(dag, lambda p: os.path.exists(os.path.join(base, p))):
        if notes is not None:
            notes.append(f"WARNING: {problem} yet: it must when the node is submitted")
    return dag


def prepare(dag_file: str, opts: Options) -> Prepared:
    """Everything condor_submit_dag checks and writes, before anything is submitted.
    DagError for a bad DAG, FileExistsError/ValueError for the rest (one line each)."""
    dag_file = os.path.abspath(dag_file)
    if not os.path.exists(dag_file):
        raise FileNotFoundError(f"DAG file {dag_file} does not exist")
    notes: list[str] = []
    dag = load(dag_file, notes)
    files = files_of(dag_file)
    directory = os.path.dirname(dag_file)
    why = manager_cannot_write(directory)
    if why is not None:
        raise PermissionError(why)
    numbers = rescue_numbers(dag_file, os.listdir(directory))
    rescue = 0
    if opts.force:
        for n in numbers:
            os.replace(rescue_path(dag_file, n), rescue_path(dag_file, n) + ".old")
        for k in ("condor.sub", "lib.out", "lib.err", "nodes.log", "metrics", "lock"):
            try:
                os.unlink(files[k])
            except FileNotFoundError:
                pass
        numbers = []
    elif opts.load_save:
        notes.append(f"Starting from save point file {opts.load_save}")
    elif opts.do_rescue_from:
        if opts.do_rescue_from not in numbers:
            raise ValueError(f"-DoRescueFrom {opts.do_rescue_from}: {rescue_path(dag_file, opts.do_rescue_from)} "
                             "does not exist")
        rescue = opts.do_rescue_from
        for n in numbers:
            if n > rescue:
                os.replace(rescue_path(dag_file, n), rescue_path(dag_file, n) + ".old")
    elif numbers:
        rescue = numbers[-1]
    if rescue:
        notes.append(f"Running rescue DAG {rescue} ({rescue_path(dag_file, rescue)})")
    if os.path.exists(files["condor.sub"]) and not (opts.force or opts.update_submit or rescue or opts.load_save
                                                     or os.path.exists(files["lock"])):
        raise FileExistsError(f'ERROR: "{files["condor.sub"]}" already exists (use -f to overwrite it, '
                              "-update_submit to rewrite it)")
    text = submit_text(dag, dag_file, opts, rescue)
    return Prepared(dag, dag_file, files["condor.sub"], text, rescue, notes)


def manager_cannot_write(directory: str) -> str | None:
    """Why the DAG's manager could not write its files (.dagman.out, .nodes.log, the
    lock and rescue DAGs) in ``directory``; None when it can. It runs as the submitter,
    except root's, which runs as nobody (a root schedd never runs a job as root): a
    0755 directory of root's fails the run at once, its reason only in .lib.err."""
    if os.geteuid() != 0:
        if os.access(directory, os.W_OK | os.X_OK):
            return None
        return (f"the DAG's directory {directory} is not writable by you: DAGMan writes its "
                "files (.dagman.out, .nodes.log, the lock, rescue DAGs) there")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    def may(path: str, bits: int) -> bool:  # bits of 0o7 (rwx), as nobody with its own group only
        st = os.stat(path)
        if st.st_uid == nobody.pw_uid:
            return (st.st_mode >> 6) & bits == bits
        if st.st_gid == nobody.pw_gid:
            return (st.st_mode >> 3) & bits == bits
        return st.st_mode & bits == bits
    path = os.path.abspath(directory)
    walk, up = [path], path
    while up != os.path.dirname(up):
        up = os.path.dirname(up)
        walk.append(up)
    if all(may(p, 0o1) for p in walk) and may(path, 0o3):
        return None
    return (f"root's DAGs run as user nobody (a root schedd runs no job as root), who cannot write in "
            f"the DAG's directory {path}: DAGMan writes its files (.dagman.out, .nodes.log, the lock, rescue "
            "DAGs) there; submit it from a directory nobody may write, or as another user")


def manager_command(opts: Options) -> list[str]:
    if opts.dagman:
        return shlex.split(opts.dagman)
    return [sys.executable, "-m", "roost.dagman"]


def submit_text(dag: Dag, dag_file: str, opts: Options, rescue: int) -> str:
    """The DAGMan job's submit description (FILE.dag.condor.sub)."""
    files = files_of(dag_file)
    name = os.path.basename(dag_file)
    exe, *pre = manager_command(opts)
    args = pre + ["-p", "0", "-f", "-l", ".", "-Lockfile", files["lock"], "-AutoRescue", "1",
                  "-DoRescueFrom", str(rescue), "-Dag", dag_file, "-CsdVersion", "roost"]
    for flag, v in (("-MaxJobs", opts.maxjobs), ("-MaxIdle", opts.maxidle), ("-MaxPre", opts.maxpre),
                    ("-MaxPost", opts.maxpost)):
        if v:
            args += [flag, str(v)]
    if opts.always_run_post is True:
        args.append("-AlwaysRunPost")
    elif opts.always_run_post is False:
        args.append("-DontAlwaysRunPost")
    if opts.do_recovery:
        args.append("-DoRecovery")
    if opts.config:
        args += ["-Config", os.path.abspath(opts.config)]
    if opts.priority is not None:
        args += ["-Priority", str(opts.priority)]
    if opts.load_save:
        args += ["-load_save", opts.load_save]
    if opts.outfile_dir:
        args += ["-outfile_dir", os.path.abspath(opts.outfile_dir)]
    args += opts.extra_args
    quoted = " ".join("'" + a.replace("'", "''") + "'" if (" " in a or "'" in a or '"' in a) else a for a in args)
    quoted = quoted.replace('"', '""')
    env_pairs = [f"{k}={v}" for k, v in dag.env_set]
    getenv = GETENV + ("," + ",".join(dag.env_get) if dag.env_get else "")
    lines = [
        f"# Filename: {files['condor.sub']}",
        f"# Generated by roost submit_dag {name}",
        "universe = scheduler",
        f"executable = {exe}",
        f'arguments = "{quoted}"',
        f"getenv = {getenv}",
        f"initialdir = {os.path.dirname(dag_file)}",
        f"log = {files['dagman.log']}",
        f"output = {files['lib.out']}",
        f"error = {files['lib.err']}",
        "remove_kill_sig = SIGUSR1",
        '+OtherJobRemoveRequirements = "DAGManJobId =?= $(cluster)"',
        "on_exit_remove = (ExitSignal =?= 11 || (ExitCode =!= UNDEFINED && ExitCode >= 0 && ExitCode <= 2))",
        f"notification = {opts.notification or 'never'}",
        f"batch_name = {opts.batch_name or name + '+$(cluster)'}",
        f'+DAGManDagFile = "{dag_file}"',
        # the interpreter is the schedd's own, which a sub-DAG's manager (the owner) may
        # not be able to see: the schedd checks it when it starts the job
        "skip_filechecks = true",
    ]
    if env_pairs:
        lines.append('environment = "' + " ".join("'" + p.replace("'", "''") + "'" for p in env_pairs) + '"')
    if opts.priority is not None:
        lines.append(f"priority = {opts.priority}")
    for attr, value in dag.job_attrs:
        lines.append(f"+{attr} = {value}")
    if opts.insert_sub_file:
        with open(opts.insert_sub_file, encoding="utf-8") as f:
            lines += [ln for ln in f.read().splitlines() if ln.strip() and not ln.strip().lower().startswith("queue")]
    lines += opts.append
    lines.append("queue")
    return "\n".join(lines) + "\n"


def write(prepared: Prepared) -> None:
    with open(prepared.sub_file, "w", encoding="utf-8") as f:
        f.write(prepared.text)


__all__ = ["DagError", "Options", "Prepared", "files_of", "load", "prepare", "submit_text", "write"]
