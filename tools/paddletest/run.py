#!/usr/bin/env python3
"""Run PaddleTest folders against oar or real Paddle, and compare the two.

    run.py run FOLDER --python PY --impl oar|paddle --out RESULT.json [--timeout S] [--files PATTERN]
    run.py compare PADDLE.json OAR.json
    run.py merge OUT.json IN.json...      (results of one implementation, e.g. runs with --files)

`run` runs each test_*.py of FOLDER in its own pytest process (a timeout per file) and records every
case as passed / failed / error / skipped with its first error line. With --impl oar, a shim directory
(tools/paddletest/shim) is put first on PYTHONPATH so `import paddle` is oar. A file that does not
load (or times out) is recorded as one case `FILE::<file>` with the reason.

`compare` takes the cases passing on Paddle as the yardstick and prints how many of them pass on oar,
then the failing ones grouped by the API the file covers, with oar's first error line.
See docs/paddletest.md.
"""
import argparse
import collections
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")
FILE_CASE = "<file>"


def _first_line(text):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return ""


def _failure_line(elem, system_out):
    """The most telling line of a failure: the harness's hidden dtype-check error when it printed one."""
    hidden = [l for l in (system_out or "").splitlines() if l.startswith("[type check]")]
    msg = _first_line(elem.get("message")) or _first_line(elem.text)
    if hidden and "type check Error" in msg:
        return hidden[0][len("[type check] "):][:300]
    # pytest's message for `assert x` carries the whole expression; keep its first line.
    return msg


def _parse_junit(path, fname):
    cases = {}
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        name = "%s::%s" % (fname, tc.get("name"))
        out_elem = tc.find("system-out")
        system_out = out_elem.text if out_elem is not None else ""
        status, line = "passed", ""
        for tag in ("failure", "error"):
            elem = tc.find(tag)
            if elem is not None:
                status, line = ("failed" if tag == "failure" else "error"), _failure_line(elem, system_out)
                break
        else:
            if tc.find("skipped") is not None:
                status = "skipped"
        cases[name] = {"status": status, "error": line}
    return cases


def run_folder(args):
    folder = os.path.abspath(args.folder)
    files = sorted(glob.glob(os.path.join(folder, args.files)))
    env = dict(os.environ)
    paths = [folder]
    if args.impl == "oar":
        paths.insert(0, SHIM)
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    result = {
        "impl": args.impl,
        "python": args.python,
        "folder": folder,
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "cases": {},
    }
    for i, path in enumerate(files):
        fname = os.path.basename(path)
        with tempfile.TemporaryDirectory() as tmp:
            xml = os.path.join(tmp, "r.xml")
            cmd = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_logging=system-out",
                   "--junitxml", xml, fname]
            try:
                proc = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=args.timeout, text=True)
                out, timed_out = proc.stdout, False
            except subprocess.TimeoutExpired as e:
                out, timed_out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), True
            cases = {}
            if not timed_out and os.path.exists(xml):
                try:
                    cases = _parse_junit(xml, fname)
                except ET.ParseError:
                    cases = {}
            # A collection error shows up as one <testcase> with an error; pytest names it after the file.
            if timed_out:
                cases = {"%s::%s" % (fname, FILE_CASE): {"status": "error", "error": "timed out after %ds" % args.timeout}}
            elif not cases or "ERROR collecting" in out:
                errs = [l for l in out.splitlines() if re.match(r"^E\s+\w+(Error|Exception)", l)]
                reason = errs[0][1:].strip() if errs else _first_line(out[-2000:]) or "no result"
                cases = {"%s::%s" % (fname, FILE_CASE): {"status": "error", "error": "the file did not load: " + reason}}
            result["cases"].update(cases)
            n_pass = sum(1 for v in cases.values() if v["status"] == "passed")
            print("[%d/%d] %s: %d/%d passed" % (i + 1, len(files), fname, n_pass, len(cases)), flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(summary_table([result]))


def summary_table(results):
    rows = ["| impl | folder | cases | passed | failed | error | skipped |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        counts = collections.Counter(v["status"] for v in r["cases"].values())
        rows.append("| %s | %s | %d | %d | %d | %d | %d |" % (
            r["impl"], os.path.basename(r["folder"]), len(r["cases"]), counts["passed"], counts["failed"],
            counts["error"], counts["skipped"]))
    return "\n".join(rows)


def _api_of(case):
    fname = case.split("::")[0]
    name = fname[:-3] if fname.endswith(".py") else fname
    return name[5:] if name.startswith("test_") else name


def compare(args):
    with open(args.paddle) as f:
        ref = json.load(f)
    with open(args.oar) as f:
        got = json.load(f)
    yard = sorted(k for k, v in ref["cases"].items() if v["status"] == "passed")
    failing = collections.defaultdict(list)
    passed = 0
    for case in yard:
        mine = got["cases"].get(case)
        if mine is None:
            # the whole file failed to load on oar
            mine = got["cases"].get("%s::%s" % (case.split("::")[0], FILE_CASE), {"status": "missing", "error": "no result"})
        if mine["status"] == "passed":
            passed += 1
        else:
            failing[_api_of(case)].append(mine["error"] or mine["status"])
    pct = 100.0 * passed / len(yard) if yard else 0.0
    print("%s: %d cases pass on Paddle (%s); of those, %d pass on oar (%.0f%%)" % (
        os.path.basename(ref["folder"]), len(yard), ref["date"], passed, pct))
    print(summary_table([ref, got]))
    causes = collections.Counter()
    for api in sorted(failing):
        errs = collections.Counter(failing[api])
        top, _ = errs.most_common(1)[0]
        print("- `%s` (%d): %s" % (api, len(failing[api]), top))
        for e, n in errs.items():
            causes[e] += n
    print("\nfailing cases by first error line:")
    for e, n in causes.most_common(40):
        print("%5d  %s" % (n, e))


def merge(args):
    out = None
    for path in args.inputs:
        with open(path) as f:
            r = json.load(f)
        if out is None:
            out = r
        elif r["impl"] != out["impl"]:
            raise SystemExit("merge: {} is a {} run, the others {}".format(path, r["impl"], out["impl"]))
        else:
            out["cases"].update(r["cases"])
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(summary_table([out]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run one PaddleTest folder")
    r.add_argument("folder")
    r.add_argument("--python", default=sys.executable)
    r.add_argument("--impl", choices=["oar", "paddle"], required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--timeout", type=int, default=300, help="seconds per test file")
    r.add_argument("--files", default="test_*.py", help="glob of the files to run inside the folder")
    c = sub.add_parser("compare", help="cases passing on Paddle, of those passing on oar")
    c.add_argument("paddle")
    c.add_argument("oar")
    m = sub.add_parser("merge", help="merge result files of one implementation (later files win)")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+")
    args = p.parse_args(argv)
    if args.cmd == "run":
        run_folder(args)
    elif args.cmd == "merge":
        merge(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
