"""Campaigns from Python: many paired runs of one scenario over swept and sampled
parameters, kept in a resumable store, on this machine or on a Ray cluster.

>>> from l4s_lab import campaign
>>> c = campaign.run("campaigns/field-study.toml", jobs=2)          # doctest: +SKIP
>>> c.pairs.query("metric == 'flow.probe.owd_p99_ms'").difference.describe()
>>> c = campaign.run("campaigns/field-study.toml", executor="ray")   # the same, on Ray

The campaign file format and the store are documented in docs/campaigns.md; the
campaign may also be given as a dict of the same tables (its relative paths then count
from the working directory).
"""

from __future__ import annotations

import os
import socket
import warnings
import time
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _native
from ._errors import check_count, check_toml, error, to_json

__all__ = ["Campaign", "load", "run", "status"]


class Campaign:
    """A campaign store and its tables.

    Attributes:
        dir: the store.
        outcome: what the last run of the campaign did (runs done now and before, failed
            runs with why, wall time, ``notes``: what its page notes, each also given as a
            warning), or ``None`` for a loaded store.
    """

    def __init__(self, dir: str | os.PathLike[str], outcome: dict[str, Any] | None = None):
        self.dir = Path(dir)
        self.outcome = outcome

    @property
    def index(self) -> pd.DataFrame:
        """``index.parquet``: one row per completed run, its labels (``run``, ``point``,
        ``pair``, ``seed``, ``variant``, ``order``, ``group``, ``sample``), its parameters
        (float64 in bit/s, s or bytes where every value has such a unit, else str) and
        the key metrics of every flow, queue and class (float64)."""
        return self._table("index.parquet")

    @property
    def pairs(self) -> pd.DataFrame:
        """``pairs.parquet``: one row per pair and metric: ``value`` of ``variant``,
        ``baseline_value`` of the baseline variant in the same pair, and
        ``difference = value - baseline_value``."""
        return self._table("pairs.parquet")

    def _table(self, name: str) -> pd.DataFrame:
        p = self.dir / name
        if not p.is_file():
            raise error(f"{p}: not written yet (a campaign's tables are written when its run ends; write_tables() writes them now)", file=str(p))
        try:
            return pq.read_table(p).to_pandas()
        except (OSError, pa.ArrowException) as e:
            raise error(f"{p}: not a table l4s-lab can read ({e}); write_tables() writes it again", file=str(p)) from None

    def write_tables(self) -> None:
        """Write ``index.parquet`` and ``pairs.parquet`` again from the runs in the store
        (as ``l4s campaign tables``)."""
        _native.campaign_tables(os.fspath(self.dir))

    def status(self) -> dict[str, Any]:
        """What the store holds: runs done, running, failed and missing."""
        return status(self.dir)

    def run_dir(self, key: str) -> Path:
        """The results directory of the run with this key (``index.run``)."""
        return self.dir / "runs" / key[:2] / key

    def __repr__(self) -> str:
        return f"<l4s_lab.campaign.Campaign {self.dir}>"


def load(dir: str | os.PathLike[str]) -> Campaign:
    """Open a campaign store."""
    status(dir)
    return Campaign(dir)


