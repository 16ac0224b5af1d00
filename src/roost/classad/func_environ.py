"""HTCondor job helpers: userHome and userMap.

``userHome`` looks the user up in the password database, as HTCondor does by
default (``CLASSAD_ENABLE_USER_HOME`` defaults to true); like HTCondor, the
answer therefore depends on the host.  No user maps are loaded into the
ClassAd library (HTCondor's state without ``CLASSAD_USER_MAP_*`` knobs), so
``userMap`` answers with its default argument or UNDEFINED.
"""

from __future__ import annotations

from roost.classad.values import ERROR, UNDEFINED


def _home_of(user: str) -> str | None:
    try:
        # lazy: an optional module (POSIX only); HTCondor returns ERROR on Windows too
        import pwd
    except ImportError:
        return None
    try:
        return pwd.getpwnam(user).pw_dir
    except (KeyError, ValueError, OSError):
        return None


def user_home(*args: object) -> object:
    """``userHome(user[, default])``: the user's home directory, else the default or UNDEFINED."""
    if len(args) not in (1, 2):
        return ERROR
    default = args[1] if len(args) == 2 and type(args[1]) is str else ""
    owner = args[0]
    if owner is UNDEFINED and not default:
        return UNDEFINED
    if type(owner) is not str:
        return default or ERROR
    home = _home_of(owner) if "\0" not in owner else None
    if home is None:
        return default or UNDEFINED
    return home


def user_map(*args: object) -> object:
    """``userMap(map, user[, preferred[, default]])``: no maps are loaded, so the default or UNDEFINED."""
    if len(args) < 2 or len(args) > 4:
        return ERROR
    map_name, user = args[0], args[1]
    if (type(map_name) is not str or type(user) is not str) and (map_name is ERROR or user is ERROR):
        return ERROR
    return args[3] if len(args) == 4 else UNDEFINED


# --- arguments and environment strings -------------------------------------------
#
# HTCondor's job ads hold arguments and environments in two syntaxes: V1 (items
# separated by white space for arguments, by ';' for environments, no quoting)
# and V2 (white space separated, single quotes protect spaces, '' is a quote).

_ARG_SPACE = " \t\n\r"
_ENV_V1_DELIMITERS = "!#$%&*+,-/:;<>?@^`|~\x1f"
_NO_VALUE = "\x01\x02\x03\x04\x05\x06"  # an unexpanded $$() entry kept without '='


def split_args_v2(text: str) -> list[str] | None:
    """Split V2 arguments; None when a single quote is unbalanced."""
    out: list[str] = []
    buf: list[str] = []
    token = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":
            token = True
            i += 1
            while i < n:
                if text[i] == "'":
                    if i + 1 < n and text[i + 1] == "'":
                        buf.append("'")
                        i += 2
                        continue
                    break
                buf.append(text[i])
                i += 1
            if i >= n:
                return None
            i += 1
        elif c in _ARG_SPACE:
            i += 1
            if token:
                out.append("".join(buf))
                buf, token = [], False
        else:
            token = True
            buf.append(c)
            i += 1
    if token:
        out.append("".join(buf))
    return out


def split_args_v1(text: str) -> list[str]:
    """Split V1 (unix) arguments: white space separates, nothing quotes."""
    return [t for t in _split_on(text, _ARG_SPACE) if t]


def _split_on(text: str, chars: str) -> list[str]:
    out, cur = [], []
    for c in text:
        if c in chars:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    out.append("".join(cur))
    return out


def join_args_v2(args: list[str]) -> str:
    """Join arguments in V2 syntax, quoting white space and doubling quotes."""
    result = ""
    for arg in args:
        if result:
            result += " "
        if not arg:
            result += "''"
        for c in arg:
            if c in " \t\n\r'":
                if result.endswith("'"):
                    result = result[:-1]  # extend the previous quoted run
                else:
                    result += "'"
                if c == "'":
                    result += "'"
                result += c + "'"
            else:
                result += c
    return result


def _version_arg(args: tuple[object, ...]) -> int | None:
    """The optional syntax version (1 or 2); None when it is not acceptable."""
    if len(args) < 2:
        return 2
    v = args[1]
    if type(v) is not int:
        return None
    vers = ((v + (1 << 31)) % (1 << 32)) - (1 << 31)  # read as a C int
    return vers if vers in (1, 2) else None


def args_to_list(*args: object) -> object:
    """``argsToList(args[, version])``: split an arguments string into a list of strings."""
    if len(args) not in (1, 2):
        return ERROR
    vers = _version_arg(args)
    if vers is None or type(args[0]) is not str:
        return ERROR
    if vers == 1:
        return split_args_v1(args[0])
    parts = split_args_v2(args[0])
    return ERROR if parts is None else parts


def list_to_args(*args: object) -> object:
    """``listToArgs(list[, version])``: join a list of strings into an arguments string."""
    if len(args) not in (1, 2):
        return ERROR
    vers = _version_arg(args)
    items = args[0]
    if vers is None or type(items) is not list or any(type(x) is not str for x in items):
        return ERROR
    if vers == 1:
        if any(c in _ARG_SPACE for x in items for c in x):  # type: ignore[union-attr]
            return ERROR  # not expressible in V1 syntax
        return " ".join(items)  # type: ignore[arg-type]
    return join_args_v2(items)  # type: ignore[arg-type]


class _Env:
    """An environment being merged: HTCondor keeps it sorted by name."""

    def __init__(self) -> None:
        self.table: dict[str, str] = {}

    def set_entry(self, entry: str) -> bool:
        if not entry:
            return False
        name, eq, value = entry.partition("=")
        if not eq and "$$" in entry:
            self.table[entry] = _NO_VALUE
            return True
        if not eq or not name:
            return False
        self.table[name] = value
        return True

    def merge_v2(self, text: str) -> bool:
        parts = split_args_v2(text)
        return parts is not None and all(self.set_entry(p) for p in parts)

    def merge_v1(self, text: str) -> bool:
        if not text:
            return True
        delim = ";"
        if text[0] == delim:
            text = text[1:]
        elif text[0] in _ENV_V1_DELIMITERS:
            delim, text = text[0], text[1:]
        i, n = 0, len(text)
        while i < n:
            while i < n and text[i] in _ARG_SPACE:
                i += 1
            start = i
            while i < n and text[i] != "\n" and text[i] != delim:
                i += 1
            entry = text[start:i]
            if i < n:
                i += 1
            if entry and not self.set_entry(entry):
                return False
        return True

    def v2(self) -> str:
        entries = [k if v == _NO_VALUE else f"{k}={v}" for k, v in sorted(self.table.items(), key=_c_key)]
        return join_args_v2(entries)


def _c_key(item: tuple[str, str]) -> bytes:
    return item[0].encode("utf-8", "surrogateescape")


def env_v1_to_v2(*args: object) -> object:
    """``envV1ToV2(env)``: convert a V1 environment string to V2 syntax (UNDEFINED passes through)."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    if v is UNDEFINED:
        return UNDEFINED
    if type(v) is not str:
        return ERROR
    env = _Env()
    return env.v2() if env.merge_v1(v) else ERROR


def merge_environment(*args: object) -> object:
    """``mergeEnvironment(env, ...)``: merge V2 environment strings, later ones winning."""
    env = _Env()
    for v in args:
        if v is UNDEFINED:
            continue
        if type(v) is not str or not env.merge_v2(v):
            return ERROR
    return env.v2()
