"""Ray's own cost per campaign task on a local cluster: the wall time of empty tasks of one
CPU, per task and CPU, and of the campaign's task for a tiny run against the same run in
this process.

    python python/bench/ray_overhead.py [--cpus 2] [--tasks 400]
"""

import argparse
import time

import ray

from l4s_lab import _native
from l4s_lab.campaign import _ray_task, ray_overhead

ap = argparse.ArgumentParser()
ap.add_argument("--cpus", type=int, default=2)
ap.add_argument("--tasks", type=int, default=400)
a = ap.parse_args()

ray.init(num_cpus=a.cpus, include_dashboard=False, log_to_driver=False)
empty = ray_overhead(a.tasks)
print(f"empty task: {empty * 1e3:.2f} ms of Ray per task and CPU ({a.tasks} tasks on {a.cpus} CPUs; target <= 50 ms)")

# A tiny run (1 s at 10 Mbit/s) as a campaign task, against the same run here.
text = """[scenario]
name = "tiny"
duration = "1s"
[topology]
type = "dumbbell"
rate = "10Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }
[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"
"""
outputs = {"snapshot_interval_ns": 0, "report": False, "packets": False}
n = a.tasks // 4
t = time.perf_counter()
for _ in range(n):
    _native.run_to_files(text, "tiny.toml", outputs)
here = (time.perf_counter() - t) / n
task = ray.remote(num_cpus=1)(_ray_task)
ray.get([task.remote(text, "tiny.toml", outputs) for _ in range(4)])
t = time.perf_counter()
ray.get([task.remote(text, "tiny.toml", outputs) for _ in range(n)])
on_ray = (time.perf_counter() - t) / n * a.cpus
print(f"tiny run: {here * 1e3:.2f} ms in this process, {on_ray * 1e3:.2f} ms per task and CPU on Ray: Ray adds {(on_ray - here) * 1e3:.2f} ms per task")
ray.shutdown()
