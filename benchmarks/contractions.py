"""Contractions inside whole training steps against the 1024x1024 float32 matmul, in GFLOPS, timed kernel by kernel
(TRACEGRAD_DEBUG=2) in one process, the matmul's calls interleaved with the steps' so that machine drift cancels.
A contraction is a kernel summing a product (matmuls, attention scores and their gradients, convolutions, weight
gradients) of more than 4 MFLOP. Each row: the matmul's median, how many of the step's contractions reach 60% of
it, and the slowest ones (medians over the steps), each with its speed alone: the same kernel run by itself on
inputs that stay in the cache (lower.search.time_alone). Where alone is much faster, the step's kernel waits on
operands that come from memory (written long before, in the forward pass), not on its register blocks. Not a test:
nothing here asserts.

  python3 benchmarks/contractions.py [--steps N] [--only NAME]
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BAR, MIN_FLOPS = 0.6, 4e6

CHILD = """
import sys; sys.path.insert(0, {here!r})
import numpy as np
import models, tracegrad as tg
from tracegrad.lower.render_c import is_product
from tracegrad.lower.search import time_alone
step, state, batch = models.WORKLOADS[{name!r}][1](models.TG)
jstep = tg.jit(step)
found = [k for k in jstep.lower(state, *batch).compile().kernels if getattr(k, "reduce", None) is not None
         and is_product(k.reduce.value) and k.cost()[0] > {min_flops}]
a = tg.numpy.asarray(np.random.default_rng(0).normal(size=(1024, 1024)).astype(np.float32))
mm = tg.jit(lambda x, y: x @ y)
for _ in range(3): mm(a, a).block_until_ready(); models._block(models.TG, jstep(state, *batch))
for k in found:
  print("CONTRACTION", k.name)
  times = [t for t in (time_alone(k, tg.local_devices(backend="cpu")[0]) for _ in range(2)) if t is not None]
  if times: print("ALONE", k.name, k.cost()[0] / min(times) / 1e9)
for _ in range({steps}):
  print("MATMUL", flush=True); mm(a, a).block_until_ready()
  print("STEP", flush=True); models._block(models.TG, jstep(state, *batch))
"""


def measure(name: str, steps: int) -> tuple[float, dict[str, float], dict[str, float]]:
  """The matmul's median GFLOPS, each contraction's in the step of workload `name`, and each one's alone."""
  env = {**os.environ, "TRACEGRAD_DEBUG": "2", "TRACEGRAD_TIERED": "0",
         "TRACEGRAD_CACHE_DIR": tempfile.mkdtemp(prefix="tracegrad-bench-")}
  code = CHILD.format(here=HERE, name=name, steps=steps, min_flops=MIN_FLOPS)
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
  contractions, alone, part, mm, per = set(), {}, None, [], collections.defaultdict(list)
  for line in out.splitlines():
    if line.startswith("CONTRACTION"): contractions.add(line.split()[1])
    elif line.startswith("ALONE"): alone[line.split()[1]] = float(line.split()[2])
    elif line in ("MATMUL", "STEP"): part = line
    elif part and (m := re.match(r"tracegrad:\s+(\S+): [\d.]+ us, ([\d.]+) GFLOPS", line)):
      if part == "MATMUL": mm.append(float(m.group(2)))
      elif m.group(1) in contractions: per[m.group(1)].append(float(m.group(2)))
  return statistics.median(mm), {k: statistics.median(v) for k, v in per.items()}, alone


def main():
  import models
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--steps", type=int, default=30, help="steps (and matmuls) timed")
  ap.add_argument("--only", choices=list(models.WORKLOADS), help="one workload (default: cnn and gpt)")
  ap.add_argument("--show", type=int, default=5, help="how many of the slowest contractions to list")
  a = ap.parse_args()
  for name in [a.only] if a.only else ["cnn", "gpt"]:
    mm, per, alone = measure(name, a.steps)
    low = sorted(per.items(), key=lambda kv: kv[1])
    below = sum(g < BAR * mm for g in per.values())
    print(f"{name:5s} matmul 1024^2 {mm:6.1f} GFLOPS, bar {BAR * mm:6.1f}: {len(per) - below} of {len(per)} "
          f"contractions reach it; slowest: " + ", ".join(
            f"{k} {g:.0f} ({g / mm:.0%}" + (f"; alone {alone[k]:.0f}, {alone[k] / mm:.0%})" if k in alone else ")")
            for k, g in low[:a.show]), flush=True)


if __name__ == "__main__":
  sys.path.insert(0, HERE)
  main()
