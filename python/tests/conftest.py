"""Shared set-up of the Python tests: the repository root (shipped scenarios, golden
digests) and a small scenario that runs in milliseconds."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TINY = """[scenario]
name = "tiny"
duration = "3s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }
[[flows]]
name = "bulk"
type = "tcp"
cc = "prague"
[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"

[[variants]]
name = "l4s"

[[variants]]
name = "classic"
set = { "flows.bulk.cc" = "cubic", "flows.probe.ecn" = "not-ect" }
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def small_campaign(scenario: Path, seeds: int = 2) -> dict:
    """A campaign of 2 rates x 2 drawn RTTs x `seeds` seeds x 2 variants."""
    return {
        "campaign": {
            "name": "small",
            "scenario": str(scenario),
            "baseline": "classic",
            "seeds": seeds,
        },
        "sweep": {"topology.rate": ["10Mbit", "20Mbit"]},
        "sample": {"count": 2, "seed": 5, "params": {"topology.rtt": {"uniform": ["5ms", "40ms"]}}},
    }


def need(module: str):
    """Import a test dependency: skipped when it is missing, except under CI (`CI` set),
    where scripts/test.sh installs it and a missing one is a failure."""
    import importlib
    import os

    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
