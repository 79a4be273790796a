"""Campaigns from Python on this machine: tables as DataFrames (pandas and polars), exact
pair differences, and errors that name the file, line and key."""

import math
import os
import sys
import warnings

import numpy as np
import polars as pl
import pytest

import l4s_lab
from l4s_lab import campaign
from conftest import small_campaign


def test_a_campaign_from_a_dict_gives_index_and_pairs(tiny, tmp_path):
    c = campaign.run(small_campaign(tiny), jobs=2, out=tmp_path / "store")
    o = c.outcome
    assert (o["unique_runs"], o["done"], o["ran"], o["failed"]) == (16, 16, 16, [])
    idx = c.index
    assert len(idx) == 16
    assert set(idx["variant"]) == {"l4s", "classic"}
    assert idx["topology.rate"].dtype == "float64"
    assert set(idx["topology.rate"]) == {10e6, 20e6}
    assert idx["topology.rtt"].between(0.005, 0.040).all()
    assert idx["flow.bulk.throughput_bps"].dtype == "float64"
    # Each pair: the same point and seed, both variants.
    for _, g in idx.groupby("pair"):
        assert sorted(g["variant"]) == ["classic", "l4s"]
        assert g["seed"].nunique() == 1 and g["point"].nunique() == 1
    # pairs.parquet: value - baseline_value, exactly, as in the two runs' summaries.
    p = c.pairs
    m = p[p.metric == "flow.probe.owd_p99_ms"]
    assert len(m) == 8
    for _, row in m.iterrows():
        runs = idx[idx.pair == row.pair].set_index("variant")
        l4s = l4s_lab.load(c.run_dir(runs.loc["l4s", "run"])).summary["flows"][1]["owd_ms"]["p99"]
        cls = l4s_lab.load(c.run_dir(runs.loc["classic", "run"])).summary["flows"][1]["owd_ms"]["p99"]
        assert (row.value, row.baseline_value, row.difference) == (l4s, cls, l4s - cls)
    # An L4S probe beside Prague sees less delay than a classic one beside CUBIC.
    assert (m.difference < 0).mean() >= 0.75, m.difference.tolist()
    # polars reads the same tables as they are.
    assert pl.read_parquet(c.dir / "index.parquet").height == 16
    assert pl.read_parquet(c.dir / "pairs.parquet").height == len(p)
    st = c.status()
    assert (st["done"], st["missing"], st["active"]) == (16, 0, False)
    # Started again: nothing runs twice.
    again = campaign.run(small_campaign(tiny), out=tmp_path / "store")
    assert (again.outcome["ran"], again.outcome["already_done"]) == (0, 16)


