"""One run's results: the summary as a dict, the tables as pandas DataFrames read from the
results directory's Parquet files (Arrow underneath: no CSV is parsed)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _native
from ._errors import check_seed, check_text, check_toml, error, to_json

__all__ = ["Result", "load", "load_variants", "run", "run_variants"]


def _frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Nested summary records as columns joined with '.' (``owd_ms.p99``). A field that is
    a table for some records and null for others (a probe's ``rtt_ms``) gives the table's
    columns alone, NaN where it was null, not a column of its own as well."""
    if not records:
        return pd.DataFrame()
    df = pd.json_normalize(records, sep=".")
    nested = [c for c in df.columns if df[c].isna().all() and any(o.startswith(c + ".") for o in df.columns)]
    return df.drop(columns=nested)


class Result:
    """The results of one run.

    Attributes:
        summary: ``summary.json`` as a dict (schema in docs/results.md).
        dir: the results directory, or ``None`` when the run was not kept on disk.
        arrow: the Parquet tables as ``pyarrow.Table`` (``snapshots_flows``,
            ``snapshots_queues``, ``distributions``) where the run wrote them.
        wall_s: wall-clock seconds the run took (``None`` for a loaded directory).
    """

    def __init__(self, summary: dict[str, Any], arrow: dict[str, pa.Table], dir: Path | None, wall_s: float | None = None):
        self.summary = summary
        self.arrow = arrow
        self.dir = dir
        self.wall_s = wall_s

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow: every field of ``summary["flows"]``, nested ones as
        ``owd_ms.p99``, ``media.frame_delay_ms.p99``... Numbers are int64 where every flow
        has the field and float64 where some flow lacks it (NaN there: a probe has no
        ``rtt_ms.count``); names, and fields null for every flow, are object."""
        return _frame(self.summary["flows"])

    @property
    def queues(self) -> pd.DataFrame:
        """One row per queue (``summary["queues"]``, sub-queues as ``subqueues.L.sojourn_ms.p99``)."""
        return _frame(self.summary["queues"])

    @property
    def classes(self) -> pd.DataFrame:
        """One row per traffic class ("L4S", "classic")."""
        return _frame(self.summary["classes"])

    def _table(self, name: str) -> pd.DataFrame:
        t = self.arrow.get(name)
        if t is None:
            raise error(f"this run has no {name} (snapshots off, or not written)")
        return t.to_pandas()

    @property
    def snapshots_flows(self) -> pd.DataFrame:
        """The per-flow time series (``snapshots-flows``): one row per flow and interval."""
        return self._table("snapshots_flows")

    @property
    def snapshots_queues(self) -> pd.DataFrame:
        """The per-queue time series (``snapshots-queues``)."""
        return self._table("snapshots_queues")

    @property
    def distributions(self) -> pd.DataFrame:
        """Delay distributions (``kind``, ``name``, ``value_ms``, ``cdf``)."""
        return self._table("distributions")

    def __repr__(self) -> str:
        sc = self.summary.get("scenario", {})
        return f"<l4s_lab.Result {sc.get('name')!r} seed={sc.get('seed')} flows={len(self.summary.get('flows', []))} dir={self.dir}>"


_TABLES = {
    "snapshots_flows": "snapshots-flows.parquet",
    "snapshots_queues": "snapshots-queues.parquet",
    "distributions": "distributions.parquet",
}


def load(dir: str | os.PathLike[str]) -> Result:
    """Open any results directory (``l4s run``'s, a campaign run's, or ``run(out=...)``'s)."""
    d = Path(dir)
    p = d / "summary.json"
    if not p.is_file() and (d / "variants.json").is_file():
        names = sorted(x.name for x in d.iterdir() if (x / "summary.json").is_file())
        raise error(
            f"{d} holds a set of variants (variants.json), one results directory each: load one of {', '.join(names) or 'them'}, such as {d / (names[0] if names else '<variant>')}, or use load_variants()",
            file=str(d / "variants.json"),
        )
    try:
        summary = json.loads(p.read_text())
    except OSError as e:
        raise error(f"{d}: not an l4s-lab results directory (cannot read summary.json: {e})", file=str(p)) from None
    except ValueError as e:
        raise error(f"{p}: not valid JSON: {e}", file=str(p)) from None
    arrow = {}
    for k, f in _TABLES.items():
        if (d / f).is_file():
            try:
                arrow[k] = pq.read_table(d / f)
            except (OSError, pa.ArrowException) as e:
                raise error(f"{d / f}: not a Parquet table l4s-lab can read ({e})", file=str(d / f)) from None
    return Result(summary, arrow, d)


def load_variants(dir: str | os.PathLike[str]) -> dict[str, Result]:
    """Open a set of variants (what ``run_variants(out=...)`` or ``l4s run`` of a file with
    ``[[variants]]`` wrote): one ``Result`` per variant its ``variants.json`` lists and
    that was written, by name."""
    d = Path(dir)
    m = d / "variants.json"
    try:
        manifest = json.loads(m.read_text())
        names = [str(n) for n in manifest["variants"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise error(f"{m}: not an l4s-lab set of variants ({e})", file=str(m)) from None
    return {n: load(d / n) for n in names if (d / n / "summary.json").is_file()}


def _set(set: Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> str:
    if set is not None and not isinstance(set, Mapping):
        raise error(f"set={set!r}: expected a dict of \"dotted.key\": value")
    keys: dict[str, Any] = dict(set or {})
    for k, v in overrides.items():
        key = k.replace("__", ".")
        if key in keys:
            raise error(f"{k}= and set[{key!r}] both set {key}: give it once")
        keys[key] = v
    check_toml(keys, "set")
    return to_json(keys, "set")


def _runs(name: str, out: Any, backend: str, args: tuple[Any, Any, Any], call: Any) -> dict[str, Result]:
    """Check the arguments every run takes (``args``: seed, duration, snapshots), then
    ``call(dest)`` the native run into ``out`` or a temporary folder, and read each run it
    reports back, by variant (``""`` without one); the temporary folder goes. ``args``
    also holds ``report`` and ``packets``, files kept only with ``out``."""
    if backend == "live":
        raise error(
            f"backend={backend!r}: {name}() runs the simulator in this process; run the live testbed with `l4s run --backend live` (it needs root)"
        )
    if backend != "sim":
        raise error(f"backend={backend!r}: expected 'sim' (the simulator)")
    seed, duration, snapshots, report, packets = args
    for kw, flag, file in [("report", report, "report.html"), ("packets", packets, "packets.parquet")]:
        if flag and out is None:
            raise error(f"{kw}={flag!r}: {file} is written into the results directory, which only out= keeps; give out= too")
    check_seed(seed)
    check_text(duration, "duration", "10s")
    check_text(snapshots, "snapshots", "100ms")
    if out is not None and os.fspath(out) == "":
        raise error("out='': expected a folder for the results, or None for none kept")
    keep = out is not None
    dest = Path(out) if keep else Path(tempfile.mkdtemp(prefix="l4s-run-")) / "run"
    try:
        res = {}
        for r in call(os.fspath(dest)):
            x = load(r["dir"])
            # Read everything now: a temporary folder goes away.
            x.arrow = {k: t.combine_chunks() for k, t in x.arrow.items()}
            x.wall_s = r["wall_s"]
            if not keep:
                x.dir = None
            res[r["variant"] or ""] = x
        return res
    finally:
        if not keep:
            shutil.rmtree(dest.parent, ignore_errors=True)


def run(
    scenario: str | os.PathLike[str],
    *,
    seed: int | None = None,
    backend: str = "sim",
    variant: str | None = None,
    duration: str | None = None,
    set: Mapping[str, Any] | None = None,
    out: str | os.PathLike[str] | None = None,
    snapshots: str | None = "100ms",
    report: bool = False,
    packets: bool = False,
    text: str | None = None,
    **overrides: Any,
) -> Result:
    """Run one scenario in this process and return its results.

    Args:
        scenario: the scenario file (its path also anchors trace files and names it in
            messages; with ``text``, only that).
        seed, duration: override the scenario's (``duration="10s"``).
        variant: for a file with ``[[variants]]``, which one (``run_variants`` runs all).
        set: scenario keys to change, as in ``[[variants]]``:
            ``{"topology.rate": "50Mbit", "flows.bulk.cc": "cubic"}``.
        **overrides: the same with ``__`` for ``.``: ``topology__rate="50Mbit"``.
        out: keep the results directory there (as ``l4s run --out``); by default the run
            is read into memory and its temporary directory removed.
        snapshots: the time-series interval, or ``None`` for none.
        report, packets: also write ``report.html`` / ``packets.parquet`` (with ``out``).
        backend: ``"sim"`` (the deterministic simulator). The live testbed runs from the
            ``l4s`` command (``l4s run --backend live``): it needs root and its own
            process.

    Raises:
        L4sError: bad input (with ``file``, ``line``, ``key``), or a failed run.
    """
    keys = _set(set, overrides)
    runs = _runs(
        "run",
        out,
        backend,
        (seed, duration, snapshots, report, packets),
        lambda dest: [
            _native.run(
                os.fspath(scenario),
                dest,
                text=text,
                set_json=keys,
                variant=variant,
                seed=seed,
                duration=duration,
                snapshots=snapshots,
                report=report,
                packets=packets,
            )
        ],
    )
    return runs[""]


def run_variants(
    scenario: str | os.PathLike[str],
    *,
    seed: int | None = None,
    backend: str = "sim",
    duration: str | None = None,
    set: Mapping[str, Any] | None = None,
    out: str | os.PathLike[str] | None = None,
    snapshots: str | None = "100ms",
    report: bool = False,
    packets: bool = False,
    text: str | None = None,
    **overrides: Any,
) -> dict[str, Result]:
    """Run every variant of a scenario file as ``l4s run`` does, one ``Result`` each, by
    name; a file without variants gives ``{"": result}``. ``set`` applies over each
    variant's own keys (as ``l4s run --set``). With ``out``, each variant goes to
    ``out/<variant>``, with ``variants.json`` and ``compare.html`` beside them; a folder
    that holds one run's results or files l4s-lab did not write is refused, as by
    ``l4s run``. Takes the arguments of :func:`run` but ``variant``."""
    if "variant" in overrides:
        raise error("variant=: run_variants() runs every variant; run(variant=...) runs one")
    keys = _set(set, overrides)
    return _runs(
        "run_variants",
        out,
        backend,
        (seed, duration, snapshots, report, packets),
        lambda dest: _native.run_set(
            os.fspath(scenario),
            dest,
            text=text,
            set_json=keys,
            seed=seed,
            duration=duration,
            snapshots=snapshots,
            report=report,
            packets=packets,
        )["runs"],
    )
