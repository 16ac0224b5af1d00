"""The daemons: async shells around roost.core (see docs/protocol.md)."""
