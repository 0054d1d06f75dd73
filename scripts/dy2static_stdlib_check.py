"""Stress check of oar.jit.dy2static on real code (not a pytest test; run by hand):

    PYTHONPATH=<oar install> python3 scripts/dy2static_stdlib_check.py

Converts every Python function and method of a set of standard-library modules, patches the converted
functions into their modules, runs a workload over those modules and compares its results with the
unpatched run. Prints internal conversion failures and any differing result (exit status 1 on either).
"""
import _pydecimal as D
import _strptime
import argparse
import ast
import base64
import calendar
import colorsys
import configparser
import copy
import dataclasses
import datetime
import difflib
import email.utils
import enum
import fnmatch
import fractions
import gettext
import graphlib
import heapq
import html
import importlib
import inspect
import io
import ipaddress
import json
import posixpath
import pprint
import quopri
import re
import shlex
import statistics
import string
import sys
import textwrap
import tokenize
import tomllib
import types
import urllib.parse
import uuid
import warnings

from oar.jit.dy2static import convert_to_static

MODULES = [
    "_pydecimal", "_strptime", "argparse", "ast", "base64", "bisect", "calendar", "collections", "colorsys",
    "configparser", "copy", "dataclasses", "difflib", "email.utils", "fnmatch", "fractions", "functools",
    "gettext", "glob", "graphlib", "heapq", "html", "inspect", "ipaddress", "json.decoder", "json.encoder",
    "netrc", "posixpath", "pprint", "quopri", "re._compiler", "re._parser", "shlex", "statistics", "string",
    "textwrap", "tokenize", "tomllib._parser", "urllib.parse", "uu", "uuid", "zipfile"
]


def convert_all():
    patched, skipped, internal = [], 0, []
    for m in MODULES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # uu
                mod = importlib.import_module(m)
        except ImportError:
            continue
        for obj in list(vars(mod).values()):
            targets = []
            if isinstance(obj, types.FunctionType) and obj.__module__ == mod.__name__:
                targets.append((mod, obj.__name__, obj))
            elif isinstance(obj, type) and obj.__module__ == mod.__name__:
                targets += [(obj, n, f) for n, f in list(vars(obj).items()) if isinstance(f, types.FunctionType)]
            for owner, name, f in targets:
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    c = convert_to_static(f)
                if c is f:
                    skipped += 1
                    msg = str(w[0].message) if w else ""
                    if "conversion failed" in msg:
                        internal.append((m, name, msg))
                else:
                    patched.append((owner, name, f, c))
    return patched, skipped, internal


def _argparse():
    p = argparse.ArgumentParser(prog="t")
    p.add_argument("--n", type=int, default=3)
    p.add_argument("xs", nargs="*")
    return vars(p.parse_args(["--n", "5", "a", "b"])), p.format_help()


def _configparser():
    cp = configparser.ConfigParser()
    cp.read_string("[a]\nx = 1\ny = ${x}2\n[b]\nz: hello\n  world\n")
    return {s: dict(cp[s]) for s in cp.sections()}


def _regexes():
    out = []
    patterns = [r"(?P<y>\d{4})-(\d\d)?(?:x|y)+[a-z]*?\b", r"^(a|b)*?c{2,5}$", r"(?i)hello\s+(?=world)",
                r"[^\W\d_]+|\$\{(\w+)\}"]
    for pat in patterns:
        re.purge()
        r = re.compile(pat)
        out.append((r.pattern, r.groups, r.findall("2024-11xyab hello World ${v} aabcc")))
    return out


def _decimal():
    D.getcontext().prec = 30
    return [
        D.Decimal(1) / D.Decimal(7),
        D.Decimal("1.2345e10").sqrt(),
        D.Decimal("2").ln(),
        D.Decimal("-12.5").quantize(D.Decimal("1"), rounding=D.ROUND_HALF_EVEN),
        D.Decimal("3.14159").exp(),
        format(D.Decimal("1234567.891"), ",.2f"),
        D.Decimal(2)**D.Decimal("0.5"),
    ]


def _heapq():
    h = [5, 1, 8, 3, 9, 2]
    heapq.heapify(h)
    popped = [heapq.heappop(h) for _ in range(6)]
    return popped, heapq.nlargest(3, [4, 1, 7, 3, 9]), list(heapq.merge([1, 4, 7], [2, 5], [3, 6, 9]))


def _classes():

    @dataclasses.dataclass(order=True)
    class P:
        x: int
        y: list = dataclasses.field(default_factory=list)

    class Color(enum.Flag):
        R = 1
        G = 2
        B = 4

    return repr(P(1)), P(1) < P(2), dataclasses.asdict(P(3, [1])), repr(Color.R | Color.B), list(Color)


