"""``-print-format FILE``: HTCondor's custom print format files (``.cpf``), parsed and rendered.

A file is a ``SELECT`` line with its options, one line per column
(``expr [AS label] [WIDTH n|AUTO] [PRINTF fmt | PRINTAS fn] [OR c] [TRUNCATE]
[LEFT|RIGHT] [NOPREFIX] [NOSUFFIX]``), then optional ``WHERE``, ``GROUP BY`` and
``SUMMARY STANDARD|NONE`` lines; ``#`` starts a comment line. Keywords are uppercase
and end the expression before them. The rules are those of HTCondor 25's
make_printmask.cpp and ad_printmask.cpp, some of them surprising:

- a column without ``WIDTH`` is as wide as its label, left aligned, and grows to fit
  its values; ``WIDTH n`` fixes it (condor_q truncates to it, condor_status does not);
  a negative width aligns left;
- fields are joined by FIELDPREFIX (one space) before every field but the first, and
  FIELDSUFFIX (none) after every field but the last;
- a value that does not fit its conversion (undefined for ``%d`` or ``%s``, a
  function with nothing to show) prints the OR character, or with a doubled one
  ``[???]`` across the column; without OR, nothing; ``%v`` prints ``undefined``;
- numbers printed through a PRINTF are padded on the left to the column width, even in
  a left-aligned column;
- without a ``SUMMARY STANDARD`` line there is no totals footer.

No pool and no clock (``now`` is a parameter); only load() reads a file. Ads are
JSON-form dicts.
"""

from __future__ import annotations

import sys
from typing import Any

from roost.classad import ClassAd, ExprTree, Value
from roost.cli.advalues import to_classad
from roost.cli.printas import FUNCTIONS, attr, date, duration
from roost.cli.printf import _classad_text, _split, unescape

_SELECT_KEYWORDS = {"ALWAYS", "AS", "AUTO", "FIT", "LEFT", "NOPREFIX", "NOSUFFIX", "OR", "PRINTAS", "PRINTF",
                    "RENDERAS", "RIGHT", "TRUNCATE", "WIDTH"}
_ALT_CHARS = " ?*.-_#0"


