"""Decompositions and solves (Cholesky, LU solve, QR, eigh, SVD; float32) through tracegrad.scipy.linalg against
jax.scipy.linalg when it is installed: (a) the first call of jit(f), trace and compile included, each in a fresh
process with a fresh (cold) compile cache, then again in a second process with that cache warm; (b) the steady state,
the median time per call over interleaved rounds. Prints a table. Not a test: nothing here asserts.

  python3 benchmarks/linalg.py [--quick] [--first N] [--sizes N ...]

On a loaded host, OPENBLAS_NUM_THREADS=1 keeps LAPACK's threads from fighting for the cores (both libraries call
OpenBLAS), which otherwise makes single calls vary tenfold.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from run import _have

# name -> (the call on a linalg module, whether its matrix is symmetric positive definite, whether it takes a vector b)
OPS = {
  "cholesky": ("lambda la, a: la.cholesky(a, lower=True)", True, False),
  "solve": ("lambda la, a, b: la.solve(a, b)", False, True),
  "qr": ("lambda la, a: la.qr(a, mode='economic')", False, False),
  "eigh": ("lambda la, a: la.eigh(a)", True, False),
  "svd": ("lambda la, a: la.svd(a, full_matrices=False)", False, False),
}


def problem(name: str, n: int) -> list[np.ndarray]:
  """The float32 arguments of op `name` at size n (the same in every process)."""
  rng = np.random.default_rng(n)
  g = rng.standard_normal((n, n)).astype(np.float32)
  a = (g @ g.T / n + np.eye(n, dtype=np.float32)).astype(np.float32) if OPS[name][1] else g
  return [a, rng.standard_normal(n).astype(np.float32)] if OPS[name][2] else [a]


# run in a fresh process: imports, arguments and anything else happen before the clock starts
FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
import numpy as np
from linalg import OPS, problem
if {lib!r} == "tracegrad":
  import tracegrad as tg, tracegrad.numpy as tnp, tracegrad.scipy.linalg as la
  jit, put, ready = tg.jit, tnp.asarray, lambda out: [x.block_until_ready() for x in tg.tree.leaves(out)]
else:
  import jax, jax.numpy as jnp, jax.scipy.linalg as la
  jit, put, ready = jax.jit, jnp.asarray, jax.block_until_ready
args = [put(x) for x in problem({name!r}, {n})]
ready(args)
f = jit(lambda *a: eval(OPS[{name!r}][0])(la, *a))
times = []
for _ in range(2):
  t0 = time.perf_counter()
  ready(f(*args))
  times.append(time.perf_counter() - t0)
print(*times)
"""


def first_call(lib: str, name: str, n: int, cache: str) -> tuple[float, float]:
  """Seconds of the first call of jit(f) in a fresh process with the compile cache `cache`, and of its second call."""
  code = FIRST_CALL.format(here=os.path.dirname(os.path.abspath(__file__)), lib=lib, name=name, n=n)
  env = {**os.environ, "TRACEGRAD_CACHE_DIR": cache}
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
  if out.returncode: raise RuntimeError(f"first call of {name} in {lib} failed:\n{out.stderr}")
  first, second = out.stdout.split()[-2:]
  return float(first), float(second)


def steady(impls: dict, rounds: int, min_time: float) -> dict[str, float]:
  """Median seconds per call of each implementation, timed in turn, `rounds` times round-robin."""
  for fn in impls.values(): fn()
  reps = {}
  for k, fn in impls.items():
    t0 = time.perf_counter()
    fn()
    reps[k] = max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))
  times = {k: [] for k in impls}
  for _ in range(rounds):
    for k, fn in impls.items():
      t0 = time.perf_counter()
      for _ in range(reps[k]): fn()
      times[k].append((time.perf_counter() - t0) / reps[k])
  return {k: statistics.median(v) for k, v in times.items()}


def steady_impls(name: str, n: int, jax_too: bool) -> dict:
  import tracegrad as tg
  import tracegrad.numpy as tnp
  import tracegrad.scipy.linalg as tla
  f = eval(OPS[name][0])
  args = problem(name, n)
  targs = [tnp.asarray(x) for x in args]
  tf = tg.jit(lambda *a: f(tla, *a))
  impls = {"tracegrad": lambda: [x.block_until_ready() for x in tg.tree.leaves(tf(*targs))]}
  if jax_too:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jla
    jargs = [jnp.asarray(x) for x in args]
    jf = jax.jit(lambda *a: f(jla, *a))
    impls["jax"] = lambda: jax.block_until_ready(jf(*jargs))
  return impls


def main():
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
  ap.add_argument("--first", type=int, default=512, help="the size of the first-call measurement (default 512)")
  ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024], help="steady-state sizes (default 256 1024)")
  a = ap.parse_args()
  rounds, min_time = (3, 0.05) if a.quick else (7, 0.2)
  jax_too = _have("jax")
  import tracegrad as tg
  print(f"tracegrad on {tg.default_backend()}; numpy {np.__version__}; float32"
        + ("; against jax " + __import__("jax").__version__ if jax_too else "; jax not installed"), flush=True)
  rows = {name: {} for name in OPS}
  for name in OPS:
    cache = tempfile.mkdtemp(prefix="tracegrad-linalg-")
    try:
      rows[name]["cold"] = first_call("tracegrad", name, a.first, cache)
      rows[name]["warm"] = first_call("tracegrad", name, a.first, cache)
    finally:
      shutil.rmtree(cache, ignore_errors=True)
    if jax_too: rows[name]["jax"] = first_call("jax", name, a.first, "")
    for n in a.sizes: rows[name][n] = steady(steady_impls(name, n, jax_too), rounds, min_time)
    print(f"  {name} done", file=sys.stderr, flush=True)

  libs = ["cold", "warm"] + (["jax"] if jax_too else [])
  head = f"{'':10} | first call n={a.first}, s (less the second): tracegrad cold, warm disk" + (", jax" * jax_too)
  for n in a.sizes: head += f" | n={n}: tracegrad" + (", jax, ratio" if jax_too else "")
  print(head)
  for name, r in rows.items():
    line = f"{name:10} |" + "".join(f" {r[k][0]:5.2f} ({r[k][0] - r[k][1]:5.2f})" for k in libs)
    for n in a.sizes:
      t = r[n]
      line += f" | {t['tracegrad'] * 1e3:9.2f} ms" + (f" {t['jax'] * 1e3:9.2f} ms {t['tracegrad'] / t['jax']:5.2f}x"
                                                      if jax_too else "")
    print(line, flush=True)
  print("(ratio: tracegrad's time over JAX's; below 1 is faster)")


if __name__ == "__main__":
  main()
