"""roost's face of HTCondor's ``htcondor2`` Python bindings, over :mod:`roost.api`.

    import roost.htcondor2 as htcondor2
    import roost.classad2 as classad2

Code written for ``htcondor2`` runs against a roost pool unchanged: the names,
argument names and return types of what is here are htcondor2's. The pool is the
one at $ROOST_HOME (as ``roost`` finds it). ``python -m roost.htcondor2.shim``
prints a directory that, put on PYTHONPATH, makes ``import htcondor2`` and
``import classad2`` load these modules. What is and is not offered: docs/python.md.
"""

from __future__ import annotations

import roost.classad as classad
from roost import CONDOR_PLATFORM_LINE, CONDOR_VERSION_LINE
from roost.htcondor2.collector import Collector
from roost.htcondor2.commands import send_command
from roost.htcondor2.enums import (
    AdType,
    AdTypes,
    DaemonCommand,
    DaemonCommands,
    DaemonType,
    DaemonTypes,
    JobAction,
    JobEventType,
    JobStatus,
    LogLevel,
    QueryOpt,
    QueryOpts,
    SubsystemType,
    TransactionFlag,
    TransactionFlags,
)
from roost.htcondor2.errors import HTCondorException
from roost.htcondor2.eventlog import JobEvent, JobEventLog
from roost.htcondor2.param import param, reload_config, set_subsystem
from roost.htcondor2.remote_param import RemoteParam
from roost.htcondor2.schedd import Schedd, SubmitResult
from roost.htcondor2.submit import Submit
from roost.htcondor2.toollog import disable_debug, enable_debug, enable_log, log

__all__ = [
    "AdType",
    "AdTypes",
    "Collector",
    "DaemonCommand",
    "DaemonCommands",
    "DaemonType",
    "DaemonTypes",
    "HTCondorException",
    "JobAction",
    "JobEvent",
    "JobEventLog",
    "JobEventType",
    "JobStatus",
    "LogLevel",
    "QueryOpt",
    "QueryOpts",
    "RemoteParam",
    "Schedd",
    "Submit",
    "SubmitResult",
    "SubsystemType",
    "TransactionFlag",
    "TransactionFlags",
    "classad",
    "disable_debug",
    "enable_debug",
    "enable_log",
    "log",
    "param",
    "platform",
    "reload_config",
    "send_command",
    "set_subsystem",
    "version",
]


def version() -> str:
    """A version line in HTCondor's form (tools match ``$CondorVersion: X.Y.Z``)."""
    return CONDOR_VERSION_LINE


def platform() -> str:
    return CONDOR_PLATFORM_LINE