class PrintFormatError(ValueError):
    """A bad print format file: which file, which line, what is wrong."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


# -- the file -------------------------------------------------------------------------------

class Column:
    """One formatting line, with the width, alignment and printf HTCondor derives from it."""

    def __init__(self) -> None:
        self.expr = ""
        self.heading = ""
        self.width = 0
        self.left = False
        self.truncate = False
        self.auto = False
        self.printf: str | None = None
        self.func: str | None = None
        self.alt = " "
        self.alt_wide = False
        self.noprefix = self.nosuffix = False
        self.is_attr = False
        self.tree: Any = None


class PrintFormat:
    """A parsed print format file: its columns and what else it asks of the listing."""

    def __init__(self) -> None:
        self.columns: list[Column] = []
        self.where: str | None = None
        self.group_by: list[tuple[str, bool]] = []  # (expression, descending)
        self.notitle = self.noheader = False
        self.nosummary = True  # HTCondor: no footer unless SUMMARY STANDARD
        self.labels = False
        self.label_sep = " = "
        self.record_prefix, self.record_suffix = "", "\n"
        self.field_prefix, self.field_suffix = " ", ""
        self.extra: set[str] = set()

    def attributes(self, base: tuple[str, ...] = ("ClusterId", "ProcId", "JobStatus", "JobUniverse")) -> list[str]:
        """What to ask for: what the columns and GROUP BY name, what the PRINTAS functions
        read, and *base* (for condor_q the ids and status the listing and totals need)."""
        ad = ClassAd()
        names = set(base) | self.extra
        for expr in [c.expr for c in self.columns] + [e for e, _d in self.group_by]:
            names.update(ad.externalRefs(ExprTree(expr)))
        return sorted(names)

    def render(self, ads: list[dict[str, Any]], now: float, display: int | None = None) -> str:
        """The heading line (unless NOHEADER or LABEL) and one record per ad; *display*
        (a terminal's width less one) cuts each line, as condor_q does on a terminal."""
        if self.group_by:
            ads = _sorted(ads, self.group_by)
        # As condor_q: every row is rendered first (auto widths grow to the values), the
        # heading printed with those widths, then each row displayed in turn, an auto
        # width growing further with each row's text (so earlier rows may be narrower).
        cells = [[_cell_value(c, ad, now) for c in self.columns] for ad in ads]
        for row in cells:
            for c, (valid, v) in zip(self.columns, row, strict=True):
                if c.auto and valid:
                    c.width = max(c.width, _render_width(c, v))
        out = []
        if not self.noheader and not self.labels and self.columns:
            out.append(self._line([(c.heading.ljust(c.width) if c.width else c.heading) for c in self.columns],
                                  display))
        for row in cells:
            fields = []
            for c, (valid, v) in zip(self.columns, row, strict=True):
                text = _cell_text(c, valid, v)
                text = _alt(c) if text is None else text
                if c.auto:
                    c.width = max(c.width, len(text))
                fields.append(_aligned(c, text))
            out.append(self._line(fields, display))
        return "".join(out)

    def _line(self, fields: list[str], display: int | None) -> str:
        parts = []
        last = len(fields) - 1
        for i, (c, text) in enumerate(zip(self.columns, fields, strict=True)):
            if i > 0 and not c.noprefix:
                parts.append(self.field_prefix)
            parts.append(text)
            if i < last and not c.nosuffix:
                parts.append(self.field_suffix)
        line = "".join(parts)
        if display is not None and "\n" not in line:
            line = line[:display]
        return self.record_prefix + line + self.record_suffix


def _sorted(ads: list[dict[str, Any]], keys: list[tuple[str, bool]]) -> list[dict[str, Any]]:
    trees = [(ExprTree(e), d) for e, d in keys]
    evaluated = []
    for ad in ads:
        cad = to_classad(ad)
        evaluated.append(([_sort_key(t.eval(cad)) for t, _d in trees], ad))
    for i in range(len(trees) - 1, -1, -1):  # stable: least significant key first
        evaluated.sort(key=lambda kv, i=i: kv[0][i], reverse=trees[i][1])
    return [ad for _k, ad in evaluated]


def _sort_key(v: Any) -> tuple[int, Any]:
    if type(v) in (int, float, bool):
        return (0, float(v))
    if type(v) is str:
        return (1, v.lower())
    return (2, "")


def _tokens(line: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, text, quoted): words split at blanks; a quoted one runs to its quote."""
    out, i, n = [], 0, len(line)
    while i < n:
        if line[i] in " \t\r\n":
            i += 1
            continue
        start = i
        if line[i] in "'\"":
            end = line.find(line[i], i + 1)
            if end < 0:
                raise ValueError(f"unterminated string starting at offset {start + 1}")
            out.append((start, end + 1, line[start + 1:end], True))
            i = end + 1
            continue
        while i < n and line[i] not in " \t\r\n":
            i += 1
        out.append((start, i, line[start:i], False))
    return out


def parse(text: str, path: str = "<print format>", status: bool = False) -> PrintFormat:
    """Parse a print format file; a PrintFormatError names the line and what is wrong.

    *status*: as condor_status reads it, where a fixed WIDTH neither truncates nor makes a
    printf (so a number needs a PRINTF to show; a string is printed whole)."""
    pf = PrintFormat()
    section = None
    lines = text.split("\n")
    lineno = 0
    while lineno < len(lines):
        line = lines[lineno]
        lineno += 1
        while line.endswith("\\") and lineno < len(lines):  # a continued line
            line = line[:-1] + lines[lineno]
            lineno += 1
        try:
            toks = _tokens(line)
        except ValueError as e:
            raise PrintFormatError(path, lineno, str(e)) from None
        if not toks or toks[0][2].startswith("#"):
            continue
        head = toks[0][2]
        try:
            if head == "SELECT" and not toks[0][3]:
                _select_options(pf, toks[1:])
                section = "SELECT"
                continue
            if head == "WHERE" and not toks[0][3]:
                section = "WHERE"
                toks = toks[1:]
            elif head == "GROUP" and not toks[0][3]:
                section = "GROUP"
                toks = toks[2:] if len(toks) > 1 and toks[1][2] == "BY" else toks[1:]
            elif head == "SUMMARY" and not toks[0][3]:
                _summary_options(pf, toks[1:])
                section = "SUMMARY"
                continue
            elif head in ("JOIN", "AND") and not toks[0][3]:
                raise ValueError(f"{head} is not supported")
            if not toks:
                continue
            if section is None:
                raise ValueError("expected SELECT before the first column")
            rest = line[toks[0][0]:]
            if section == "SELECT":
                pf.columns.append(_column(pf, line, toks, status))
            elif section == "WHERE":
                _check_expr(rest.strip(), "WHERE expression")
                pf.where = rest.strip()  # as HTCondor: each WHERE line replaces the one before
            elif section == "GROUP":
                pf.group_by.append(_group_key(line, toks))
            else:
                raise ValueError("custom SUMMARY columns are not supported (use SUMMARY STANDARD or NONE)")
        except ValueError as e:
            raise PrintFormatError(path, lineno, str(e)) from None
    if pf.labels:
        pf.noheader = True
    return pf


def load(path: str, status: bool = False) -> PrintFormat:
    """``-print-format FILE`` (``-``: stdin) parsed; a ValueError names the file (and line)
    when it cannot be read or is bad."""
    try:
        if path == "-":  # condor_q and condor_status read the format from stdin
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        raise ValueError(f"can't open print format file {path}: {e.strerror or e}") from None
    return parse(text, path, status)


def _select_options(pf: PrintFormat, toks: list[tuple[int, int, str, bool]]) -> None:
    i = 0
    while i < len(toks):
        word = toks[i][2]
        if word == "BARE":
            pf.notitle = pf.noheader = pf.nosummary = True
        elif word == "NOTITLE":
            pf.notitle = True
        elif word == "NOHEADER":
            pf.noheader = True
        elif word == "NOSUMMARY":
            pf.nosummary = True
        elif word == "LABEL":
            pf.labels = True
        elif word in ("SEPARATOR", "RECORDPREFIX", "RECORDSUFFIX", "FIELDPREFIX", "FIELDSUFFIX"):
            if word == "SEPARATOR" and not pf.labels:
                raise ValueError("SEPARATOR is allowed only after LABEL")
            if i + 1 >= len(toks):
                raise ValueError(f"expected a string after {word}")
            i += 1
            value = unescape(toks[i][2])
            if word == "SEPARATOR":
                pf.label_sep = value
            else:
                setattr(pf, {"RECORDPREFIX": "record_prefix", "RECORDSUFFIX": "record_suffix",
                             "FIELDPREFIX": "field_prefix", "FIELDSUFFIX": "field_suffix"}[word], value)
        elif word in ("FROM", "UNIQUE"):
            raise ValueError(f"SELECT {word} (autocluster queries) is not supported")
        else:
            raise ValueError(f"unknown SELECT option {word}")
        i += 1


def _summary_options(pf: PrintFormat, toks: list[tuple[int, int, str, bool]]) -> None:
    if len(toks) != 1 or toks[0][2] not in ("STANDARD", "NONE"):
        got = " ".join(t[2] for t in toks) or "nothing"
        raise ValueError(f"expected STANDARD or NONE after SUMMARY, found {got}"
                         " (custom SUMMARY columns are not supported)")
    pf.nosummary = toks[0][2] == "NONE"


def _check_expr(expr: str, what: str) -> Any:
    try:
        return ExprTree(expr)
    except Exception as e:  # the ClassAd parser's own message says where
        raise ValueError(f"{what} is not valid: {expr}: {e}") from None


def _group_key(line: str, toks: list[tuple[int, int, str, bool]]) -> tuple[str, bool]:
    descending, end = False, len(line)
    for start, _e, word, quoted in toks:
        if not quoted and word in ("ASCENDING", "DESCENDING"):
            descending, end = word == "DESCENDING", min(end, start)
        elif not quoted and word == "AS":
            end = min(end, start)
    expr = line[toks[0][0]:end].strip()
    _check_expr(expr, "GROUP BY expression")
    return expr, descending


def _column(pf: PrintFormat, line: str, toks: list[tuple[int, int, str, bool]], status: bool = False) -> Column:
    """One formatting line, as make_printmask.cpp reads it (see the module docstring)."""
    c = Column()
    expr_end = None
    label: str | None = None
    fmt: str | None = "%v"  # the default printf, until WIDTH n drops it or PRINTF/PRINTAS sets one
    default_fmt = True
    wid, width_from_label = 0, True
    left: bool | None = None
    notrunc_opt, def_auto, def_notrunc = False, True, True
    auto_opt = False
    i = 0
    while i < len(toks):
        start, _end, word, quoted = toks[i]
        if quoted or word not in _SELECT_KEYWORDS:
            i += 1
            continue
        if expr_end is None:
            expr_end = start

        def arg(what: str, i: int = i, word: str = word) -> tuple[int, str, bool]:
            if i + 1 >= len(toks):
                raise ValueError(f"expected {what} after {word}")
            return i + 1, toks[i + 1][2], toks[i + 1][3]

        if word == "AS":
            i, label, q = arg("a column name")
            if q:
                label = unescape(label)
        elif word == "PRINTF":
            i, fmt, _q = arg("a format")
            fmt, default_fmt = unescape(fmt), False
        elif word in ("PRINTAS", "RENDERAS"):
            i, name, _q = arg("a function name")
            if name not in FUNCTIONS:
                raise ValueError(f"unknown {word} function {name} (known: {', '.join(sorted(FUNCTIONS))})")
            c.func = name
            if word == "PRINTAS" or default_fmt:
                fmt, default_fmt = FUNCTIONS[name][1], False
            pf.extra.update(FUNCTIONS[name][2])
        elif word == "OR":
            i, alt, _q = arg("a character (? or ??)")
            if not alt or alt[0] not in _ALT_CHARS:
                raise ValueError(f"OR takes one of '{_ALT_CHARS}' (or it doubled), not {alt}")
            c.alt, c.alt_wide = alt[0], len(alt) > 1 and alt[0] == alt[1]
        elif word == "NOSUFFIX":
            c.nosuffix = True
        elif word == "NOPREFIX":
            c.noprefix = True
        elif word == "LEFT":
            left = True
        elif word == "RIGHT":
            left = False
        elif word == "FIT":
            notrunc_opt = True
        elif word == "TRUNCATE":
            notrunc_opt, def_notrunc = False, False
        elif word == "ALWAYS":
            pass
        elif word == "WIDTH":
            i, val, _q = arg("a number or AUTO")
            if val == "AUTO":
                auto_opt, def_auto, def_notrunc = True, True, True
            else:
                try:
                    wid = int(val)
                except ValueError:
                    raise ValueError(f"expected a number or AUTO after WIDTH, found {val}") from None
                def_auto, width_from_label = False, False
                if not status:  # condor_q: a fixed width truncates (fixed_width_implies_truncate)
                    def_notrunc = False
                if default_fmt and fmt == "%v":
                    fmt, default_fmt = None, False
        else:  # AUTO outside WIDTH
            raise ValueError(f"{word} was unexpected")
        i += 1
    c.expr = line[toks[0][0]:expr_end].strip() if expr_end is not None else line[toks[0][0]:].strip()
    if not c.expr:
        raise ValueError("expected an attribute or expression before the keywords")
    c.tree = _check_expr(c.expr, "attribute or expression")
    c.is_attr = c.expr.replace("_", "a").isalnum() and not c.expr[:1].isdigit()
    c.auto = auto_opt or def_auto
    notrunc = notrunc_opt or def_notrunc
    lbl = label if label is not None else c.expr
    if pf.labels:
        sep = pf.label_sep
        if fmt is None:
            spec = "" if not wid else (f"{wid}" if notrunc else f"{wid}.{abs(wid)}")
            fmt = f"%{spec}{'s' if c.func else 'v'}"
        fmt = lbl + sep + fmt
        wid = 0
    else:
        if width_from_label:
            wid = -len(lbl)
        c.heading = lbl
        if not c.func and fmt is None:
            if not wid:
                fmt = "%v"
            elif not status:  # condor_q makes a %Nv printf of the width (generate_printf_from_width)
                fmt = f"%{'-' if wid < 0 else ''}{abs(wid)}{'' if notrunc else f'.{abs(wid)}'}v"
    c.width, c.printf = abs(wid), fmt
    c.left = bool(left) or wid < 0  # a negative width aligns left whatever RIGHT said
    c.truncate = not notrunc
    if c.printf and not wid:
        _pre, conv, _post = _split(c.printf)
        if conv:
            digits = conv[1:-1].lstrip("-+ #0").split(".")[0]
            if digits.isdigit():
                c.width = int(digits)
                c.left = c.left or conv[1:].startswith("-")
    return c


# -- rendering ------------------------------------------------------------------------------

def _value(c: Column, ad: dict[str, Any], cache: list[Any]) -> Any:
    """The column's value: a Python value, or the ClassAd Value Undefined/Error."""
    if c.is_attr:
        v = attr(ad, c.expr)
        if v is None:
            return Value.Undefined
        if type(v) in (int, float, bool) or (type(v) is str and not v.startswith("/Expr(")):
            return v
    if not cache:
        cache.append(to_classad(ad))
    try:
        return c.tree.eval(cache[0])
    except Exception:
        return Value.Error


def _conv_letter(fmt: str | None) -> str | None:
    if not fmt:
        return None
    _pre, conv, _post = _split(fmt)
    return conv[-1] if conv else None


def _cell_value(c: Column, ad: dict[str, Any], now: float) -> tuple[bool, Any]:
    """(valid, value) as ad_printmask's render computes it."""
    cache: list[Any] = []
    v = _value(c, ad, cache)
    if c.func:
        kind, _f, _x, fn = FUNCTIONS[c.func]
        if kind == "render":
            return fn(v, ad, now, c)  # type: ignore[no-any-return]
        if kind in ("int", "float"):
            return (type(v) in (int, float, bool)), v
        return not isinstance(v, Value) or v is Value.Undefined, v
    letter = _conv_letter(c.printf)
    if letter in ("r", "R"):  # the expression unevaluated: an attribute's, else the column's own
        raw = attr(ad, c.expr) if c.is_attr else None
        if c.is_attr:
            return True, "undefined" if raw is None else _classad_text(raw)
        return True, str(c.tree)
    if letter is None or letter in "vV":
        return True, v  # any value prints, undefined as "undefined"
    if letter in "diucxXoT":
        return type(v) in (int, float, bool), v
    if letter in "fFeEgGaA":
        return type(v) in (int, float, bool), v
    if letter == "s":
        if type(v) is str:
            return True, v
        raw = attr(ad, c.expr) if c.is_attr else None
        return (True, _classad_text(raw)) if raw is not None else (False, v)  # %s unparses an attribute
    if letter == "Y":
        return type(v) in (int, float), v
    return True, v


def _cell_text(c: Column, valid: bool, v: Any) -> str | None:
    """The column's text for one ad before alignment; None for the OR text."""
    if not valid:
        return None
    if c.func and FUNCTIONS[c.func][0] != "render":
        fn = FUNCTIONS[c.func][3]
        kind = FUNCTIONS[c.func][0]
        return fn(int(v) if kind == "int" else float(v) if kind == "float" else v)  # type: ignore[no-any-return]
    fmt = c.printf
    if fmt == "%s" or not fmt:
        return v if type(v) is str else ""
    pre, conv, post = _split(fmt)
    pre, post = pre.replace("%%", "%"), post.replace("%%", "%")
    if conv is None:
        return fmt.replace("%%", "%")
    letter = conv[-1]
    if letter in "diucxXo":
        conv = conv[:-1] + ("d" if letter in "iu" else letter)
        text = pre + conv % int(v) + post
    elif letter in "fFeEgGaA":
        text = pre + conv % float(v) + post
    elif letter == "T":
        text = duration(int(v))
    elif letter == "Y":
        text = date(int(v))
    elif letter in "sRr":
        return pre + (conv[:-1] + "s") % (v if type(v) is str else "") + post
    else:  # %v strings bare, %V as ClassAd text
        shown = v if (letter == "v" and type(v) is str) else _value_text(v)
        return pre + (conv[:-1] + "s") % shown + post
    return text.rjust(c.width)  # format_value pads numbers on the left to the width


def _value_text(v: Any) -> str:
    if isinstance(v, Value):
        return "undefined" if v is Value.Undefined else "error"
    return _classad_text(v)


def _render_width(c: Column, v: Any) -> int:
    """A value's width as ad_printmask's render pass reckons it (calc_column_width):
    strings their length, numbers as their printf prints them (or their ClassAd text);
    anything else, and the number formatters (QDATE, LOAD_AVG...), leave it as it is."""
    kind = FUNCTIONS[c.func][0] if c.func else None
    if type(v) is str:
        return len(v)
    if type(v) not in (int, float) or kind in ("int", "float"):
        return c.width
    letter = _conv_letter(c.printf) if kind is None else None
    if letter and letter in "diucxXofFeEgGaATY":
        return len(_cell_text(c, True, v) or "")
    return len(str(v)) if type(v) is int else len(_classad_text(v))


def _alt(c: Column) -> str:
    if c.alt_wide:
        if c.width < 3:
            return c.alt
        return "[" + c.alt * (c.width - 2) + "]"
    return "" if c.alt == " " else c.alt


def _aligned(c: Column, text: str) -> str:
    if not c.width:
        return text
    if len(text) > c.width:
        return text[:c.width] if c.truncate else text
    return text.ljust(c.width) if c.left else text.rjust(c.width)
