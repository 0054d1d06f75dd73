"""Stress check of oar.jit.dy2static on real code (not a pytest test; run by hand):

    PYTHONPATH=<oar install> python3 scripts/dy2static_stdlib_check.py

Converts every Python function and method of a set of standard-library modules, patches the converted
functions into their modules, runs a workload over those modules and compares its results with the
unpatched run. Prints the functions left unconverted with a reason other than "generator" / "no source",
and any differing result. Exit status 1 on a difference or an internal conversion failure.
"""
import importlib
import sys
import types
import warnings

from oar.jit.dy2static import convert_to_static

MODULES = sorted(set(["posixpath", "textwrap", "statistics", "colorsys", "fnmatch", "shlex", "difflib", "calendar", "ipaddress", "base64", "html", "string", "fractions", "json.encoder", "json.decoder", "email.utils", "urllib.parse", "tokenize", "pprint", "argparse"] + ["re._parser", "re._compiler", "_pydecimal", "configparser", "_strptime", "gettext", "ast", "fractions", "heapq", "bisect", "textwrap", "string", "shlex", "copy", "pprint", "dataclasses", "functools", "collections", "inspect", "tomllib._parser", "graphlib", "uuid", "quopri", "uu", "netrc", "glob", "zipfile"]))


def convert_all():
    patched, skipped, internal = [], 0, []
    for m in MODULES:
        try:
            mod = importlib.import_module(m)
        except ImportError:
            continue
        for obj in list(vars(mod).values()):
            targets = []
            if isinstance(obj, types.FunctionType) and obj.__module__ == mod.__name__:
                targets.append((mod, obj.__name__, obj))
            elif isinstance(obj, type) and obj.__module__ == mod.__name__:
                targets += [(obj, an, av) for an, av in list(vars(obj).items()) if isinstance(av, types.FunctionType)]
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


def workload1():
    import posixpath, textwrap, statistics, colorsys, fnmatch, shlex, difflib, calendar, ipaddress, base64, html, fractions, json, email.utils, urllib.parse, pprint, argparse, io, tokenize
    out = []
    out.append(posixpath.normpath("/a/b/../c/./d//e")); out.append(posixpath.relpath("/a/b/c", "/a/d")); out.append(posixpath.join("a", "/b", "c"))
    out.append(textwrap.fill("The quick brown fox jumps over the lazy dog " * 5, width=23)); out.append(textwrap.dedent("   a\n    b\n   c"))
    out.append(textwrap.shorten("Hello   world, this is long", width=15)); out.append(textwrap.indent("a\n\nb", "> "))
    out.append(statistics.median([3, 1, 4, 1, 5, 9, 2])); out.append(statistics.mean([1, 2, 3, 4])); out.append(statistics.mode([1, 1, 2]))
    out.append(statistics.stdev([1.0, 2.0, 4.0, 8.0])); out.append(statistics.quantiles([1, 2, 3, 4, 5, 6, 7, 8, 9], n=4))
    out.append(colorsys.rgb_to_hsv(0.2, 0.4, 0.6)); out.append(colorsys.hls_to_rgb(0.5, 0.3, 0.9)); out.append(colorsys.rgb_to_hls(0.9, 0.1, 0.3))
    out.append(fnmatch.translate("*.py[co]?")); out.append(fnmatch.filter(["a.py", "b.pyc", "c.txt"], "*.py*"))
    out.append(shlex.split("a 'b c' \"d e\" f\\ g # x", comments=True)); out.append(shlex.quote("it's"))
    out.append(list(difflib.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"]))); out.append(difflib.SequenceMatcher(None, "abcd", "bcde").ratio())
    out.append(difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]))
    out.append(calendar.monthrange(2024, 2)); out.append(calendar.TextCalendar().formatmonth(2026, 11)); out.append(calendar.isleap(1900))
    out.append(str(ipaddress.ip_network("192.168.0.0/22"))); out.append([str(a) for a in ipaddress.ip_network("10.0.0.0/30").hosts()]); out.append(str(ipaddress.ip_address("::ffff:1.2.3.4")))
    out.append(list(ipaddress.collapse_addresses([ipaddress.ip_network("10.0.0.0/25"), ipaddress.ip_network("10.0.0.128/25")])))
    out.append(base64.b32encode(b"hello")); out.append(base64.a85encode(b"hello world")); out.append(base64.b85decode(base64.b85encode(b"xyz")))
    out.append(html.unescape("&lt;a&gt; &amp;amp; &#x41;")); out.append(html.escape("<a href='x'>"))
    out.append(fractions.Fraction(3, 4) + fractions.Fraction("1.25")); out.append(fractions.Fraction(0.1).limit_denominator(100))
    out.append(json.dumps({"a": [1, 2.5, None, True], "b": {"c": "d\n"}}, indent=2, sort_keys=True)); out.append(json.loads('{"x": [1, 2, {"y": "z"}], "w": -1.5e3}'))
    out.append(email.utils.parseaddr("Foo Bar <foo@bar.com>")); out.append(email.utils.formataddr(("A B", "a@b.c")))
    out.append(urllib.parse.urlsplit("http://u:p@h:8/p;q?x=1&y=2#f")); out.append(urllib.parse.quote("a b/c?")); out.append(urllib.parse.parse_qs("a=1&b=2&a=3"))
    out.append(urllib.parse.urljoin("http://a/b/c/d;p?q", "../../g"))
    out.append(pprint.pformat({"k%d" % i: list(range(i)) for i in range(8)}, width=40))
    out.append([t.string for t in tokenize.generate_tokens(io.StringIO("x = (1 +\n 2) # c\n").readline)])
    p = argparse.ArgumentParser(prog="t"); p.add_argument("--n", type=int, default=3); p.add_argument("xs", nargs="*")
    out.append(vars(p.parse_args(["--n", "5", "a", "b"]))); out.append(p.format_help())
    return out


