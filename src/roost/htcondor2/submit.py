"""``Submit``: a submit description as htcondor2 code builds it (a dict of submit
commands plus the arguments of one queue statement), read and expanded by roost's
submit language (``roost.submit``), so a description means what it means to
``roost submit``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from roost.classad import ClassAd
from roost.htcondor2.errors import HTCondorException, as_htcondor
from roost.submit import SubmitDescription, SubmitError
from roost.submit.lexer import Assign, Queue, lex
from roost.submit.macros import Expander
from roost.submit.queue import QueueSpec, load_items, parse_queue_args
from roost.submit.reading import parse_text

#: from_dag option (htcondor2's names and condor_submit_dag's, any case, - or _) ->
#: roost.dagman.submitdag.Options field
DAG_OPTIONS = {
    "maxjobs": "maxjobs", "maxidle": "maxidle", "maxpre": "maxpre", "maxpost": "maxpost",
    "force": "force", "f": "force", "notification": "notification", "batch_name": "batch_name",
    "batchname": "batch_name", "dagman": "dagman", "dagmanpath": "dagman", "config": "config",
    "configfile": "config", "dorescuefrom": "do_rescue_from", "do_rescue_from": "do_rescue_from",
    "update_submit": "update_submit", "updatesubmit": "update_submit", "alwaysrunpost": "always_run_post",
    "postrun": "always_run_post", "dorecov": "do_recovery", "dorecovery": "do_recovery",
    "priority": "priority", "outfile_dir": "outfile_dir", "outfiledir": "outfile_dir",
    "load_save": "load_save", "savefile": "load_save", "insert_sub_file": "insert_sub_file",
}


def _text_value(value: Any) -> str:
    """A dict value as submit-language text, as htcondor2.Submit takes it."""
    if isinstance(value, ClassAd):
        return repr(value)
    if isinstance(value, (bool, int, float, Path)):
        return str(value)
    if not isinstance(value, str):
        raise TypeError("value must be a string")
    return value


class Submit(MutableMapping[str, str]):
    """A job description: submit commands (keys compare without case) and the
    arguments of a queue statement (``getQArgs``). ``input`` is a dict of commands
    (no ``queue`` key: use ``queue=``) or submit-language text, which may end with a
    queue statement; keyword arguments are commands set afterwards."""

    def __init__(self, input: dict[str, Any] | str | None = None, queue: str | None = None,
                 **kwargs: Any) -> None:
        self._items: dict[str, str] = {}
        self._qargs: str | None = None
        self._method = 1  # SubmitMethod.PYTHON_BINDINGS
        if isinstance(input, dict):
            for key, value in input.items():
                if not isinstance(key, str):
                    raise TypeError("key must be a string")
                if key.casefold() == "queue":
                    raise ValueError("the queue statement can not be specified in a dictionary")
                self[key] = _text_value(value)
        elif isinstance(input, str):
            self._read(input)
        elif input is not None:
            raise TypeError("input must be a dictionary mapping string to strings, a string, or None")
        for key, value in kwargs.items():
            self[key] = _text_value(value)
        if queue is not None:
            if not isinstance(queue, str):
                raise TypeError("queue must be a string")
            self.setQArgs(queue)

    def _read(self, text: str) -> None:
        with as_htcondor():
            statements = lex(text, "<Submit>")
        for st in statements:
            if isinstance(st, Assign):
                self[st.key] = st.value
            elif isinstance(st, Queue):
                if self._qargs is not None:
                    raise HTCondorException(f"<Submit>:{st.line}: a Submit holds one queue statement")
                self._qargs = st.args if st.rows is None else st.args + " (\n" + "\n".join(st.rows) + "\n)"
            else:
                raise HTCondorException(f"<Submit>:{st.line}: roost's Submit takes commands and one queue "
                                        "statement, not include or if/else: submit such a file with "
                                        "Schedd.submit_file of roost.api")

    # -- the dict protocol ------------------------------------------------------------

    def _key(self, key: str) -> str | None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if key.startswith("+"):
            key = "MY." + key[1:]
        if key in self._items:
            return key
        low = key.casefold()
        return next((k for k in self._items if k.casefold() == low), None)

    def __getitem__(self, key: str) -> str:
        found = self._key(key)
        if found is None:
            raise KeyError(key)
        return self._items[found]

    def __setitem__(self, key: str, value: str) -> None:
        found = self._key(key)
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        if found is None:
            found = "MY." + key[1:] if key.startswith("+") else key
        self._items[found] = value

    def __delitem__(self, key: str) -> None:
        raise NotImplementedError("Submit object keys can not be removed, but the empty string is "
                                  "defined to have no effect.")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __str__(self) -> str:
        """Submit-file text; it always ends with a queue statement (a bare ``queue``
        when there was none), as htcondor2's does, so it can be written out and submitted."""
        text = "".join(f"{k} = {v}\n" for k, v in self._items.items())
        return text + ("queue " + self._qargs if self._qargs else "queue") + "\n"

    def __repr__(self) -> str:
        return f"Submit({self})"

    # -- the queue statement ----------------------------------------------------------

    def getQArgs(self) -> str:
        """The arguments of the queue statement ('' for a bare ``queue`` or none)."""
        return self._qargs or ""

    def setQArgs(self, args: str) -> None:
        """Replace the queue statement's arguments (they may start with ``queue ``)."""
        if not isinstance(args, str):
            raise TypeError("args must be a string")
        if args.casefold().startswith("queue "):
            args = args[6:]
        self._qargs = args.strip()

    def _spec(self, qargs: str) -> QueueSpec:
        args, rows = qargs, None
        if "\n" in qargs:  # an item list on lines of its own: as lex() splits it
            args, _, rest = qargs.partition("\n")
            args = args.rstrip()
            if args.endswith("("):
                args = args[:-1].rstrip()
            rows = [r for r in rest.rsplit(")", 1)[0].splitlines()]
        with as_htcondor():
            return parse_queue_args(self.expand_text(args), rows, file="<Submit>")

    def itemdata(self, qargs: str | None = None) -> Iterator[str] | Iterator[dict[str, str]] | None:
        """The items a queue statement (``qargs``, else this description's) iterates
        over, as dicts of its variables; None when it has none (``queue 3``, or a
        ``matching`` that matched nothing), as in htcondor2."""
        if qargs is not None and qargs.casefold().startswith("queue "):
            qargs = qargs[6:]
        spec = self._spec(self.getQArgs() if qargs is None else qargs)
        with as_htcondor():
            items = load_items(spec, cwd=os.getcwd())
        if not items:
            return None
        return iter(items)

    # -- expansion --------------------------------------------------------------------

    def expand_text(self, text: str) -> str:
        macros = {k.casefold(): v for k, v in self._items.items()}
        with as_htcondor():
            return Expander(macros, env=os.environ, cwd=os.getcwd()).expand(text)

    def expand(self, attr: str) -> str:
        """The value of ``attr`` with its macros expanded."""
        if not isinstance(attr, str):
            raise TypeError("attr must be a string")
        return self.expand_text(self.get(attr) or "")

    def description(self, count: int = 0, itemdata: Any = None, *, cwd: str | None = None) -> SubmitDescription:
        """roost's parsed description of these commands: ``itemdata`` (dicts or strings)
        in place of the queue statement's items, ``count`` procs per item (0: the
        statement's count)."""
        text = "".join(f"{k} = {v}\n" for k, v in self._items.items())
        items: list[dict[str, str]] | None = None
        keys: list[str] = []
        if itemdata is not None:
            items = []
            for item in itemdata:
                if isinstance(item, str):
                    keys = keys or ["Item"]
                    item = {"Item": item.strip()}
                elif isinstance(item, dict):
                    if any(not isinstance(k, str) for k in item):
                        raise TypeError("itemdata dictionaries must have string keys")
                    keys = keys or list(item)
                    item = {k: str(item.get(k, "")).strip() for k in keys}
                else:
                    raise TypeError("itemdata must be a list of strings or dictionaries")
                items.append(item)
            qargs = "1"
        else:
            qargs = self.getQArgs()
        with as_htcondor():
            desc = parse_text(text + f"queue {qargs}\n", file="<Submit>", cwd=cwd)
        block = desc.blocks[-1]
        if items is not None:
            spec = replace(block.spec, vars=keys, mode="from", inline=[])
            block = replace(block, spec=spec, items=items)
        if count:
            block = replace(block, count=int(count))
        desc.blocks[-1] = block
        return desc

    def jobs(self, count: int = 0, itemdata: Any = None, clusterid: int = 1, procid: int = 0,
             qdate: int = 0, owner: str = "") -> list[ClassAd]:
        """The job ads this description makes (cluster ad and proc attributes merged),
        as ``roost submit -dry-run`` would make them; nothing is submitted."""
        # lazy: the wire form of an expansion only for jobs()
        from roost.net.adwire import obj_to_ad
        from roost.submit.wire import wire_cluster

        desc = self.description(count, itemdata)
        out: list[ClassAd] = []
        with as_htcondor():
            for c in desc.expand(cluster_id=clusterid, qdate=qdate, owner=owner or None):
                cluster_ad, procs = wire_cluster(c)
                for i, diff in enumerate(procs):
                    out.append(obj_to_ad({**cluster_ad, **diff, "ClusterId": c.cluster_id,
                                          "ProcId": procid + i}))
        return out

    procs = jobs

    # -- submit method ----------------------------------------------------------------

    def setSubmitMethod(self, method_value: int = -1, allow_reserved_values: bool = False) -> None:
        """Record ``method_value`` (100 or more, unless ``allow_reserved_values``)."""
        method_value = int(method_value)
        if 0 <= method_value < 100 and not allow_reserved_values:
            raise ValueError("Submit method value must be 100 or greater, or allowed_reserved_values must be True.")
        self._method = method_value

    def getSubmitMethod(self) -> int:
        return self._method

    # -- DAGs -------------------------------------------------------------------------

    @staticmethod
    def from_dag(filename: str, options: dict[str, int | bool | str] | None = None) -> Submit:
        """The DAGMan job of the DAG in ``filename``, as ``roost submit_dag`` makes it
        (FILE.dag.condor.sub is written too); ``options`` are condor_submit_dag's
        (``maxjobs``, ``force``, ``batch-name`` ...)."""
        # lazy: the DAG language only for DAGs
        from roost.dagman.language import DagError
        from roost.dagman.submitdag import Options, prepare, write

        options = {} if options is None else options
        if not isinstance(options, dict):
            raise TypeError("options must be a dict")
        if not Path(filename).exists():
            raise HTCondorException(f"{filename} does not exist")
        fields: dict[str, Any] = {}
        for key, value in options.items():
            if not isinstance(key, str):
                raise TypeError("options keys must by strings")
            if not isinstance(value, (int, bool, str)):
                raise TypeError("options values must be int, bool, or str")
            name = DAG_OPTIONS.get(key.casefold().replace("-", "_").lstrip("_"))
            if name is None:
                raise HTCondorException(f"from_dag: option {key!r} is not one roost knows "
                                        f"({', '.join(sorted(DAG_OPTIONS))})")
            if name in ("force", "update_submit", "always_run_post", "do_recovery"):
                value = value if isinstance(value, bool) else str(value).casefold() in ("1", "true", "yes")
            elif name in ("maxjobs", "maxidle", "maxpre", "maxpost", "do_rescue_from", "priority"):
                value = int(value)
            else:
                value = str(value)
            fields[name] = value
        try:
            prepared = prepare(os.fspath(filename), Options(**fields))
        except (DagError, SubmitError, OSError, ValueError) as e:
            raise HTCondorException(str(e)) from e
        write(prepared)
        return Submit(prepared.text)

    @staticmethod
    def from_dag_options() -> None:
        """Print the option names :meth:`from_dag` takes."""
        for key in sorted(DAG_OPTIONS):
            print(f"{key:20} -> {DAG_OPTIONS[key]}")
