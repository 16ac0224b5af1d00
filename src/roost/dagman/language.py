"""The DAG file language of HTCondor's DAGMan: a file (and the files it INCLUDEs) in,
a :class:`Dag` out, or one :class:`DagError` naming the file, the line and the problem.

Pure: it reads the DAG files it is given and nothing else (a node's submit file is
checked through the ``exists`` callable of :func:`check`), so the manager, the
``submit_dag`` tool and the tests share it. Keywords are case-insensitive, node names
are not, as in condor_dagman. Splices are recorded here (their own files are parsed
by the caller, once per splice, with :func:`parse_file`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

ALL_NODES = "ALL_NODES"
SCRIPT_KINDS = ("PRE", "POST", "HOLD")
NODE_KINDS = {"JOB": "job", "NODE": "job", "FINAL": "final", "PROVISIONER": "provisioner", "SERVICE": "service"}
_SIMPLE_FILE_COMMANDS = ("CONFIG", "JOBSTATE_LOG")


class DagError(Exception):
    """One problem of a DAG file: ``file:line: message``."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file, self.line, self.message = file, line, message


@dataclass(slots=True)
class Script:
    """A PRE, POST or HOLD script: its command line as written, and its options."""

    kind: str
    command: str
    defer_status: int | None = None
    defer_time: int = 0
    debug_file: str | None = None
    debug_type: str | None = None  # STDOUT, STDERR or ALL


@dataclass(slots=True)
class Node:
    name: str
    kind: str  # job, final, provisioner, service, subdag
    submit: str | None  # the submit file (a DAG file for a SUBDAG EXTERNAL); None: inline
    where: tuple[str, int]  # the file and line that defined it
    inline: str | None = None  # an inline submit description's text (JOB name { ... })
    description: str | None = None  # a SUBMIT-DESCRIPTION it names
    dir: str | None = None
    noop: bool = False
    done: bool = False
    retry: int = 0
    unless_exit: int | None = None
    scripts: dict[str, Script] = field(default_factory=dict)
    pre_skip: int | None = None
    vars: list[tuple[str, str]] = field(default_factory=list)
    priority: int = 0
    category: str | None = None
    abort_on: tuple[int, int | None] | None = None  # (exit value, RETURN value)
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


@dataclass
class Dag:
    file: str
    nodes: dict[str, Node] = field(default_factory=dict)
    maxjobs: dict[str, int] = field(default_factory=dict)  # category -> limit
    config: str | None = None
    dot: tuple[str, bool, bool, str | None] | None = None  # file, update, overwrite, include
    node_status_file: tuple[str, int, bool] | None = None  # file, min update time, always update
    jobstate_log: str | None = None
    job_attrs: list[tuple[str, str]] = field(default_factory=list)  # SET_JOB_ATTR
    env_get: list[str] = field(default_factory=list)
    env_set: list[tuple[str, str]] = field(default_factory=list)
    save_points: dict[str, str] = field(default_factory=dict)  # node -> file
    splices: dict[str, tuple[str, str | None, tuple[str, int]]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)  # SUBMIT-DESCRIPTION name -> text
    splice_edges: list[tuple[str, str]] = field(default_factory=list)  # PARENT/CHILD naming a splice

    @property
    def final(self) -> Node | None:
        return next((n for n in self.nodes.values() if n.kind == "final"), None)


# -- reading ---------------------------------------------------------------------------