def status(dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Where a store stands (as ``l4s campaign status``)."""
    return _native.campaign_status(os.fspath(dir))


def _source(campaign: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[str | None, str | None]:
    if isinstance(campaign, Mapping):
        check_toml(campaign, "")
        return None, _native.toml_text(to_json(campaign, "campaign"))
    return os.fspath(campaign), None


def run(
    campaign: str | os.PathLike[str] | Mapping[str, Any],
    *,
    executor: str = "local",
    jobs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    update: bool = False,
    ray_address: str | None = None,
    max_retries: int = 3,
) -> Campaign:
    """Run a campaign: only the runs its store lacks, then its tables.

    Args:
        campaign: a campaign file, or the same tables as a dict.
        executor: ``"local"`` (threads on this machine, ``jobs`` at once, every core by
            default) or ``"ray"`` (one task of one CPU per run on a Ray cluster, retried
            up to ``max_retries`` times when a worker dies; the driver writes the store).
        out: the store (default ``results/campaigns/<name>``).
        update: the store holds another campaign's plan: make this one its plan, keeping
            the runs both share.
        ray_address: the cluster (``"HOST:PORT"`` or ``"auto"``); default: the one this
            process is connected to, or a new local one.

    Raises:
        L4sError: bad input (with ``file``, ``line``, ``key``), a store that is not ours or
            is in use, a Ray address that does not answer.
        KeyboardInterrupt: after Ctrl-C (local): the runs under way finish and the tables
            are written first; run it again to run the rest.
    """
    check_count(jobs, "jobs")
    check_count(max_retries, "max_retries")
    path, text = _source(campaign)
    o = None if out is None else os.fspath(out)
    if executor == "local":
        res = _native.campaign_run(path=path, text=text, out=o, jobs=jobs or 0, update=update)
        return _done(res)
    if executor == "ray":
        return _run_ray(path, text, o, update, ray_address, max_retries)
    raise error(f"executor={executor!r}: expected 'local' or 'ray'")


def _check_address(address: str, timeout: float = 10.0) -> None:
    """Refuse a Ray address that does not answer, within the timeout, before anything is
    written (ray.init itself may wait for minutes)."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1] if isinstance(address, str) else ""
    host, _, port = hostport.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise error(f"ray_address={address!r}: expected 'HOST:PORT' (a port from 1 to 65535), 'ray://HOST:PORT' or 'auto'")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise error(f"ray_address={address!r}: the Ray cluster does not answer ({e})", kind="setup") from None


def _run_ray(path: str | None, text: str | None, out: str | None, update: bool, address: str | None, max_retries: int) -> Campaign:
    try:
        import ray
    except ImportError:
        raise error("executor='ray' needs Ray: pip install 'l4s-lab[ray]'", kind="setup") from None
    if not ray.is_initialized():
        try:
            if address is not None:
                _check_address(address)
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(log_to_driver=False, include_dashboard=False)
        except ConnectionError as e:
            raise error(f"ray_address={address!r}: cannot connect to the Ray cluster ({e})", kind="setup") from None
    # The plan is validated and the store locked only once the cluster answers.
    session = _native.CampaignSession(path=path, text=text, out=out, update=update)
    try:
        outputs = session.outputs()
        scenario_file = session.scenario_file
        task = ray.remote(num_cpus=1, max_retries=max_retries)(_ray_task)
        pending = {}
        for r in session.todo():
            ref = task.remote(r["text"], scenario_file, outputs)
            pending[ref] = r
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                r = pending.pop(ref)
                try:
                    files = ray.get(ref)
                except Exception as e:  # a run that failed, or a worker lost more often than max_retries
                    session.fail(r["index"], f"{type(e).__name__}: {e}")
                    continue
                session.store_files(r["index"], files)
        res = session.finish()
    except BaseException:
        session.finish(interrupted=True)
        raise
    return _done(res)


def _done(res: dict[str, Any]) -> Campaign:
    """The campaign a run ended with, its page's notes (runs left out, metrics of the
    campaign that match nothing) said as warnings."""
    for n in res.get("notes", []):
        warnings.warn(n, stacklevel=3)
    return Campaign(res["dir"], res)


def _ray_task(text: str, scenario_file: str, outputs: dict[str, Any]) -> list[tuple[str, bytes]]:
    """One run on a Ray worker: the files of its results directory."""
    from l4s_lab import _native as native

    return native.run_to_files(text, scenario_file, outputs)


def ray_overhead(n: int = 200) -> float:
    """Seconds of Ray's own work per task on the connected cluster: the wall time of ``n``
    empty tasks of one CPU, per task, divided by the CPUs (a benchmark helper)."""
    import ray

    @ray.remote(num_cpus=1)
    def noop() -> None:
        return None

    ray.get([noop.remote() for _ in range(4)])
    t = time.perf_counter()
    ray.get([noop.remote() for _ in range(n)])
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return (time.perf_counter() - t) / n * cpus
