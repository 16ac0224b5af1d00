"""HTCondor's command names (``condor_q``, ``condor_qedit`` ...) onto roost's commands.

Each ``bin/condor_*`` script is two lines that call :func:`condor_main` with its own
name; the command is the same code ``roost <verb>`` runs, so the two never drift apart.
The roost commands accept HTCondor's option spellings themselves. What differs is
only how errors read: a message ``roost q: ...`` written to stderr reads
``condor_q: ...`` when the program was started as ``condor_q`` (and any roost
command a message names reads as its condor name). stdout is left alone: it
carries job data, which must come out byte for byte (a ``-help`` text aside).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~5 ms, and re)
if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from typing import Any

#: program name -> the roost arguments it stands for (a verb, and for the token
#: family the action)
PROGRAMS: dict[str, tuple[str, ...]] = {
    "condor_submit": ("submit",),
    "condor_q": ("q",),
    "condor_version": ("version",),
    "condor_status": ("status",),
    "condor_rm": ("rm",),
    "condor_hold": ("hold",),
    "condor_release": ("release",),
    "condor_history": ("history",),
    "condor_wait": ("wait",),
    "condor_qedit": ("qedit",),
    "condor_prio": ("prio",),
    "condor_userprio": ("userprio",),
    "condor_config_val": ("config",),
    "condor_submit_dag": ("submit_dag",),
    "condor_tail": ("tail",),
    "condor_ssh_to_job": ("ssh_to_job",),
    "condor_transfer_data": ("transfer_data",),
    "condor_drain": ("drain",),
    "condor_vacate": ("vacate",),
    "condor_now": ("now",),
    "condor_off": ("off",),
    "condor_on": ("on",),
    "condor_restart": ("restart",),
    "condor_reconfig": ("reconfig",),
    "condor_token_create": ("token", "create"),
    "condor_token_list": ("token", "list"),
    "condor_token_revoke": ("token", "revoke"),
    "condor_who": ("who",),
    "classad_eval": ("classad_eval",),
    "condor_suspend": ("suspend",),
    "condor_continue": ("continue",),
    "condor_vacate_job": ("vacate_job",),
    "condor_watch_q": ("watch_q",),
    "htcondor": ("htcondor",),
}


class _Renamed:
    """A text stream that writes ``roost VERB`` as the condor program's name."""

    def __init__(self, stream: Any, pairs: list[tuple[str, str]]) -> None:
        self._stream = stream
        self._pairs = pairs

    def write(self, text: str) -> int:
        if "roost " in text:
            for old, new in self._pairs:
                text = text.replace(old, new)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def renames(prog: str) -> list[tuple[str, str]]:
    """(roost spelling, condor spelling) pairs for the messages of ``prog``: every roost
    command that has a condor name reads as that name (``roost token list`` in a usage
    text as ``condor_token_list``), longest spelling first; the token family's shared
    ``roost token:`` reads as ``prog``."""
    pairs = []
    for name, words in sorted(PROGRAMS.items(), key=lambda kv: -len(" ".join(kv[1]))):
        roost = "roost " + " ".join(words)
        pairs += [(roost + end, name + end) for end in (":", " ", "\n")]
    words = PROGRAMS[prog]
    if len(words) > 1:
        pairs.append((f"roost {words[0]}:", prog + ":"))
    return pairs


def condor_main(prog: str, argv: list[str] | None = None) -> int:
    """Run the roost command ``prog`` (``condor_q`` ...) stands for, with its arguments."""
    # lazy: keeps this module importable without the dispatcher (tests read PROGRAMS)
    from roost.cli.main import main

    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-version", "--version"):
        return main(["version"])  # HTCondor's tools print condor_version's lines
    pairs = renames(prog)
    sys.stderr = _Renamed(sys.stderr, pairs)
    # -help prints its usage on stdout: rename it there too (only then: stdout carries job data)
    helping = any(a in ("-h", "-help", "--help") for a in args)
    if helping:
        sys.stdout = _Renamed(sys.stdout, pairs)
    try:
        return main([*PROGRAMS[prog], *args])
    finally:
        if isinstance(sys.stderr, _Renamed):
            sys.stderr = sys.stderr._stream
        if helping and isinstance(sys.stdout, _Renamed):
            sys.stdout = sys.stdout._stream
