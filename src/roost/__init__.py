"""roost: a high-throughput computing system in the spirit of HTCondor."""

__version__ = "0.1.0"
