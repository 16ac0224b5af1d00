"""The enumerations of ``htcondor2`` that roost's face offers, with HTCondor's names and
numbers (code compares them with ``==`` and passes them back, so the values matter).

Only names that exist in htcondor2 are here; a member roost cannot act on (a
``JobAction.Vacate``, an ``AdType.Grid``) is still defined, and using it raises
:class:`HTCondorException` saying so.
"""

from __future__ import annotations

import enum

from roost import vocabulary


class JobAction(enum.IntEnum):
    """What :meth:`Schedd.act` does to jobs."""

    Hold = 1
    Release = 2
    Remove = 3
    RemoveX = 4
    Vacate = 5
    VacateFast = 6
    Suspend = 8
    Continue = 9


JobStatus = enum.IntEnum("JobStatus", vocabulary.JobStatus.members())
JobStatus.__doc__ = "A job ad's ``JobStatus`` (roost.vocabulary's numbers as an enum)."


class AdType(enum.IntEnum):
    """Which ads :meth:`Collector.query` asks for."""

    Startd = 0
    Schedd = 1
    Master = 2
    StartdPrivate = 5
    Submitter = 6
    Collector = 7
    License = 8
    Any = 10
    Negotiator = 13
    HAD = 14
    Generic = 15
    Credd = 16
    Grid = 19
    Placementd = 20
    Defrag = 22
    Accounting = 23
    Slot = 24
    StartDaemon = 25


AdTypes = AdType


class DaemonType(enum.IntEnum):
    """Which daemon :meth:`Collector.locate` finds."""

    none = 0
    Any = 1
    Master = 2
    Schedd = 3
    Startd = 4
    Collector = 5
    Negotiator = 6
    Credd = 13
    Placementd = 15
    HAD = 17
    Generic = 18


DaemonTypes = DaemonType


class QueryOpt(enum.IntFlag):
    """Options of :meth:`Schedd.query` (accepted; roost's schedd has none of them)."""

    Default = 0
    AutoCluster = 1
    GroupBy = 2
    DefaultMyJobsOnly = 4
    SummaryOnly = 8
    IncludeClusterAd = 16
    IncludeJobsetAds = 32


QueryOpts = QueryOpt


class TransactionFlag(enum.IntFlag):
    """Flags of :meth:`Schedd.edit` (accepted; every roost edit is durable and logged)."""

    Default = 0
    NonDurable = 1
    SetDirty = 4
    ShouldLog = 8


TransactionFlags = TransactionFlag


JobEventType = vocabulary.JobEventType  # one definition: the event log and this face share it


#: AdType -> the MyType of the ads roost's collector holds (None: every type roost has)
AD_MYTYPE: dict[AdType, str | None] = {
    AdType.Startd: "Machine", AdType.Slot: "Machine", AdType.StartdPrivate: "Machine",
    AdType.StartDaemon: "Machine", AdType.Schedd: "Scheduler", AdType.Master: "Master",
    AdType.Submitter: "Submitter", AdType.Collector: "Collector", AdType.Negotiator: "Negotiator",
    AdType.Accounting: "Accounting", AdType.Generic: "Generic", AdType.Any: None,
}

#: the types an ``AdType.Any`` query gathers
ANY_TYPES = ("Collector", "Master", "Negotiator", "Scheduler", "Submitter", "Machine")

#: DaemonType -> the MyType of its ad
DAEMON_MYTYPE: dict[DaemonType, str] = {
    DaemonType.Master: "Master", DaemonType.Schedd: "Scheduler", DaemonType.Startd: "Machine",
    DaemonType.Collector: "Collector", DaemonType.Negotiator: "Negotiator",
}


class DaemonCommand(enum.IntEnum):
    """What :func:`~roost.htcondor2.commands.send_command` asks a daemon to do, by
    HTCondor's command numbers. ``DaemonOffPeaceful`` has ``DaemonOn``'s number in
    htcondor2, so it is that member's alias here too."""

    DaemonOn = 469
    DaemonOff = 467
    DaemonOffFast = 468
    DaemonOffPeaceful = 469
    DaemonsOn = 483
    DaemonsOff = 454
    DaemonsOffFast = 461
    DaemonsOffPeaceful = 484
    OffFast = 60006
    OffForce = 60042
    OffGraceful = 60005
    OffPeaceful = 60015
    Reconfig = 60004
    Restart = 453
    RestartPeaceful = 485
    SetForceShutdown = 60041
    SetPeacefulShutdown = 60016


DaemonCommands = DaemonCommand


class SubsystemType(enum.IntEnum):
    """The kind of program :func:`~roost.htcondor2.param.set_subsystem` says this is
    (``Auto``: from the name)."""

    Master = 1
    Collector = 2
    Negotiator = 3
    Schedd = 4
    Shadow = 5
    Startd = 6
    Starter = 7
    GAHP = 8
    Dagman = 9
    SharedPort = 10
    Daemon = 11
    Tool = 12
    Submit = 13
    Job = 14
    Auto = 15


class LogLevel(enum.IntEnum):
    """A message's category and form for :func:`~roost.htcondor2.toollog.log`, by
    HTCondor's debug numbers: a category (``Always`` … ``Audit``), or'd with
    ``FullDebug`` (its verbose level) and header flags (``SubSecond``, ``PID``,
    ``NoHeader``; ``Timestamp`` is accepted)."""

    Always = 0
    Error = 1
    Status = 2
    Job = 4
    Machine = 5
    Config = 6
    Protocol = 7
    Priv = 8
    DaemonCore = 9
    Verbose = 10
    Security = 11
    Network = 14
    Hostname = 22
    Audit = 24
    Terse = 0
    FullDebug = 1024
    SubSecond = 1 << 26
    Timestamp = 1 << 27
    PID = 1 << 28
    NoHeader = 1 << 31
