"""A notebook-style example: run (or resume) a campaign, load its tables with pandas, and
draw the ECDF of the paired difference of the probe's 99th-percentile one-way delay,
one line per time of day.

    python python/examples/campaign_plot.py [CAMPAIGN] [--out DIR] [--png FILE]

With no arguments it runs the shipped field-study campaign (a few minutes on 2 cores;
started again, it only loads the store) and writes field-study-p99.png.
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from l4s_lab import campaign

ROOT = Path(__file__).resolve().parents[2]

ap = argparse.ArgumentParser()
ap.add_argument("campaign", nargs="?", default=str(ROOT / "campaigns/field-study.toml"))
ap.add_argument("--out", default=None, help="the store (default results/campaigns/<name>)")
ap.add_argument("--png", default="field-study-p99.png")
ap.add_argument("--metric", default="flow.probe.owd_p99_ms")
a = ap.parse_args()

# %% Run the campaign (only what the store lacks) and load its pairs.
c = campaign.run(a.campaign, out=a.out)
pairs = c.pairs
print(f"{len(c.index)} runs, {pairs.pair.nunique()} pairs in {c.dir}")

# %% The paired difference (L4S minus classic) of the chosen metric, per group.
d = pairs[pairs.metric == a.metric]
print(d.groupby("group").difference.describe())

# %% ECDF per group.
fig, ax = plt.subplots(figsize=(7, 4))
for group, g in d.groupby("group", dropna=False):
    x = np.sort(g.difference.to_numpy())
    y = np.arange(1, len(x) + 1) / len(x)
    improved = (x < 0).mean()
    ax.step(x, y, where="post", label=f"{group} ({improved:.0%} of pairs improved)")
ax.axvline(0, color="grey", lw=0.8)
ax.set_xlabel(f"{a.metric}: variant minus baseline")
ax.set_ylabel("fraction of pairs")
ax.set_title(f"{c.dir.name}: paired differences")
ax.legend()
fig.tight_layout()
fig.savefig(a.png, dpi=120)
print(f"plot: {a.png}")
