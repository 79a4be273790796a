"""Campaigns on a Ray cluster started by the test: the same index as the local executor,
no run lost or done twice when a worker dies, and a clear error for an address that does
not answer."""

import os
import signal
import threading
import time

import pytest

import l4s_lab
from l4s_lab import campaign
from conftest import need, small_campaign

ray = need("ray")
psutil = need("psutil")


def test_a_ray_address_that_does_not_answer_is_refused_quickly(tiny, tmp_path):
    assert not ray.is_initialized()
    t = time.monotonic()
    with pytest.raises(l4s_lab.L4sError, match="does not answer"):
        campaign.run(small_campaign(tiny), executor="ray", ray_address="127.0.0.1:9", out=tmp_path / "store")
    assert time.monotonic() - t < 30
    assert not (tmp_path / "store").exists(), "nothing is written"
    # An address that is not one is said to be bad input, with what is expected.
    for bad in ["nonsense", "host:port", "127.0.0.1:70000"]:
        with pytest.raises(l4s_lab.L4sError, match=r"expected 'HOST:PORT' \(a port from 1 to 65535\)") as e:
            campaign.run(small_campaign(tiny), executor="ray", ray_address=bad, out=tmp_path / "store")
        assert (e.value.kind, e.value.exit_code) == ("input", 2)
    assert not (tmp_path / "store").exists()


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def metrics(c):
    idx = c.index.sort_values("run").reset_index(drop=True)
    return idx


def test_ray_gives_the_index_of_the_local_executor(cluster, tiny, tmp_path):
    spec = small_campaign(tiny, seeds=3)  # 2 rates x 2 homes x 3 seeds x 2 variants = 24 runs
    local = campaign.run(spec, out=tmp_path / "local", jobs=2)
    remote = campaign.run(spec, executor="ray", out=tmp_path / "ray")
    assert remote.outcome["failed"] == []
    assert remote.outcome["done"] == remote.outcome["unique_runs"] == 24
    a, b = metrics(local), metrics(remote)
    assert a.equals(b), "the Ray campaign's index differs from the local one"
    # The summaries themselves are the same bytes.
    for key in a["run"]:
        assert (local.run_dir(key) / "summary.json").read_bytes() == (remote.run_dir(key) / "summary.json").read_bytes()


def test_a_worker_killed_mid_campaign_loses_no_run_and_duplicates_none(cluster, tiny, tmp_path):
    # Longer runs, so that a task is under way when the killer looks.
    (tiny.parent / "long.toml").write_text(tiny.read_text().replace('duration = "3s"', 'duration = "20s"'))
    spec = small_campaign(tiny.parent / "long.toml", seeds=3)
    spec["sweep"]["topology.rate"] = ["50Mbit", "100Mbit"]
    killed = []

    def killer():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for p in psutil.process_iter(["pid", "cmdline"]):
                cmd = " ".join(p.info.get("cmdline") or [])
                if cmd.startswith("ray::_ray_task"):
                    os.kill(p.info["pid"], signal.SIGKILL)
                    killed.append(p.info["pid"])
                    return
            time.sleep(0.005)

    t = threading.Thread(target=killer)
    t.start()
    c = campaign.run(spec, executor="ray", out=tmp_path / "store")
    t.join()
    assert killed, "no running task was found to kill"
    o = c.outcome
    assert o["failed"] == [], o["failed"]
    assert o["done"] == o["unique_runs"] == 24
    runs = sorted(p.name for p in (tmp_path / "store" / "runs").glob("*/*") if not p.name.startswith("."))
    assert len(runs) == 24 and len(set(runs)) == 24
    assert len(c.index) == 24 and c.index["run"].is_unique
    st = c.status()
    assert (st["done"], st["missing"], st["running"]) == (24, 0, 0)
