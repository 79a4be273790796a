"""``l4s-campaign``: run a campaign from the Python package, on this machine or on a Ray
cluster (``l4s-campaign run FILE --ray ADDRESS``)."""

from __future__ import annotations

import argparse
import os
import sys

from . import campaign
from ._native import L4sError


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`l4s-campaign status DIR | head`): no error of ours. What
        # is still buffered goes nowhere, so that Python's flush at exit does not raise
        # again, and the status is the shell's for a process that SIGPIPE ended.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: list[str] | None) -> int:
    p = argparse.ArgumentParser(prog="l4s-campaign", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a campaign file")
    r.add_argument("file")
    r.add_argument("--ray", metavar="ADDRESS", help="run on this Ray cluster ('auto' for the local one)")
    r.add_argument("--jobs", "-j", type=int, default=None, help="runs at once on this machine (default: every core)")
    r.add_argument("--out", help="the store (default results/campaigns/<name>)")
    r.add_argument("--update", action="store_true", help="make this file's plan the store's, keeping shared runs")
    s = sub.add_parser("status", help="what a store holds")
    s.add_argument("dir")
    a = p.parse_args(argv)
    try:
        if a.cmd == "status":
            st = campaign.status(a.dir)
            print(
                f"campaign {st['name']} in {st['dir']}: {st['done']} of {st['unique_runs']} runs done, "
                f"{st['running']} running, {len(st['failed'])} failed, {st['missing']} missing"
            )
            return 0
        if a.ray:
            c = campaign.run(a.file, executor="ray", ray_address=a.ray, out=a.out, update=a.update)
        else:
            c = campaign.run(a.file, jobs=a.jobs, out=a.out, update=a.update)
    except L4sError as e:
        print(f"error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 1) or 1
    except KeyboardInterrupt:
        print("interrupted: run the same command again to run the rest", file=sys.stderr)
        return 130
    o = c.outcome or {}
    print(f"{o.get('done')} of {o.get('unique_runs')} runs done ({o.get('ran')} now) in {o.get('wall_s', 0):.1f} s; store {c.dir}")
    print(f"index: {o.get('index')}\npairs: {o.get('pairs')}")
    if o.get("failed"):
        print(f"error: {len(o['failed'])} runs failed (why: {c.dir}/failed/)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
