"""l4s-lab from Python: run L4S scenarios in-process, read results as pandas DataFrames,
and run campaigns of paired runs on this machine or on a Ray cluster.

>>> import l4s_lab
>>> r = l4s_lab.run("scenarios/dumbbell-dualpi2.toml", seed=1, duration="20s")
>>> r.flows[["name", "throughput_bps", "owd_ms.p99"]]
>>> r.snapshots_flows.plot(x="time_s", y="cwnd_bytes")          # doctest: +SKIP

Every error is an :class:`L4sError` with its ``kind`` and ``exit_code``, carrying
``file``, ``line`` and ``key`` when the problem is in a scenario or campaign file.
"""

from ._native import L4sError, __version__
from .results import Result, load, load_variants, run, run_variants
from . import campaign

__all__ = ["L4sError", "Result", "campaign", "load", "load_variants", "run", "run_variants", "__version__"]
