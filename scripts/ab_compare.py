"""A/B of two l4s binaries over every shipped scenario and variant: do they give the same
results in distribution?

    python3 scripts/ab_compare.py OLD_BINARY NEW_BINARY [SEEDS] [SCENARIOS]

SEEDS is a comma-separated list (default 1,2,3,4,5); SCENARIOS a comma-separated list of
scenario names (default: all of scenarios/). Each run uses the seed and moves the first
flow's start by that many microseconds, so that scenarios without randomness show their
spread too. For every per-flow throughput and OWD p99 and every per-queue sojourn p99 it
prints the two means, the mean seed-to-seed standard deviation and z, the difference in
standard errors; then how many metrics lie beyond 2 and 3 standard errors. Used when a
change is meant to alter only the order of simultaneous events (docs/design.md, "Events
per packet and the event queue").
"""
import glob
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib

UNITS = {"ns": 1, "us": 1000, "ms": 10**6, "s": 10**9}


def nanos(t):
    for u in ("ns", "us", "ms", "s"):
        if t.endswith(u):
            return int(round(float(t[: -len(u)]) * UNITS[u]))
    raise ValueError(f"not a duration: {t!r}")


def run(binary, path, seed, out_dir):
    with open(path, "rb") as f:
        first = tomllib.load(f)["flows"][0]
    start = nanos(first.get("start", "0s")) + seed * 1000
    out = subprocess.run(
        [binary, "run", path, "--json", "--seed", str(seed), "--snapshot-interval", "0",
         "--out", out_dir, "--set", f"flows.{first['name']}.start={start}ns"],
        capture_output=True, text=True, check=True,
    ).stdout
    shutil.rmtree(out_dir, ignore_errors=True)
    d = json.loads(out)
    return {"-": d} if "flows" in d else d


def metrics(s):
    m = {}
    for fl in s["flows"]:
        m[f"{fl['name']} thr Mb/s"] = fl.get("throughput_bps", 0) / 1e6
        if (fl.get("owd_ms") or {}).get("p99") is not None:
            m[f"{fl['name']} owd p99 ms"] = fl["owd_ms"]["p99"]
    for q in s["queues"]:
        soj = q.get("sojourn_ms") or {}
        if soj.get("p99") is not None and soj.get("count", 0) > 100:
            m[f"{q['name']} soj p99 ms"] = soj["p99"]
    return m


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = (os.path.abspath(b) for b in sys.argv[1:3])
    seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1, 2, 3, 4, 5]
    only = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else None
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    tmp = tempfile.mkdtemp(prefix="l4s-ab-")
    count = itertools.count()
    zs = []
    for path in sorted(glob.glob("scenarios/*.toml")):
        name = os.path.basename(path)[:-5]
        if only and name not in only:
            continue
        res = {}
        for tag, binary in (("old", old), ("new", new)):
            for seed in seeds:
                for var, s in run(binary, path, seed, os.path.join(tmp, str(next(count)))).items():
                    for k, v in metrics(s).items():
                        res.setdefault((var, k), {}).setdefault(tag, []).append(v)
        for (var, k), d in sorted(res.items()):
            o, n = d.get("old", []), d.get("new", [])
            if len(o) < 2 or len(n) < 2:
                continue
            mo, mn = statistics.mean(o), statistics.mean(n)
            sd = (statistics.pstdev(o) + statistics.pstdev(n)) / 2
            se = sd * (2 / len(o)) ** 0.5
            z = (mn - mo) / se if se > 0 else 0.0
            zs.append(abs(z))
            rel = (mn - mo) / mo * 100 if mo else 0.0
            print(f"{name:24} {var:26} {k:36} old {mo:10.3f} new {mn:10.3f} {rel:+7.2f}%  sd {sd:8.3f}  z {z:+6.2f}",
                  flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    if zs:
        print(f"metrics {len(zs)}; |z| > 2: {sum(z > 2 for z in zs)}; |z| > 3: {sum(z > 3 for z in zs)}; "
              f"max |z| {max(zs):.2f}")


if __name__ == "__main__":
    main()