_VAR = re.compile(r'\s*([A-Za-z_+.][\w+.]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _lines(path: str, text: str) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            yield number, line


def parse_file(path: str, *, read: Callable[[str], str] | None = None) -> Dag:
    """Parse the DAG file at ``path`` (and what it INCLUDEs)."""
    dag = Dag(path)
    _parse_into(dag, path, read or _read, set())
    _link(dag)
    return dag


def parse_text(text: str, path: str = "<dag>") -> Dag:
    """Parse a DAG given as text (INCLUDEs are read relative to ``path``)."""
    dag = Dag(path)
    _parse_into(dag, path, _read, set(), text)
    _link(dag)
    return dag


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def _parse_into(dag: Dag, path: str, read: Callable[[str], str], seen: set[str], text: str | None = None) -> None:
    if text is None:
        try:
            text = read(path)
        except OSError as e:
            raise DagError(path, 0, f"cannot read it: {e.strerror or e}") from None
    seen = seen | {os.path.abspath(path)}
    lines = _lines(path, text)
    later: list[tuple[int, str, list[str]]] = []  # as condor_dagman: nodes first, then the rest
    for number, line in lines:
        words = line.split()
        command = words[0].upper()
        where = (path, number)

        def fail(message: str, n: int = number) -> DagError:
            return DagError(path, n, message)

        if command in NODE_KINDS or command == "SUBDAG":
            _node(dag, command, words, line, where, lines, fail)
        elif command == "SUBMIT-DESCRIPTION":
            if len(words) != 3 or words[2] != "{":
                raise fail("SUBMIT-DESCRIPTION: expected SUBMIT-DESCRIPTION name {")
            dag.descriptions[words[1]] = _block(lines, path, number)
        elif command == "SPLICE":
            if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "DIR"):
                raise fail("SPLICE: expected SPLICE name file [DIR directory]")
            if words[1] in dag.splices or words[1] in dag.nodes:
                raise fail(f"SPLICE: {words[1]!r} is defined twice")
            dag.splices[words[1]] = (words[2], words[4] if len(words) == 5 else None, where)
        elif command == "INCLUDE":
            if len(words) != 2:
                raise fail("INCLUDE: expected INCLUDE file")
            included = os.path.join(os.path.dirname(path), words[1])
            if os.path.abspath(included) in seen:
                raise fail(f"INCLUDE: {words[1]} includes itself")
            _parse_into(dag, included, read, seen)
        else:
            later.append((number, line, words))
    for number, line, words in later:
        _command(dag, path, number, line, words)


def _command(dag: Dag, path: str, number: int, line: str, words: list[str]) -> None:
    """Every command but those that define nodes (read once all nodes are known)."""
    command = words[0].upper()

    def fail(message: str) -> DagError:
        return DagError(path, number, message)

    if command == "PARENT":
        if "CHILD" not in [w.upper() for w in words]:
            raise fail("PARENT without CHILD")
        _parent(dag, words, path, number)
    elif command == "RETRY":
        if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "UNLESS-EXIT"):
            raise fail("RETRY: expected RETRY node count [UNLESS-EXIT value]")
        count = _int(words[2], "RETRY count", fail, minimum=0)
        unless = _int(words[4], "UNLESS-EXIT value", fail) if len(words) == 5 else None
        for node in _targets(dag, words[1], fail, refuse="RETRY"):
            node.retry, node.unless_exit = count, unless
    elif command == "SCRIPT":
        _script(dag, words, line, fail)
    elif command == "PRE_SKIP":
        if len(words) != 3:
            raise fail("PRE_SKIP: expected PRE_SKIP node exit-code")
        for node in _targets(dag, words[1], fail):
            node.pre_skip = _int(words[2], "PRE_SKIP exit code", fail)
    elif command == "VARS":
        _vars(dag, words, line, fail)
    elif command == "PRIORITY":
        if len(words) != 3:
            raise fail("PRIORITY: expected PRIORITY node value")
        for node in _targets(dag, words[1], fail, refuse="PRIORITY"):
            node.priority = _int(words[2], "PRIORITY", fail)
    elif command == "CATEGORY":
        if len(words) != 3:
            raise fail("CATEGORY: expected CATEGORY node category")
        for node in _targets(dag, words[1], fail, refuse="CATEGORY"):
            node.category = words[2]
    elif command == "MAXJOBS":
        if len(words) != 3:
            raise fail("MAXJOBS: expected MAXJOBS category count")
        dag.maxjobs[words[1]] = _int(words[2], "MAXJOBS count", fail, minimum=0)
    elif command == "ABORT-DAG-ON":
        if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "RETURN"):
            raise fail("ABORT-DAG-ON: expected ABORT-DAG-ON node exit-value [RETURN value]")
        value = _int(words[2], "ABORT-DAG-ON exit value", fail)
        ret = _int(words[4], "RETURN value", fail, minimum=0, maximum=255) if len(words) == 5 else None
        for node in _targets(dag, words[1], fail, refuse="ABORT-DAG-ON"):
            node.abort_on = (value, ret)
    elif command == "DONE":
        if len(words) != 2:
            raise fail("DONE: expected DONE node")
        _node_named(dag, words[1], fail).done = True
    elif command in _SIMPLE_FILE_COMMANDS:
        if len(words) != 2:
            raise fail(f"{command}: expected {command} file")
        if command == "CONFIG":
            dag.config = words[1]
        else:
            dag.jobstate_log = words[1]
    elif command == "DOT":
        _dot(dag, words, fail)
    elif command == "NODE_STATUS_FILE":
        if not 2 <= len(words) <= 4:
            raise fail("NODE_STATUS_FILE: expected NODE_STATUS_FILE file [min-update-time] [ALWAYS-UPDATE]")
        always = any(w.upper() == "ALWAYS-UPDATE" for w in words[2:])
        times = [w for w in words[2:] if w.upper() != "ALWAYS-UPDATE"]
        dag.node_status_file = (words[1], _int(times[0], "min-update-time", fail, minimum=0) if times else 60,
                                always)
    elif command == "SET_JOB_ATTR":
        name, eq, value = line.split(None, 1)[1].partition("=") if len(words) > 1 else ("", "", "")
        if not eq or not name.strip() or not value.strip():
            raise fail("SET_JOB_ATTR: expected SET_JOB_ATTR name = value")
        dag.job_attrs.append((name.strip(), value.strip()))
    elif command == "ENV":
        _env(dag, words, line, fail)
    elif command == "SAVE_POINT_FILE":
        if len(words) not in (2, 3):
            raise fail("SAVE_POINT_FILE: expected SAVE_POINT_FILE node [file]")
        node = _node_named(dag, words[1], fail)
        dag.save_points[node.name] = words[2] if len(words) == 3 else f"{node.name}-{os.path.basename(path)}.save"
    elif command in ("CONNECT", "PIN_IN", "PIN_OUT", "REJECT"):
        raise fail(f"{command} is not supported yet")
    else:
        raise fail(f"unknown command {words[0]!r}")