PLURAL = "n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2"
NETS = ["10.0.0.0/25", "10.0.0.128/25"]
CASES = [
    lambda: posixpath.normpath("/a/b/../c/./d//e"),
    lambda: posixpath.relpath("/a/b/c", "/a/d"),
    lambda: posixpath.join("a", "/b", "c"),
    lambda: textwrap.fill("The quick brown fox jumps over the lazy dog " * 5, width=23),
    lambda: textwrap.dedent("   a\n    b\n   c"),
    lambda: textwrap.shorten("Hello   world, this is long", width=15),
    lambda: textwrap.indent("a\n\nb", "> "),
    lambda: statistics.median([3, 1, 4, 1, 5, 9, 2]),
    lambda: statistics.mean([1, 2, 3, 4]),
    lambda: statistics.mode([1, 1, 2]),
    lambda: statistics.stdev([1.0, 2.0, 4.0, 8.0]),
    lambda: statistics.quantiles([1, 2, 3, 4, 5, 6, 7, 8, 9], n=4),
    lambda: colorsys.rgb_to_hsv(0.2, 0.4, 0.6),
    lambda: colorsys.hls_to_rgb(0.5, 0.3, 0.9),
    lambda: colorsys.rgb_to_hls(0.9, 0.1, 0.3),
    lambda: fnmatch.translate("*.py[co]?"),
    lambda: fnmatch.filter(["a.py", "b.pyc", "c.txt"], "*.py*"),
    lambda: shlex.split("a 'b c' \"d e\" f\\ g # x", comments=True),
    lambda: shlex.quote("it's"),
    lambda: list(difflib.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"])),
    lambda: difflib.SequenceMatcher(None, "abcd", "bcde").ratio(),
    lambda: difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]),
    lambda: calendar.monthrange(2024, 2),
    lambda: calendar.TextCalendar().formatmonth(2026, 11),
    lambda: calendar.isleap(1900),
    lambda: str(ipaddress.ip_network("192.168.0.0/22")),
    lambda: [str(a) for a in ipaddress.ip_network("10.0.0.0/30").hosts()],
    lambda: str(ipaddress.ip_address("::ffff:1.2.3.4")),
    lambda: list(ipaddress.collapse_addresses([ipaddress.ip_network(n) for n in NETS])),
    lambda: base64.b32encode(b"hello"),
    lambda: base64.a85encode(b"hello world"),
    lambda: base64.b85decode(base64.b85encode(b"xyz")),
    lambda: html.unescape("&lt;a&gt; &amp;amp; &#x41;"),
    lambda: html.escape("<a href='x'>"),
    lambda: fractions.Fraction(3, 4) + fractions.Fraction("1.25"),
    lambda: fractions.Fraction(0.1).limit_denominator(100),
    lambda: json.dumps({"a": [1, 2.5, None, True], "b": {"c": "d\n"}}, indent=2, sort_keys=True),
    lambda: json.loads('{"x": [1, 2, {"y": "z"}], "w": -1.5e3}'),
    lambda: email.utils.parseaddr("Foo Bar <foo@bar.com>"),
    lambda: email.utils.formataddr(("A B", "a@b.c")),
    lambda: urllib.parse.urlsplit("http://u:p@h:8/p;q?x=1&y=2#f"),
    lambda: urllib.parse.quote("a b/c?"),
    lambda: urllib.parse.parse_qs("a=1&b=2&a=3"),
    lambda: urllib.parse.urljoin("http://a/b/c/d;p?q", "../../g"),
    lambda: pprint.pformat({"k%d" % i: list(range(i)) for i in range(8)}, width=40),
    lambda: [t.string for t in tokenize.generate_tokens(io.StringIO("x = (1 +\n 2) # c\n").readline)],
    _argparse,
    _regexes,
    _decimal,
    _configparser,
    lambda: _strptime._strptime_datetime(datetime.datetime, "2024-02-29 13:45:01", "%Y-%m-%d %H:%M:%S"),
    lambda: [gettext.c2py(PLURAL)(n) for n in range(30)],
    lambda: ast.literal_eval("{'a': [1, -2.5, (3, None)], 'b': {1, 2}}"),
    lambda: ast.dump(ast.parse("x = a if b else c")),
    lambda: ast.unparse(ast.parse("def f(a, *b, c=1, **d):\n    return [i for i in a if i and not c]")),
    _heapq,
    lambda: string.Template("$a and ${b}").safe_substitute(a=1),
    lambda: string.Formatter().format("{0:>5}|{x!r}", 3, x="y"),
    lambda: copy.deepcopy({"a": [1, {"b": (2, 3)}]}),
    _classes,
    lambda: str(inspect.signature(lambda a, b=2, *c, d, **e: 0)),
    lambda: tomllib.loads('a = 1\n[t]\nb = "x"\nc = [1, 2, {d = 3}]\ne = 1979-05-27T07:32:00Z\n'),
    lambda: list(graphlib.TopologicalSorter({"d": {"b", "c"}, "b": {"a"}, "c": {"a"}}).static_order()),
    lambda: str(uuid.UUID("12345678123456781234567812345678")),
    lambda: quopri.encodestring(b"caf\xe9 = ok\n"),
]


def workload():
    return [repr(case()) for case in CASES]  # repr: classes made in the workload differ per run


def main():
    ref = workload()
    patched, skipped, internal = convert_all()
    for owner, name, f, c in patched:
        setattr(owner, name, c)
    try:
        got = workload()
    finally:
        for owner, name, f, c in patched:
            setattr(owner, name, f)
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(ref, got)) if a != b]
    print("modules {}, converted {}, left unconverted {}, internal failures {}".format(
        len(MODULES), len(patched), skipped, len(internal)))
    for x in internal:
        print("  internal:", x)
    print("workload results {}, differing {}".format(len(ref), len(bad)))
    for b in bad:
        print("  differs:", str(b)[:300])
    return 1 if bad or internal else 0


if __name__ == "__main__":
    sys.exit(main())
