"""Errors the client API raises, each with a message a user can act on."""

from __future__ import annotations


class PoolError(Exception):
    """Something about the pool stopped a request (not running, not ready, refused)."""


class NoPoolError(PoolError):
    """No pool (or not the daemon asked for) is running under this ROOST_HOME."""