def _block(lines: Iterator[tuple[int, str]], path: str, start: int) -> str:
    """The lines of an inline submit description, up to its closing ``}``."""
    body = []
    for _number, line in lines:
        if line == "}":
            return "\n".join(body) + "\n"
        body.append(line)
    raise DagError(path, start, "inline submit description has no closing }")


def _node(dag: Dag, command: str, words: list[str], line: str, where: tuple[str, int],
          lines: Iterator[tuple[int, str]], fail: Callable[..., DagError]) -> None:
    kind = NODE_KINDS.get(command, "subdag")
    if command == "SUBDAG":
        if len(words) < 2 or words[1].upper() != "EXTERNAL":
            raise fail("SUBDAG: expected SUBDAG EXTERNAL name dagfile")
        words = words[1:]
    if len(words) < 3:
        raise fail(f"{command}: expected {command} name submit-file")
    name, target = words[1], words[2]
    if name.upper() == ALL_NODES or "+" in name:
        raise fail(f"{command}: {name!r} cannot be a node name")
    if name in dag.nodes:
        first = dag.nodes[name].where
        raise fail(f"node {name!r} is defined twice (first at {first[0]}:{first[1]})")
    if kind == "final" and dag.final is not None:
        raise fail(f"a second FINAL node {name!r} (the first is {dag.final.name!r})")
    node = Node(name, kind, target, where)
    if target == "{":
        if kind == "subdag":
            raise fail("SUBDAG EXTERNAL takes a DAG file, not an inline description")
        node.submit, node.inline = None, _block(lines, where[0], where[1])
        rest: list[str] = []
    else:
        rest = words[3:]
    i = 0
    while i < len(rest):
        opt = rest[i].upper()
        if opt == "DIR" and i + 1 < len(rest):
            node.dir = rest[i + 1]
            i += 2
        elif opt == "NOOP":
            node.noop, i = True, i + 1
        elif opt == "DONE":
            node.done, i = True, i + 1
        else:
            raise fail(f"{command} {name}: unknown option {rest[i]!r} (DIR directory, NOOP or DONE)")
    dag.nodes[name] = node


