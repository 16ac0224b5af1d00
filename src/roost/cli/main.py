"""The `roost` command: dispatches `roost <subcommand> ...` to the module that owns it.

Subcommand modules are imported only when used, so `roost q` never pays for
importing the submit language and vice versa.
"""

from __future__ import annotations

import importlib
import sys

from roost import __version__

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "classad": ("roost.cli.classad_cmd", "evaluate, match and convert ClassAds"),
    "submit": ("roost.cli.submit_cmd", "turn a submit description into jobs (-dry-run)"),
    "config": ("roost.cli.config_cmd", "show effective configuration values"),
    "up": ("roost.cli.up_cmd", "start a personal pool under $ROOST_HOME"),
    "down": ("roost.cli.down_cmd", "stop the personal pool"),
    "submit_dag": ("roost.cli.submit_dag_cmd", "submit a DAG of dependent jobs (condor_submit_dag)"),
    "q": ("roost.cli.q_cmd", "list jobs in the queue (condor_q)"),
    "status": ("roost.cli.status_cmd", "list slots and daemons of the pool (condor_status)"),
    "rm": ("roost.cli.act_cmd", "remove jobs (condor_rm)"),
    "hold": ("roost.cli.act_cmd", "put jobs on hold (condor_hold)"),
    "release": ("roost.cli.act_cmd", "release held jobs (condor_release)"),
    "suspend": ("roost.cli.jobact_cmd", "suspend running jobs, SIGSTOP on their slot (condor_suspend)"),
    "continue": ("roost.cli.jobact_cmd", "resume suspended jobs (condor_continue)"),
    "vacate_job": ("roost.cli.jobact_cmd", "stop running jobs and put them back to idle; -fast (condor_vacate_job)"),
    "watch_q": ("roost.cli.watch_q_cmd", "follow your jobs' event logs: a table with progress bars; -exit all,done (condor_watch_q)"),
    "history": ("roost.cli.history_cmd", "list finished jobs (condor_history)"),
    "qedit": ("roost.cli.qedit_cmd", "change attributes of queued jobs (condor_qedit)"),
    "prio": ("roost.cli.qedit_cmd", "change jobs' priority, JobPrio (condor_prio)"),
    "who": ("roost.cli.who_cmd", "the jobs this machine runs, slot by slot (condor_who)"),
    "wait": ("roost.cli.wait_cmd", "wait for jobs to finish (condor_wait)"),
    "tail": ("roost.cli.tail_cmd", "the tail of a running job's stdout or files; -f follows it (condor_tail)"),
    "transfer_data": ("roost.cli.transfer_data_cmd", "fetch the output of completed jobs submitted with -spool (condor_transfer_data)"),
    "ssh_to_job": ("roost.cli.ssh_to_job_cmd", "a shell or a command beside a running job, as its user (condor_ssh_to_job)"),
    "drain": ("roost.cli.drain_cmd", "stop a machine taking jobs and let it empty (condor_drain)"),
    "vacate": ("roost.cli.drain_cmd", "evict the jobs a machine runs (condor_vacate)"),
    "now": ("roost.cli.now_cmd", "run an idle job now on a running job's slot, vacating it (condor_now)"),
    "off": ("roost.cli.drain_cmd", "stop offering this machine's slots; -daemon NAME: stop a daemon (condor_off)"),
    "on": ("roost.cli.drain_cmd", "offer this machine's slots again; -daemon NAME: start a daemon (condor_on)"),
    "reserve": ("roost.cli.reserve_cmd", "hold dedicated resources for a time window (-list, -remove)"),
    "userprio": ("roost.cli.userprio_cmd", "show and set users' fair-share priorities (condor_userprio)"),
    "restart": ("roost.cli.restart_cmd", "restart daemons of a host through its master (condor_restart)"),
    "reconfig": ("roost.cli.reconfig_cmd", "make the pool's daemons reread their configuration (condor_reconfig)"),
    "annex": ("roost.cli.annex_cmd", "add Slurm jobs to the pool as glide-ins: annex -slurm N (condor_annex)"),
    "token": ("roost.cli.token_cmd", "create, list and revoke IDTOKENS (condor_token_create/_list)"),
    "version": ("roost.cli.version_cmd", "the HTCondor version lines tools parse (condor_version)"),
    "classad_eval": ("roost.cli.classad_eval_cmd", "evaluate expressions against ads built on the command line (classad_eval)"),
    "htcondor": ("roost.cli.htcondor_cmd", "htcondor job|dag submit|status, eventlog read (HTCondor's htcondor tool)"),
    "ca": ("roost.cli.ca_cmd", "a CA for the pool: host and user certificates for TLS and the SSL method"),
}


def usage() -> str:
    lines = ["usage: roost <command> [args...]", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines.append("\n`roost <command> -help` describes one command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "-help", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("-version", "--version"):
        print(f"roost {__version__}")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(f"roost: unknown command '{args[0]}'\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(entry[0])
    try:
        # A module serving several commands (rm/hold/release) has main_<command>.
        entry_point = getattr(module, f"main_{args[0]}", None) or module.main
        return int(entry_point(args[1:]) or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
