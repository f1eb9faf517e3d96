"""Kernel speed: matmuls, weight gradients (x.T @ dy) and a conv2d layer in GFLOPS against numpy (OpenBLAS) in one process, with the hand-coded
kernels and with kernel search (and how long the search took), and the MLP training step with search against JAX
when it is installed; each row also gives the median ratio of the searched function's time to the hand-coded one's,
called in turn (below 1: search won). Not a test: nothing here asserts.

  python3 benchmarks/kernels.py [--quick] [--beam N]

The search runs against an empty cache of its own, so its time is the time a first search takes on this machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import as_avx2

as_avx2.apply()   # before numpy loads

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp
from run import _have, _timeit, jax_mlp_step, mlp_problem

ROUNDS = 5   # each implementation timed in turn this many times, each kept at its best: a slow spell hits all of them
PAIRS = 41   # calls of the searched and the hand-coded function in turn, for the median ratio of their times


def _paired(searched, plain) -> float:
  """The median over PAIRS pairs of calls (which one first alternating) of the searched call's time over the
  hand-coded one's: on a busy host the bests of separate rounds can differ by a third for the same code."""
  ratios = []
  for i in range(PAIRS):
    took = {}
    for name, fn in ((("s", searched), ("p", plain)) if i % 2 else (("p", plain), ("s", searched))):
      t0 = time.perf_counter()
      fn()
      took[name] = time.perf_counter() - t0
    ratios.append(took["s"] / took["p"])
  return sorted(ratios)[PAIRS // 2]


def _conv(m, x, w):
  """A 3x3 'same' convolution, NHWC by HWIO, as nine shifted matmuls."""
  h, wd = x.shape[1], x.shape[2]
  xp = m.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
  return sum(xp[:, dy:dy + h, dx:dx + wd, :] @ w[dy, dx] for dy in range(3) for dx in range(3))


def _row(name: str, flops: float, times: dict, extra: str = ""):
  base = times.get("numpy")
  parts = [f"{k} {flops / t / 1e9:.1f} GFLOPS" + (f" ({base / t:.2f}x numpy)" if base and k != "numpy" else "")
           for k, t in times.items()]
  print(f"{name:<24} " + " | ".join(parts) + extra, flush=True)


def workload(name: str, fn, np_fn, args, flops: float, beam: int, min_time: float):
  """fn jitted with the hand-coded kernels and with search, against np_fn, all timed in turn."""
  targs = [tnp.asarray(a) for a in args]
  plain = tg.jit(fn, search=0)
  t0 = time.perf_counter()
  searched = tg.jit(fn, search=beam)
  searched(*targs).block_until_ready()
  spent = time.perf_counter() - t0
  impls = {"numpy": lambda: np_fn(*args), "heuristic": lambda: plain(*targs).block_until_ready(),
           "search": lambda: searched(*targs).block_until_ready()}
  best = {k: float("inf") for k in impls}
  for _ in range(ROUNDS):
    for k, f in impls.items(): best[k] = min(best[k], _timeit(f, min_time))
  ratio = _paired(impls["search"], impls["heuristic"])
  _row(name, flops, best, f" | search/heuristic {ratio:.2f} paired | search took {spent:.1f} s")


def mlp(beam: int, min_time: float):
  params, x, y, loss = mlp_problem()
  step = lambda p, x, y: tg.tree.map(lambda a, g: a - 0.01 * g, p, tg.grad(loss)(p, x, y))
  tp, tx, ty = tg.tree.map(tnp.asarray, params), tnp.asarray(x), tnp.asarray(y)
  plain, searched = tg.jit(step, search=0), tg.jit(step, search=beam)
  t0 = time.perf_counter()
  tg.tree.leaves(searched(tp, tx, ty))[0].block_until_ready()
  spent = time.perf_counter() - t0
  impls = {"heuristic": lambda: tg.tree.leaves(plain(tp, tx, ty))[0].block_until_ready(),
           "search": lambda: tg.tree.leaves(searched(tp, tx, ty))[0].block_until_ready()}
  if _have("jax"): impls["jax"] = jax_mlp_step(params, x, y)
  best = {k: float("inf") for k in impls}
  for _ in range(ROUNDS):
    for k, f in impls.items(): best[k] = min(best[k], _timeit(f, min_time))
  parts = [f"{k} {t * 1e3:.2f} ms" + (f" ({t / best['jax']:.2f}x jax's time)" if "jax" in best and k != "jax" else "")
           for k, t in best.items()]
  ratio = _paired(impls["search"], impls["heuristic"])
  print(f"{'MLP train step':<24} " + " | ".join(parts) + f" | search/heuristic {ratio:.2f} paired | search took "
        f"{spent:.1f} s", flush=True)


def main():
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--quick", action="store_true", help="sizes up to 1024 and shorter timings")
  ap.add_argument("--beam", type=int, default=2, help="beam width of the search (default 2)")
  as_avx2.add_argument(ap)
  a = ap.parse_args()
  min_time = 0.2 if a.quick else 0.5
  cache = tempfile.mkdtemp(prefix="tracegrad-search-")
  os.environ["TRACEGRAD_CACHE_DIR"] = cache
  os.environ["TRACEGRAD_TIERED"] = "0"   # the heuristic's calls time its full build, not a quick one awaiting it
  print(f"tracegrad on {tg.default_backend()}; numpy {np.__version__}; beam {a.beam}; fresh cache {cache}"
        + as_avx2.note())
  try:
    rng = np.random.default_rng(0)
    for n in (256, 512, 1024) if a.quick else (256, 512, 1024, 2048):
      x, y = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
      workload(f"matmul {n}", lambda p, q: p @ q, lambda p, q: p @ q, (x, y), 2.0 * n ** 3, a.beam, min_time)
    for m, k, n in ((128, 784, 300), (128, 300, 100)):   # a 784-300-100 MLP's layers: widths no vector divides
      x, y = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
      workload(f"matmul {m}x{k}x{n}", lambda p, q: p @ q, lambda p, q: p @ q, (x, y), 2.0 * m * k * n, a.beam, min_time)
    for n in (512, 520, 1024):   # weight gradients: rows 2 or 4 KB apart are copied with longer rows first
      x, g = rng.standard_normal((128, n), dtype=np.float32), rng.standard_normal((128, n), dtype=np.float32)
      workload(f"x.T @ dy 128x{n}", lambda p, q: p.T @ q, lambda p, q: p.T @ q, (x, g), 2.0 * 128 * n * n, a.beam,
               min_time)
    x = rng.standard_normal((32, 32, 32, 64), dtype=np.float32)
    w = rng.standard_normal((3, 3, 64, 64), dtype=np.float32) * 0.05
    workload("conv2d 32x64x32x32 3x3", lambda p, q: _conv(tnp, p, q), lambda p, q: _conv(np, p, q), (x, w),
             2.0 * 32 * 32 * 32 * 64 * 64 * 9, a.beam, min_time)
    mlp(a.beam, min_time)
  finally:
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
  main()