#: the commands a FINAL node, or a SERVICE node, cannot be named in (condor_dagman's
#: parse errors; the FINAL node is not in a PARENT line either, see _parent)
_FINAL_REFUSES = ("RETRY", "ABORT-DAG-ON", "PRIORITY", "CATEGORY")
_SERVICE_REFUSES = ("RETRY", "PRIORITY", "CATEGORY")


def _targets(dag: Dag, name: str, fail: Callable[..., DagError], refuse: str | None = None) -> list[Node]:
    """The nodes a command names: one, or ALL_NODES (every node but the FINAL and the
    SERVICE nodes, which condor_dagman keeps apart). ``refuse``: the command, when a
    FINAL or SERVICE node named on its own cannot take it (condor_dagman stops there:
    a FINAL node runs once, whatever happened, so it has no retries, no abort, no
    place in the order or the throttles)."""
    if name.upper() == ALL_NODES:
        return [n for n in dag.nodes.values() if n.kind not in ("final", "service")]
    node = _node_named(dag, name, fail)
    if refuse in _FINAL_REFUSES and node.kind == "final":
        raise fail(f"Final Node {node.name} cannot have {refuse} specification")
    if refuse in _SERVICE_REFUSES and node.kind == "service":
        raise fail(f"SERVICE node {node.name} cannot have {refuse} specification")
    return [node]


def _node_named(dag: Dag, name: str, fail: Callable[..., DagError]) -> Node:
    node = dag.nodes.get(name)
    if node is None:
        raise fail(f"no node named {name!r}")
    return node


def _int(text: str, what: str, fail: Callable[..., DagError], *, minimum: int | None = None,
         maximum: int | None = None) -> int:
    try:
        v = int(text)
    except ValueError:
        raise fail(f"{what} {text!r} is not a whole number") from None
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise fail(f"{what} {v} is out of range")
    return v


def _script(dag: Dag, words: list[str], line: str, fail: Callable[..., DagError]) -> None:
    i = 1
    defer: tuple[int, int] | None = None
    debug: tuple[str, str] | None = None
    while i < len(words) and words[i].upper() in ("DEFER", "DEBUG"):
        if words[i].upper() == "DEFER":
            if i + 2 >= len(words):
                raise fail("SCRIPT DEFER: expected DEFER status time")
            defer = (_int(words[i + 1], "DEFER status", fail), _int(words[i + 2], "DEFER time", fail, minimum=0))
            i += 3
        else:
            if i + 2 >= len(words) or words[i + 2].upper() not in ("STDOUT", "STDERR", "ALL"):
                raise fail("SCRIPT DEBUG: expected DEBUG file STDOUT|STDERR|ALL")
            debug = (words[i + 1], words[i + 2].upper())
            i += 3
    if i + 2 >= len(words) or words[i].upper() not in SCRIPT_KINDS:
        raise fail("SCRIPT: expected SCRIPT [DEFER status time] [DEBUG file type] PRE|POST|HOLD node program [args]")
    kind, target = words[i].upper(), words[i + 1]
    command = line.split(None, i + 2)[i + 2]
    for node in _targets(dag, target, fail):
        node.scripts[kind] = Script(kind, command, defer[0] if defer else None, defer[1] if defer else 0,
                                    debug[0] if debug else None, debug[1] if debug else None)


def _vars(dag: Dag, words: list[str], line: str, fail: Callable[..., DagError]) -> None:
    if len(words) < 3:
        raise fail('VARS: expected VARS node name="value" ...')
    rest = line.split(None, 2)[2]
    mode = rest.split(None, 1)[0].upper()
    if mode in ("PREPEND", "APPEND"):
        rest = rest.split(None, 1)[1] if len(rest.split(None, 1)) > 1 else ""
    pairs = []
    pos = 0
    while pos < len(rest):
        if rest[pos:].strip() == "":
            break
        m = _VAR.match(rest, pos)
        if m is None:
            raise fail(f'VARS: cannot read {rest[pos:].strip()!r}: expected name="value"')
        name = m.group(1)
        if name.upper().startswith("QUEUE"):
            raise fail(f"VARS: {name!r} is a reserved name")
        pairs.append((name, re.sub(r"\\(.)", r"\1", m.group(2))))
        pos = m.end()
    for node in _targets(dag, words[1], fail):
        node.vars.extend(pairs)


