"""The native module of l4s_lab (PyO3). Use the functions of ``l4s_lab`` and
``l4s_lab.campaign``; these are their building blocks."""

from typing import Any

__version__: str

class L4sError(Exception):
    """An error from l4s-lab.

    Attributes:
        kind: "input", "privilege", "setup", "run", "interrupted" or "output".
        exit_code: the exit status the ``l4s`` command gives for it (2 for bad input).
        file, line, key: where in a scenario or campaign file the problem is, or None.
    """

    kind: str
    exit_code: int
    file: str | None
    line: int | None
    key: str | None

def run(
    path: str,
    out: str,
    text: str | None = None,
    set_json: str = "{}",
    variant: str | None = None,
    seed: int | None = None,
    duration: str | None = None,
    snapshots: str | None = "100ms",
    report: bool = False,
    packets: bool = False,
) -> dict[str, Any]:
    """Run one scenario (variant, keys set) into the results directory ``out``; returns
    ``dir``, ``wall_s``, ``events``, ``bottleneck_packets``, ``complete``, ``report``."""

def run_set(
    path: str,
    out: str,
    text: str | None = None,
    set_json: str = "{}",
    seed: int | None = None,
    duration: str | None = None,
    snapshots: str | None = "100ms",
    report: bool = False,
    packets: bool = False,
) -> dict[str, Any]:
    """Run every variant of a scenario as ``l4s run`` does, into ``out``; returns ``runs``
    (a dict each, as ``run``'s, with ``variant``) and ``compare`` (the page, or None)."""

def variant_names(path: str, text: str | None = None) -> list[str]:
    """The ``[[variants]]`` of a scenario, by name."""

def toml_text(json: str) -> str:
    """TOML text of a table given as JSON."""

def campaign_run(
    path: str | None = None, text: str | None = None, out: str | None = None, jobs: int = 0, update: bool = False
) -> dict[str, Any]:
    """Run a campaign on this machine; returns its outcome (``dir``, ``done``, ``ran``,
    ``failed``, ``index``, ``pairs``, ...)."""

def campaign_status(dir: str) -> dict[str, Any]:
    """Where a campaign store stands."""

def campaign_tables(dir: str) -> tuple[str, str]:
    """Build a store's index.parquet and pairs.parquet again."""

def run_to_files(text: str, scenario_file: str, outputs: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Run one effective scenario and return its results directory's files."""

class CampaignSession:
    """A campaign opened for an executor that runs its missing runs elsewhere; holds the
    store's lock while it lives."""

    def __init__(self, path: str | None = None, text: str | None = None, out: str | None = None, update: bool = False) -> None: ...
    @property
    def dir(self) -> str: ...
    @property
    def scenario_file(self) -> str: ...
    def todo(self) -> list[dict[str, Any]]:
        """The runs the store lacks: ``index``, ``key``, ``seed``, ``variant``, ``pair``, ``text``."""
    def outputs(self) -> dict[str, Any]: ...
    def store_files(self, index: int, files: list[tuple[str, bytes]]) -> None: ...
    def fail(self, index: int, message: str) -> None: ...
    def finish(self, interrupted: bool = False) -> dict[str, Any]: ...

def stats(values: list[float]) -> dict[str, Any] | None:
    """n, mean, median, p90, q25, q75, iqr (numpy's linear percentiles) and sd (ddof = 1,
    None for one value) of a sample, NaN values left out; None without values."""

def make_error(message: str, kind: str = "input", file: str | None = None) -> L4sError: ...
def bootstrap_mean_ci(values: list[float], level: float = 0.95, resamples: int = 2000, seed: int = 1) -> tuple[float, float] | None:
    """Percentile-bootstrap confidence interval of the mean."""
