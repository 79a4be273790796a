"""Bad input against the shipped scenarios: every key of every scenario file replaced, one
at a time, by edge values, each mutant run for a moment; reports any run that panics,
aborts or does not end.

    python3 scripts/mutate_scenarios.py [--set edge|large] [--limit N] [--jobs N]
                                        [--timeout S] [--binary PATH] [SCENARIOS]

`edge` (the default) puts in zeros, negatives, NaN, infinities, empty and unknown text and
the largest duration; `large` puts in values that parse and may be accepted but are far
beyond the usual (1 ns, 999 999 999 s, 1 Tbit, 2^32, a list fifty times as long). Each
mutant runs for 1.5 s simulated (warm-up 0.5 s), without snapshots, into a temporary
directory that is removed. A run must end with status 0 or 2 (a clear error) and no
panic within the timeout (60 s): anything else is printed as BAD with the key path, the
value and the end of its standard error, and the script exits with status 1. A timeout
can also be a run that is merely as long as asked (a rate of 1 Tbit/s): read each.

SCENARIOS is a comma-separated list of names (default: all of scenarios/). Build the
binary first (`cargo build --release -p l4s-cli`). The mutants and their results live in
a temporary directory: nothing in the checkout is written.
"""
import argparse
import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DELETE = object()


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def is_table_array(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)


def to_toml(d, prefix=()):
    """A document that parses back to `d` (nested tables of an array element inline)."""
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in d.items() if not isinstance(v, dict) and not is_table_array(v)]
    for k, v in d.items():
        header = ".".join(json.dumps(p) for p in prefix + (k,))
        if isinstance(v, dict):
            lines += ["", f"[{header}]"] + to_toml(v, prefix + (k,))
        elif is_table_array(v):
            for x in v:
                lines += ["", f"[[{header}]]"] + [f"{json.dumps(a)} = {toml_value(b)}" for a, b in x.items()]
    return lines


def leaves(d, path=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from leaves(v, path + (k,))
    elif is_table_array(d):
        for i, x in enumerate(d):
            yield from leaves(x, path + (i,))
    else:
        yield path, d


def replaced(doc, path, value):
    d = json.loads(json.dumps(doc))
    x = d
    for p in path[:-1]:
        x = x[p]
    if value is DELETE:
        del x[path[-1]]
    else:
        x[path[-1]] = value
    return d


def values(v, which):
    if which == "edge":
        out = [DELETE]
        if isinstance(v, bool):
            out += [1, "x"]
        elif isinstance(v, int):
            out += [0, -1, 2**62, 1.5, "x"]
        elif isinstance(v, float):
            out += [0.0, -1.0, math.nan, math.inf, 1e300]
        elif isinstance(v, str):
            out += ["", "0", "-1s", "1e99Gbit", "0s", "0bit", "nan", "x", "18446744073709551615ns"]
        elif isinstance(v, list):
            out += [[], [0], ["x"], [-1.0]]
        return out
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [1, 4294967296, 65536, 10**9]
    if isinstance(v, float):
        return [1e-300, 0.999999, 1e9, 5e-324]
    if isinstance(v, str):
        return ["1ns", "999999999s", "1Tbit", "1bit", "1GB", "1B", "4294967296"]
    if isinstance(v, list):
        return [v * 50]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="?", default="")
    ap.add_argument("--set", choices=["edge", "large"], default="edge")
    ap.add_argument("--limit", type=int, default=0, help="run only the first N mutants")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "l4s"))
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit(f"{a.binary}: no l4s binary here (cargo build --release -p l4s-cli)")
    src = os.path.join(ROOT, "scenarios")
    names = [n for n in a.scenarios.split(",") if n] or sorted(f[:-5] for f in os.listdir(src) if f.endswith(".toml"))
    work = tempfile.mkdtemp(prefix="l4s-mutate-")
    try:
        # Beside copies of the traces, so that relative trace paths still resolve.
        shutil.copytree(src, os.path.join(work, "scenarios"))
        jobs = []
        for name in names:
            with open(os.path.join(src, name + ".toml"), "rb") as f:
                doc = tomllib.load(f)
            for path, v in leaves(doc):
                for m in values(v, a.set):
                    try:
                        text = "\n".join(to_toml(replaced(doc, path, m))) + "\n"
                    except (TypeError, KeyError):
                        continue
                    jobs.append((name, len(jobs), path, "(deleted)" if m is DELETE else m, text))
        if a.limit:
            jobs = jobs[: a.limit]
        print(f"{len(jobs)} mutants of {len(names)} scenarios", flush=True)

        def run(job):
            name, i, path, value, text = job
            f = os.path.join(work, "scenarios", f"{name}.m{i}.toml")
            out = os.path.join(work, f"out{i}")
            with open(f, "w") as fh:
                fh.write(text)
            cmd = [a.binary, "run", f, "--duration", "1500ms", "--warmup", "500ms", "--out", out, "-q", "--snapshot-interval", "0"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = "timeout", ""
            os.remove(f)
            shutil.rmtree(out, ignore_errors=True)
            return name, path, value, rc, err

        ends = Counter()
        bad = 0
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for name, path, value, rc, err in ex.map(run, jobs):
                ends[rc] += 1
                if rc not in (0, 2) or "panicked" in err:
                    bad += 1
                    tail = " | ".join(err.strip().splitlines()[-3:])
                    print(f"BAD {rc} {name} {'.'.join(map(str, path))} = {value!r}: {tail}", flush=True)
        print(f"{len(jobs)} runs, ends {dict(ends)}, {bad} bad")
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