def _dot(dag: Dag, words: list[str], fail: Callable[..., DagError]) -> None:
    if len(words) < 2:
        raise fail("DOT: expected DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE file]")
    update, overwrite, include = False, True, None
    rest = words[2:]
    i = 0
    while i < len(rest):
        opt = rest[i].upper()
        if opt in ("UPDATE", "DONT-UPDATE"):
            update = opt == "UPDATE"
        elif opt in ("OVERWRITE", "DONT-OVERWRITE"):
            overwrite = opt == "OVERWRITE"
        elif opt == "INCLUDE" and i + 1 < len(rest):
            include = rest[i + 1]
            i += 1
        else:
            raise fail(f"DOT: unknown option {rest[i]!r}")
        i += 1
    dag.dot = (words[1], update, overwrite, include)


def _env(dag: Dag, words: list[str], line: str, fail: Callable[..., DagError]) -> None:
    if len(words) < 3 or words[1].upper() not in ("GET", "SET"):
        raise fail("ENV: expected ENV GET name ... or ENV SET name=value;...")
    if words[1].upper() == "GET":
        dag.env_get.extend(words[2:])
        return
    for item in line.split(None, 2)[2].split(";"):
        name, eq, value = item.strip().partition("=")
        if item.strip() and (not eq or not name):
            raise fail(f"ENV SET: {item.strip()!r} is not name=value")
        if item.strip():
            dag.env_set.append((name.strip(), value))


def _parent(dag: Dag, words: list[str], path: str, number: int) -> None:
    upper = [w.upper() for w in words]
    split = upper.index("CHILD")
    parents, children = words[1:split], words[split + 1:]
    if not parents or not children:
        raise DagError(path, number, "PARENT ... CHILD ...: a side names no node")

    def expand(names: list[str]) -> list[str]:
        out: list[str] = []
        for n in names:
            if n.upper() == ALL_NODES:
                out.extend(x.name for x in dag.nodes.values() if x.kind != "final")
            elif n in dag.nodes:
                if dag.nodes[n].kind == "final":
                    raise DagError(path, number, f"the FINAL node {n!r} cannot be in a PARENT line")
                out.append(n)
            elif n in dag.splices:
                out.append(n)  # linked to the splice's first or last nodes once it is expanded
            else:
                raise DagError(path, number, f"no node named {n!r}")
        return out

    for p in expand(parents):
        for c in expand(children):
            if p == c:
                raise DagError(path, number, f"node {p!r} cannot be its own parent")
            if p in dag.nodes and c in dag.nodes:
                if c not in dag.nodes[p].children:
                    dag.nodes[p].children.append(c)
                    dag.nodes[c].parents.append(p)
            else:
                dag.splice_edges.append((p, c))


def _link(dag: Dag) -> None:
    cycle = find_cycle(dag)
    if cycle:
        node = dag.nodes[cycle[0]]
        raise DagError(node.where[0], 0, f"the DAG has a cycle: {' -> '.join(cycle + [cycle[0]])}")


def find_cycle(dag: Dag) -> list[str] | None:
    """The nodes of one dependency cycle, in order, or None (iterative: 100,000-node chains)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for root in dag.nodes:
        if state.get(root):
            continue
        path: list[str] = [root]
        iters = [iter(dag.nodes[root].children)]
        state[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            s = state.get(nxt)
            if s == 1:
                return path[path.index(nxt):]
            if s is None:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(dag.nodes[nxt].children))
    return None


def check(dag: Dag, exists: Callable[[str], bool]) -> list[DagError]:
    """What cannot run before anything runs: node submit files (or sub-DAG files) that
    do not exist (``exists`` of a path relative to the node's DIR), a node naming a
    SUBMIT-DESCRIPTION that is not there, MAXJOBS of a category no node is in is fine
    (condor_dagman allows it)."""
    problems = []
    for node in dag.nodes.values():
        if node.inline is not None or node.noop:
            continue
        assert node.submit is not None
        if node.submit in dag.descriptions:
            node.description = node.submit
            continue
        path = os.path.join(node.dir or "", node.submit)
        if not exists(path):
            what = "DAG file" if node.kind == "subdag" else "submit file"
            problems.append(DagError(node.where[0], node.where[1], f"node {node.name!r}: its {what} {path} does not exist"))
    return problems
