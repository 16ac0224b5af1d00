"""roost: a high-throughput computing system in the spirit of HTCondor."""

__version__ = "0.1.0"
#: the HTCondor release whose commands, submit language and htcondor2 API roost follows
CONDOR_VERSION = "25.0.0"
#: condor_version's two lines (tools such as Pegasus match ``$CondorVersion: X.Y.Z``)
CONDOR_VERSION_LINE = f"$CondorVersion: {CONDOR_VERSION} 2025-01-01 BuildID: roost-{__version__} $"
CONDOR_PLATFORM_LINE = "$CondorPlatform: X86_64-Linux roost $"
