"""Universes (issue 28): one module per universe and the registry that names them.

A universe says what ``universe = NAME`` means at every stage of a job's life: the
submit commands it reads and the attributes it sets (``SubmitBuild`` hooks), the
``Requirements`` its jobs add, where it runs (``RunsOn``: a startd slot, the schedd
itself, the dedicated scheduler), what a startd advertises for it, and the dotted
path of the module that starts and stops its jobs where they run. Submit, the schedd
and the startd ask ``registry`` instead of testing universe numbers themselves.

The package is pure and sits below ``roost.submit`` (it imports only ``roost.core``):
execute-side modules are named by dotted path, never imported here. This file stays
empty so that ``roost.universes.base`` loads without the registry.
"""