def test_bad_campaigns_raise_errors_that_name_file_line_and_key(tiny, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(
        f'[campaign]\nname = "x"\nscenario = "{tiny}"\nbaseline = "classic"\n\n[sweep]\n"topology.rat" = ["10Mbit"]\n'
    )
    with pytest.raises(l4s_lab.L4sError) as e:
        campaign.run(f, out=tmp_path / "store")
    assert (e.value.file, e.value.line, e.value.key) == (str(f), 7, 'sweep."topology.rat"')
    assert "unknown field `rat`" in str(e.value)
    assert not (tmp_path / "store").exists()
    bad = small_campaign(tiny)
    bad["sample"]["params"]["topology.rtt"] = {"uniform": ["40ms", "5ms"]}
    with pytest.raises(l4s_lab.L4sError, match="is empty"):
        campaign.run(bad, out=tmp_path / "store")
    with pytest.raises(l4s_lab.L4sError, match="executor"):
        campaign.run(small_campaign(tiny), executor="spark")


def test_summary_statistics_match_numpy():
    rng = np.random.default_rng(7)
    for n in (2, 5, 31, 200):
        x = rng.normal(3.0, 2.0, n)
        s = l4s_lab._native.stats(x.tolist())
        assert s["n"] == n
        assert math.isclose(s["mean"], np.mean(x), rel_tol=1e-12)
        assert math.isclose(s["median"], np.median(x), rel_tol=1e-12)
        assert math.isclose(s["p90"], np.percentile(x, 90), rel_tol=1e-12)
        q75, q25 = np.percentile(x, [75, 25])
        assert math.isclose(s["iqr"], q75 - q25, rel_tol=1e-12)
        assert math.isclose(s["sd"], np.std(x, ddof=1), rel_tol=1e-12)


def test_the_example_script_runs_a_campaign_and_draws_its_plot(tiny, tmp_path):
    import runpy
    import sys

    from conftest import need

    need("matplotlib")
    f = tmp_path / "c.toml"
    f.write_text(
        f'[campaign]\nname = "ex"\nscenario = "{tiny}"\nbaseline = "classic"\nseeds = 3\n'
        '[sweep]\n"topology.rtt" = ["10ms", "40ms"]\n'
        '[[groups]]\nname = "a"\n[[groups]]\nname = "b"\nset = { "flows.bulk.start" = "0.5s" }\n'
    )
    png = tmp_path / "p.png"
    argv = sys.argv
    sys.argv = ["campaign_plot.py", str(f), "--out", str(tmp_path / "store"), "--png", str(png)]
    try:
        from conftest import ROOT

        runpy.run_path(str(ROOT / "python/examples/campaign_plot.py"), run_name="__main__")
    finally:
        sys.argv = argv
    assert png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_console_command_runs_a_campaign_and_says_where_it_stands(tiny, tmp_path, capsys):
    from l4s_lab import cli

    f = tmp_path / "c.toml"
    f.write_text(
        f'[campaign]\nname = "cli"\nscenario = "{tiny}"\nbaseline = "classic"\nseeds = 2\n'
        '[sweep]\n"topology.rtt" = ["10ms", "40ms"]\n'
    )
    store = tmp_path / "store"
    assert cli.main(["run", str(f), "--out", str(store), "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert "8 of 8 runs done (8 now)" in out and str(store) in out
    assert cli.main(["status", str(store)]) == 0
    assert "8 of 8 runs done, 0 running, 0 failed, 0 missing" in capsys.readouterr().out
    # A reader that went away ends the command quietly, with the status SIGPIPE gives.
    import subprocess

    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "l4s_lab.cli", "status", str(store)], stdout=w, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    assert (p.returncode, p.stderr) == (141, ""), p.stderr
    # Bad input: exit status 2 and the file, line and key.
    f.write_text(f.read_text().replace("topology.rtt", "topology.rtx"))
    assert cli.main(["run", str(f), "--out", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert f"{f}:7: sweep.\"topology.rtx\"" in err


def test_campaign_input_that_crashed_or_misled_is_refused_at_its_key(tiny, tmp_path):
    from l4s_lab import campaign

    def refused(c: dict, key: str, says: str, **kw) -> None:
        with pytest.raises(l4s_lab.L4sError, match=says) as e:
            campaign.run(c, out=tmp_path / "store", **kw)
        assert e.value.key == key and e.value.kind == "input", (e.value.key, str(e.value))
        assert not (tmp_path / "store").exists()

    c = small_campaign(tiny)
    refused({**c, "campaign": {**c["campaign"], "variants": []}}, "campaign.variants", "the list is empty")
    refused({**c, "sample": {**c["sample"], "count": 10**9}}, "sample.count", "expected 1 to 10000000 draws")
    ints = {"flows.bulk.count": {"uniform": [-(2**63), 2**63 - 1]}}
    refused({**c, "sample": {**c["sample"], "params": ints}}, 'sample.params."flows.bulk.count"', "integer bounds")
    refused({**c, "campaign": {**c["campaign"], "variants": ["l4s", "nosuch"]}}, "campaign.variants", 'has no variant "nosuch"')
    # Arguments of the wrong kind, and an executor that does not exist.
    for kw, says in [({"jobs": -1}, "jobs=-1"), ({"executor": "dask"}, "executor='dask'")]:
        with pytest.raises(l4s_lab.L4sError, match=says) as e:
            campaign.run(c, out=tmp_path / "store", **kw)
        assert (e.value.kind, e.value.exit_code, e.value.key) == ("input", 2, None)
    # A store given as a link to nothing: said so, in the call's words.
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    with pytest.raises(l4s_lab.L4sError, match="dangling is a symbolic link to nothing; choose another folder with out="):
        campaign.run(c, out=tmp_path / "dangling")
    assert not (tmp_path / "nowhere").exists()


def test_a_stores_tables_before_they_are_written_raise_an_l4s_error(tiny, tmp_path):
    from l4s_lab import campaign

    c = campaign.run(small_campaign(tiny, seeds=1), out=tmp_path / "store", jobs=1)
    (tmp_path / "store" / "index.parquet").unlink()
    (tmp_path / "store" / "pairs.parquet").write_bytes(b"not parquet")
    with pytest.raises(l4s_lab.L4sError, match="index.parquet: not written yet") as e:
        c.index
    assert e.value.file.endswith("index.parquet")
    with pytest.raises(l4s_lab.L4sError, match="pairs.parquet: not a table l4s-lab can read"):
        c.pairs


def test_a_campaign_dict_may_hold_paths(tiny, tmp_path):
    from pathlib import Path

    c = small_campaign(tiny, seeds=1)
    c["campaign"]["scenario"] = Path(c["campaign"]["scenario"])
    c["sweep"] = {"topology.rate": ["10Mbit"]}
    c["sample"]["count"] = 1
    out = campaign.run(c, out=tmp_path / "store", jobs=1)
    assert len(out.index) == 2
    with pytest.raises(l4s_lab.L4sError) as e:
        campaign.run(tmp_path / "nope.toml")
    assert e.value.key is None and e.value.kind == "input"


def test_a_campaigns_metrics_that_match_nothing_are_a_warning(tiny, tmp_path):
    c = small_campaign(tiny, seeds=1)
    c["sweep"] = {"topology.rate": ["10Mbit"]}
    c["sample"]["count"] = 1
    c["campaign"]["metrics"] = ["flows.nope.*"]
    with pytest.warns(UserWarning, match=r"No completed run has a metric matching flows\.nope\.\*") as w:
        out = campaign.run(c, out=tmp_path / "store", jobs=1)
    assert len(w) == 1 and w[0].filename == __file__
    assert len(out.index) == 2
    assert out.outcome["notes"] == [str(w[0].message)]
    # Metrics that match: no warning, no note.
    c["campaign"]["metrics"] = ["flow.*.owd_p99_ms"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = campaign.run(c, out=tmp_path / "store", jobs=1, update=True)
    assert again.outcome["notes"] == []
    # Another plan for the store: the runs of the first stay, counted apart.
    c["sweep"] = {"topology.rate": ["20Mbit"]}
    other = campaign.run(c, out=tmp_path / "store", jobs=1, update=True)
    assert len(other.index) == 2
    st = other.status()
    assert (st["done"], st["other_runs"]) == (2, 2) and st["other_bytes"] > 2000
