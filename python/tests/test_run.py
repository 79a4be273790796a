"""l4s_lab.run and load: the same results as the `l4s` command, errors that point at the
file, line and key, and DataFrames with the documented types."""

import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import l4s_lab
from conftest import ROOT, TINY


def golden() -> dict[str, str]:
    out = {}
    for line in (ROOT / "tests/golden/sim.sha256").read_text().splitlines():
        digest, name, file = line.split("  ", 1)[0], *line.split("  ", 1)[1].rsplit(" ", 1)
        out[f"{name} {file}"] = digest
    return out


def test_run_gives_the_summary_of_l4s_run_for_every_shipped_scenario(tmp_path, monkeypatch):
    # The golden digests are those of `l4s run` (the runner library) at each scenario's
    # seed, 1; run() must write the very same summary.json, byte for byte.
    monkeypatch.chdir(ROOT)
    want = golden()
    checked = 0
    for f in sorted((ROOT / "scenarios").glob("*.toml")):
        rel = f"scenarios/{f.name}"
        variants = l4s_lab._native.variant_names(rel) or [None]
        for v in variants:
            out = tmp_path / f"{f.stem}-{v}"
            r = l4s_lab.run(rel, variant=v, seed=1, out=out)
            name = f"{rel}{'' if v is None else f'[{v}]'}@seed=default summary.json"
            got = hashlib.sha256((out / "summary.json").read_bytes()).hexdigest()
            assert got == want[name], f"{name}: run() differs from l4s run"
            assert r.summary["scenario"]["seed"] == 1
            checked += 1
    # Every shipped scenario and variant, none left out.
    assert checked == sum(1 for k in want if k.endswith("@seed=default summary.json")), checked


def test_a_bad_scenario_raises_an_error_that_names_file_line_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(TINY.replace('cc = "prague"', 'cc = "bogus"'))
    with pytest.raises(l4s_lab.L4sError) as e:
        l4s_lab.run(p, variant="l4s")
    err = e.value
    assert err.file == str(p)
    assert err.line == 13
    assert err.key == "flows[0].cc"
    assert err.kind == "input" and err.exit_code == 2
    assert f"{p}:13: flows[0].cc:" in str(err)
    with pytest.raises(l4s_lab.L4sError, match="has variants"):
        l4s_lab.run(ROOT / "scenarios/cloud-gaming.toml")
    with pytest.raises(l4s_lab.L4sError, match="no such variant"):
        l4s_lab.run(ROOT / "scenarios/cloud-gaming.toml", variant="nope")
    with pytest.raises(l4s_lab.L4sError, match="cannot read the scenario file"):
        l4s_lab.run(tmp_path / "missing.toml")


def test_results_are_dataframes_with_the_documented_types(tiny):
    r = l4s_lab.run(tiny, variant="l4s", seed=3)
    assert r.dir is None, "nothing is left on disk without out="
    f = r.flows
    assert list(f["name"]) == ["bulk", "probe"]
    assert f["throughput_bps"].dtype == "float64"
    assert f["owd_ms.p99"].dtype == "float64"
    assert f["sent_packets"].dtype == "int64"
    assert pd.api.types.is_string_dtype(f["name"])
    # The bulk flow fills most of the 20 Mbit/s link.
    assert 14e6 < f.loc[0, "throughput_bps"] < 20e6
    q = r.queues
    assert q.loc[0, "rate_bps"] == 20_000_000
    assert q["utilization"].dtype == "float64"
    s = r.snapshots_flows
    assert s["time_s"].dtype == "float64"
    assert len(s) == 2 * 30, len(s)  # two flows, one row per 100 ms of 3 s
    d = r.distributions
    assert d["value_ms"].dtype == "float64" and d["cdf"].dtype == "float64"
    assert set(d["kind"]) >= {"owd"}
    assert r.classes["class"].tolist() == ["L4S"]


