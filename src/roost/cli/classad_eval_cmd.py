"""``roost classad_eval`` (``classad_eval``): evaluate ClassAd expressions against an ad
built up on the command line, as HTCondor's classad_eval does.

Arguments take effect left to right. Each is tried first as an ad (``'[a = 1; b = 2]'``,
or an assignment ``'a = 1'``, which is an ad without its brackets) that updates the
context ad; failing that, as an expression, simplified against the context (and the
``-target-file`` ad) and printed in ClassAd form. The context is printed before the first
expression after each change unless ``-quiet`` came earlier. ``-file`` and
``-target-file`` read the first ad of a file: new syntax as classad_eval reads it
(``condor_q -long:new`` output included), and, where HTCondor's tool gives up, old syntax
too (``condor_q -long`` output).
"""

from __future__ import annotations

import sys

from roost.classad import ClassAd, ClassAdException, ExprTree
from roost.classad.adstream import ParserType, parseAds
from roost.classad.errors import ClassAdSyntaxError

PROG = "roost classad_eval"

USAGE = """\
Usage: {prog} [options] <expr|assignment>[ <expr|assignment>]*

Evaluate ClassAd expressions.
Assignments modify the ClassAd context.

Where [options] is one of
\t-[my-]file   <file>\tA file containing the initial ClassAd context
\t-target-file <file>\tA file containing the target ClassAd
\t-debug             \tEnable debug mode
\t-help              \tPrint this screen and exit

Flags may replace expressions or assignments:
\t-quiet             \tDon't print the ClassAd context after this flag"""


class EvalError(Exception):
    """An argument or a file that is neither an ad nor an expression; the message says which."""


def ad_from_text(text: str) -> ClassAd:
    """``text`` as a whole ad or, bracketed, as assignments; ClassAdException if neither."""
    try:
        return ClassAd(text)
    except ClassAdException:
        return ClassAd("[" + text + "]")


def ad_from_file(path: str) -> ClassAd:
    """The first ad of the file at ``path``, new syntax (``condor_q -long:new``'s outer
    ``{ ... }`` dropped, as classad_eval drops it) or old."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as e:
        raise EvalError(f"Unable to read file '{path}': {e.strerror}") from None
    new = text[2:] if text.startswith("{\n") and text.endswith("\n}\n") else text
    try:
        return ad_from_text(new)
    except ClassAdException:
        pass
    try:
        first = next(iter(parseAds(text, ParserType.Old)), None)
    except ClassAdSyntaxError as e:
        raise EvalError(f"Unable to turn file '{path}' into a ClassAd: {e.with_file(path)}") from None
    if first is None or not len(first):
        raise EvalError(f"Unable to turn file '{path}' into a ClassAd: it holds no attributes")
    return first


def evaluate(argv: list[str], out: list[str]) -> int:
    """Run classad_eval over ``argv``, appending each output line to ``out``; the exit
    status (255 for a usage error, as classad_eval's -1). EvalError for bad input."""
    quiet = False
    updated = True
    target: ClassAd | None = None
    context = ClassAd()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-quiet":
            quiet = True
        elif arg in ("-file", "-my-file", "-target-file"):
            if i >= len(argv):
                print(f"{PROG}: {arg} requires an argument", file=sys.stderr)
                return 255
            ad = ad_from_file(argv[i])
            i += 1
            if arg == "-target-file":
                target = ad
            else:
                context = ad  # replaces the context, as classad_eval's -file does
        elif arg == "-debug":
            pass  # classad_eval's -debug turns on HTCondor's tool debug log; roost has none
        elif arg in ("-help", "-h", "--help"):
            out.extend(USAGE.format(prog=PROG).splitlines())
            return 255
        else:
            try:
                context.update(ad_from_text(arg))
                updated = True
                continue
            except ClassAdException:
                pass
            if updated:
                updated = False
                if not quiet:
                    out.append(repr(context))
            try:
                expr = ExprTree(arg)
            except ClassAdSyntaxError as e:
                raise EvalError(f"Unable to turn '{arg}' into a ClassAd or an expression: {e}") from None
            out.append(repr(expr.simplify(context, target)))
    return 0


def main(argv: list[str]) -> int:
    out: list[str] = []
    try:
        rc = evaluate(argv, out)
    except EvalError as e:
        rc = 1
        message = str(e)
    else:
        message = ""
    if out:
        sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()
    if message:
        print(f"{PROG}: {message}", file=sys.stderr)
    return rc