def workload2():
    import re, _pydecimal as D, configparser, _strptime, gettext, ast, fractions, heapq, bisect, string, copy, pprint, dataclasses, enum, inspect, tomllib, graphlib, uuid, quopri, glob
    out = []
    for pat in [r"(?P<y>\d{4})-(\d\d)?(?:x|y)+[a-z]*?\b", r"^(a|b)*?c{2,5}$", r"(?i)hello\s+(?=world)", r"[^\W\d_]+|\$\{(\w+)\}"]:
        re.purge(); r = re.compile(pat); out.append((r.pattern, r.groups, r.findall("2024-11xyab hello World ${v} aabcc")))
    D.getcontext().prec = 30
    out.append(str(D.Decimal(1) / D.Decimal(7))); out.append(str(D.Decimal("1.2345e10").sqrt())); out.append(str(D.Decimal("2").ln()))
    out.append(str(D.Decimal("-12.5").quantize(D.Decimal("1"), rounding=D.ROUND_HALF_EVEN))); out.append(str(D.Decimal("3.14159").exp()))
    out.append(format(D.Decimal("1234567.891"), ",.2f")); out.append(str(D.Decimal(2) ** D.Decimal("0.5")))
    cp = configparser.ConfigParser(); cp.read_string("[a]\nx = 1\ny = ${x}2\n[b]\nz: hello\n  world\n"); out.append({s: dict(cp[s]) for s in cp.sections()})
    out.append(_strptime._strptime_datetime(__import__("datetime").datetime, "2024-02-29 13:45:01", "%Y-%m-%d %H:%M:%S"))
    f = gettext.c2py("n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2"); out.append([f(n) for n in range(30)])
    out.append(ast.literal_eval("{'a': [1, -2.5, (3, None)], 'b': {1, 2}}")); out.append(ast.dump(ast.parse("x = a if b else c")))
    out.append(ast.unparse(ast.parse("def f(a, *b, c=1, **d):\n    return [i for i in a if i and not c]")))
    h = [5, 1, 8, 3, 9, 2]; heapq.heapify(h); out.append([heapq.heappop(h) for _ in range(6)]); out.append(heapq.nlargest(3, [4, 1, 7, 3, 9]))
    out.append(list(heapq.merge([1, 4, 7], [2, 5], [3, 6, 9])))
    out.append(string.Template("$a and ${b}").safe_substitute(a=1)); out.append(string.Formatter().format("{0:>5}|{x!r}", 3, x="y"))
    out.append(copy.deepcopy({"a": [1, {"b": (2, 3)}]}))
    @dataclasses.dataclass(order=True)
    class P:
        x: int
        y: list = dataclasses.field(default_factory=list)
    out.append((repr(P(1)), P(1) < P(2), dataclasses.asdict(P(3, [1]))))
    class Color(enum.Flag):
        R = 1; G = 2; B = 4
    out.append((repr(Color.R | Color.B), list(Color)))
    out.append(str(inspect.signature(lambda a, b=2, *c, d, **e: 0)))
    out.append(tomllib.loads('a = 1\n[t]\nb = "x"\nc = [1, 2, {d = 3}]\ne = 1979-05-27T07:32:00Z\n'))
    ts = graphlib.TopologicalSorter({"d": {"b", "c"}, "b": {"a"}, "c": {"a"}}); out.append(list(ts.static_order()))
    out.append(str(uuid.UUID("12345678123456781234567812345678"))); out.append(quopri.encodestring(b"caf\xe9 = ok\n"))
    return out



def workload():
    return [repr(x) for x in workload1() + workload2()]  # repr: classes made in the workload differ per run


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