def test_overrides_set_keys_like_variants_and_load_reads_a_results_directory(tiny, tmp_path):
    r = l4s_lab.run(tiny, variant="classic", topology__rate="10Mbit", set={"topology.rtt": "40ms"}, out=tmp_path / "r")
    assert r.queues.loc[0, "rate_bps"] == 10_000_000
    assert r.flows.loc[0, "cc"] == "cubic"
    assert abs(r.flows.loc[0, "base_rtt_ms"] - 40.0) < 1e-9
    again = l4s_lab.load(tmp_path / "r")
    assert again.summary == r.summary
    # The report and the packet table, kept where out= says.
    l4s_lab.run(tiny, variant="l4s", duration="2s", snapshots=None, report=True, packets=True, out=tmp_path / "rp")
    assert (tmp_path / "rp" / "report.html").stat().st_size > 1000
    assert pq.read_table(tmp_path / "rp" / "packets.parquet").num_rows > 100
    assert again.snapshots_queues.shape == r.snapshots_queues.shape
    allv = l4s_lab.run_variants(tiny, duration="2s", snapshots=None)
    assert sorted(allv) == ["classic", "l4s"]
    assert allv["l4s"].summary["scenario"]["duration_s"] == 2.0
    with pytest.raises(l4s_lab.L4sError, match="snapshots off"):
        allv["l4s"].snapshots_flows
    with pytest.raises(l4s_lab.L4sError, match="not an l4s-lab results directory"):
        l4s_lab.load(tmp_path)
    with pytest.raises(l4s_lab.L4sError, match="backend"):
        l4s_lab.run(tiny, variant="l4s", backend="live")


def test_set_applies_over_a_variants_keys_and_run_variants_writes_a_set_as_l4s_run(tiny, tmp_path):
    # As `l4s run --variant classic --set flows.bulk.cc=reno`: the user's key wins over
    # the variant's own (classic sets cubic).
    r = l4s_lab.run(tiny, variant="classic", duration="2s", set={"flows.bulk.cc": "reno"})
    assert r.flows.loc[0, "cc"] == "reno"
    allv = l4s_lab.run_variants(tiny, duration="2s", snapshots=None, flows__bulk__cc="reno")
    assert [allv[v].flows.loc[0, "cc"] for v in ("l4s", "classic")] == ["reno", "reno"]
    # With out=: a folder per variant, the manifest and the comparison page.
    s = l4s_lab.run_variants(tiny, duration="2s", snapshots=None, out=tmp_path / "set")
    assert sorted(os.listdir(tmp_path / "set")) == ["classic", "compare.html", "l4s", "variants.json"]
    assert s["classic"].dir == tmp_path / "set" / "classic"
    # Refused, as by `l4s run`: one run's results directory, and a folder of a person's
    # own files; nothing is written there.
    l4s_lab.run(tiny, variant="l4s", duration="2s", snapshots=None, out=tmp_path / "one")
    before = sorted(os.listdir(tmp_path / "one"))
    with pytest.raises(l4s_lab.L4sError, match="holds the results of one run") as e:
        l4s_lab.run_variants(tiny, duration="2s", out=tmp_path / "one")
    assert (e.value.kind, e.value.exit_code) == ("input", 2)
    assert sorted(os.listdir(tmp_path / "one")) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.txt").write_text("mine")
    with pytest.raises(l4s_lab.L4sError, match=r"holds files l4s did not write \(a.txt\)"):
        l4s_lab.run_variants(tiny, duration="2s", out=mine)
    assert os.listdir(mine) == ["a.txt"]
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    with pytest.raises(l4s_lab.L4sError, match="dangling is a symbolic link to nothing; choose another folder with out="):
        l4s_lab.run_variants(tiny, duration="2s", out=tmp_path / "dangling")
    # A folder under such a link: the link is named as the reason.
    with pytest.raises(l4s_lab.L4sError, match=r"dangling \(on the way to .*sub\) is a symbolic link to nothing; choose another folder with out="):
        l4s_lab.run(tiny, variant="l4s", duration="2s", out=tmp_path / "dangling" / "sub")
    assert not (tmp_path / "nowhere").exists()
    e = l4s_lab.L4sError("made by hand")
    assert (e.kind, e.exit_code, e.file, e.line, e.key) == (None, None, None, None, None)
    # Told in the words of the call, not of the `l4s` command's flags.
    with pytest.raises(l4s_lab.L4sError, match="choose another folder with out=") as e:
        l4s_lab.run_variants(tiny, duration="2s", out=mine)
    assert "--" not in str(e.value)
    with pytest.raises(l4s_lab.L4sError, match=r"\(set by set\['topology.rat'\]\)") as e:
        l4s_lab.run(tiny, variant="l4s", duration="2s", set={"topology.rat": 5})


def test_arguments_of_the_wrong_kind_raise_an_l4s_error_that_names_them(tiny, tmp_path):
    cases = [
        (lambda: l4s_lab.run(tiny, variant="l4s", seed=-1), "seed=-1: expected a whole number"),
        (lambda: l4s_lab.run(tiny, variant="l4s", seed=True), "seed=True"),
        (lambda: l4s_lab.run(tiny, variant="l4s", duration=5), "duration=5: expected text with a unit"),
        (lambda: l4s_lab.run(tiny, variant="l4s", duration="5"), "duration='5': expected a duration .*the unit is missing"),
        (lambda: l4s_lab.run(tiny, variant="l4s", snapshots="0"), "snapshots='0': .*; snapshots=None turns the time series off"),
        (lambda: l4s_lab.run(tiny, variant="l4s", set={"topology.rate": float("nan")}), r"set\['topology.rate'\]: nan"),
        (lambda: l4s_lab.run(tiny, variant="l4s", set=["topology.rate"]), "set=.*expected a dict"),
        (lambda: l4s_lab.run(tiny, variant="l4s", set={"topology.rate": object()}), r"set\['topology.rate'\]: object <object .*> has no TOML form"),
        (lambda: l4s_lab.run(tiny, variant="l4s", set={"scenario.seed": 2**64}), r"set\['scenario.seed'\]: 18446744073709551616 is beyond TOML's integers"),
        (lambda: l4s_lab.run(tiny, variant="l4s", set={"topology.aqm": {"alpha": [1, float("inf")]}}), r"set\['topology.aqm'\].alpha\[1\]: inf is not a finite"),
        (lambda: l4s_lab.load(tmp_path / "none"), "not an l4s-lab results directory"),
        (lambda: l4s_lab.run(tiny, variant="l4s", backend="live"), "backend='live'"),
        (lambda: l4s_lab.run(tiny, variant="l4s", backend="x"), "backend='x': expected 'sim'"),
        (lambda: l4s_lab.run(tiny, variant="l4s", out=""), "out='': expected a folder"),
        (lambda: l4s_lab.run(tiny, variant="l4s", snapshots="500us"), "snapshots= 500us: the time series is written at most every 1ms"),
        (lambda: l4s_lab.run_variants(tiny, variant="l4s"), r"variant=: run_variants\(\) runs every variant"),
        (lambda: l4s_lab.run(tiny, variant="l4s", report=True), "report=True: report.html is written into the results directory, which only out= keeps"),
        (lambda: l4s_lab.run_variants(tiny, packets=True), "packets=True: packets.parquet is written"),
        (
            lambda: l4s_lab.run(tiny, variant="l4s", set={"topology.rate": "1Mbit"}, topology__rate="2Mbit"),
            r"topology__rate= and set\['topology.rate'\] both set topology.rate",
        ),
    ]
    for call, says in cases:
        with pytest.raises(l4s_lab.L4sError, match=says) as e:
            call()
        # Shaped as the native module's errors.
        assert (e.value.kind, e.value.exit_code, e.value.line, e.value.key) == ("input", 2, None, None), says


def test_ctrl_c_stops_a_run_that_keeps_what_it_ran(tiny, tmp_path):
    import signal
    import threading

    # An hour at 100 Mbit/s takes several seconds, far more than Ctrl-C comes after.
    long = tiny.read_text().replace('duration = "3s"', 'duration = "3600s"').replace('"20Mbit"', '"100Mbit"')
    p = tmp_path / "long.toml"
    p.write_text(long)
    t = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            l4s_lab.run(p, variant="l4s", snapshots=None, out=tmp_path / "r")
    finally:
        t.cancel()
    s = l4s_lab.load(tmp_path / "r").summary
    assert s["complete"] is False
    assert 0 < s["reached_s"] < 3600


def test_errors_pickle_and_paths_and_numpy_values_are_taken(tiny, tmp_path):
    import pickle

    np = pytest.importorskip("numpy")
    with pytest.raises(l4s_lab.L4sError) as e:
        l4s_lab.run(tmp_path / "missing.toml")
    # A process pool hands an error back pickled: it keeps its class and attributes.
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is l4s_lab.L4sError and type(back).__module__ == "l4s_lab._native"
    assert (back.kind, back.exit_code, back.key) == ("input", 2, None)
    # numpy numbers and paths are values like any other.
    r = l4s_lab.run(tiny, variant="l4s", duration="2s", snapshots=None, set={"topology.rate": "10Mbit", "flows.probe.pps": np.int64(10)})
    assert r.queues.loc[0, "rate_bps"] == 10_000_000
    # An empty folder takes a run's results.
    empty = tmp_path / "empty"
    empty.mkdir()
    l4s_lab.run(tiny, variant="l4s", duration="2s", snapshots=None, out=empty)
    assert (empty / "summary.json").is_file()


def test_a_set_of_variants_loads_as_a_dict_and_load_says_so(tiny, tmp_path):
    s = l4s_lab.run_variants(tiny, duration="2s", snapshots=None, out=tmp_path / "set")
    with pytest.raises(l4s_lab.L4sError, match=r"holds a set of variants .* load one of classic, l4s"):
        l4s_lab.load(tmp_path / "set")
    again = l4s_lab.load_variants(tmp_path / "set")
    assert sorted(again) == ["classic", "l4s"]
    assert again["classic"].summary == s["classic"].summary


def test_what_a_run_says_before_it_starts_is_a_warning_at_the_callers_line(tiny, tmp_path):
    # A duration that ends before a flow starts: `l4s run` says so on stderr, Python warns.
    late = tiny.read_text().replace('name = "probe"', 'name = "probe"\nstart = "2s"', 1)
    assert late != tiny.read_text()
    p = tmp_path / "late.toml"
    p.write_text(late)
    with pytest.warns(UserWarning, match=r"flow \"probe\" starts at 2s, and this run ends at 1.5s \(duration='1.5s'\)") as w:
        l4s_lab.run(p, variant="l4s", duration="1500ms", snapshots=None)
    assert w[0].filename == __file__
    # In a set of variants, each warning names its variant.
    with pytest.warns(UserWarning) as w:
        l4s_lab.run_variants(p, duration="1500ms", snapshots=None)
    assert [str(x.message).split(":")[0] for x in w] == ["variant l4s", "variant classic"]
    # Warnings made errors stop the run as Ctrl-C does, with the warning raised.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="it will send nothing"):
            l4s_lab.run(p, variant="l4s", duration="1500ms", snapshots=None, out=tmp_path / "o")
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["complete"] is False


def test_the_worked_example_of_docs_python_md_prints_what_the_page_shows(monkeypatch):
    # The page's figures are a run's output: they must be this build's.
    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs/python.md").read_text()
    call = 'r = l4s_lab.run("scenarios/dumbbell-dualpi2.toml", seed=1, duration="20s")'
    assert call in page
    block = page.split(call, 1)[1].split("\n\n", 1)[0].splitlines()
    shown_repr = block[1].split("# ", 1)[1].strip()
    rows = [line[1:].split() for line in block if line.startswith("# ") and line[2:].strip()[:1].isdigit()]
    assert len(rows) == 4, block
    r = l4s_lab.run("scenarios/dumbbell-dualpi2.toml", seed=1, duration="20s")
    assert repr(r) == shown_repr
    got = r.flows[["name", "throughput_bps", "owd_ms.p99"]]
    for (i, name, thr, p99), (_, g) in zip(rows, got.iterrows()):
        assert (g["name"], f"{g['throughput_bps']:.1f}", f"{g['owd_ms.p99']:.6f}") == (name, thr, p99), f"row {i}"
