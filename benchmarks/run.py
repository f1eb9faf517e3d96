"""Benchmarks: tracegrad against numpy (and JAX / PyTorch when installed), in one process, interleaved so that
machine drift cancels; prints times and ratios. Not a test: nothing here asserts.

  python3 benchmarks/run.py [--quick]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

import as_avx2

as_avx2.apply()   # before numpy loads

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp

USER_TIERED = os.environ.get("TRACEGRAD_TIERED")   # first calls in fresh processes run as the user's setting


# Before each implementation's batches the process sleeps this long, so that the thread pools of the one timed before
# have parked: OpenBLAS's workers spin for about 2^28 cycles after a call, and on the same cores they took half of a
# parallel kernel's speed (an AVX2 matmul of 1024 ran at 100 GFLOPS right after numpy's, 188-214 on its own)
SETTLE = 0.15


def _timeit(fn, min_time: float) -> float:
  """Seconds per call: the best of several batches, after SETTLE."""
  time.sleep(SETTLE)
  fn()
  n, best = 1, float("inf")
  while True:
    t0 = time.perf_counter()
    for _ in range(n): fn()
    dt = time.perf_counter() - t0
    if dt < min_time / 5: n *= 2; continue
    best = min(best, dt / n)
    min_time -= dt
    if min_time <= 0: return best


def compare(name: str, impls: dict, rounds: int, min_time: float):
  """Time each implementation in turn, `rounds` times round-robin; report the best of each and its speed-up over numpy
  (and tracegrad's over JAX): above 1 means faster."""
  best = {k: float("inf") for k in impls}
  for _ in range(rounds):
    for k, fn in impls.items(): best[k] = min(best[k], _timeit(fn, min_time))
  parts = []
  for k, t in best.items():
    ratios = [f"{best[b] / t:.2f}x {b}" for b in ("numpy", "jax") if b in best and b != k and (k == "tracegrad" or b == "numpy")]
    parts.append(f"{k} {t * 1e6:.1f} us" + (f" ({', '.join(ratios)})" if ratios else ""))
  print(f"{name:<28} " + " | ".join(parts), flush=True)
  return best


def _have(mod: str) -> bool: return importlib.util.find_spec(mod) is not None


def as_user(env: dict) -> dict:
  """env with TRACEGRAD_TIERED as the user set it: steady timings here run full builds (TRACEGRAD_TIERED=0), a first
  call in a fresh process runs as the user's would."""
  env = {k: v for k, v in env.items() if k != "TRACEGRAD_TIERED"}
  return env if USER_TIERED is None else {**env, "TRACEGRAD_TIERED": USER_TIERED}


def elementwise(rounds, min_time):
  x = np.random.default_rng(0).normal(size=4 * 2 ** 20).astype(np.float32)
  f = lambda m, x: m.tanh(1.5 * x + 0.5) * m.exp(-x * x) + x / (1 + m.abs(x))
  jf = tg.jit(lambda x: f(tnp, x))
  tx = tnp.asarray(x)
  impls = {"numpy": lambda: f(np, x), "tracegrad": lambda: jf(tx).block_until_ready()}
  if _have("jax"):
    import jax, jax.numpy as jnp
    jjf, jx = jax.jit(lambda x: f(jnp, x)), jnp.asarray(x)
    impls["jax"] = lambda: jjf(jx).block_until_ready()
  if _have("torch"):
    import torch
    tt = torch.from_numpy(x)
    impls["torch"] = lambda: f(torch, tt)
  return compare("elementwise 4M f32", impls, rounds, min_time)


def softmax(rounds, min_time):
  x = np.random.default_rng(1).normal(size=(4096, 1024)).astype(np.float32)

  def npf(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

  def tgf(x):
    e = tnp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

  jf = tg.jit(tgf)
  tx = tnp.asarray(x)
  impls = {"numpy": lambda: npf(x), "tracegrad": lambda: jf(tx).block_until_ready()}
  if _have("jax"):
    import jax
    jjf, jx = jax.jit(lambda x: jax.nn.softmax(x, axis=1)), jax.numpy.asarray(x)
    impls["jax"] = lambda: jjf(jx).block_until_ready()
  return compare("row softmax 4096x1024", impls, rounds, min_time)


def tiny(rounds, min_time):
  """Dispatch: cached jitted calls whose kernels take well under a microsecond. Each case is a function of a namespace
  (np, grad, vmap) and the arguments it is called with, made from an asarray."""
  x = np.arange(16, dtype=np.float32)
  w = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
  cases = {
    "tiny jit call (16 f32)": (lambda m: lambda x: x * 2 + 1, lambda arr: (arr(x),)),
    "tiny call, dict argument": (lambda m: lambda p: p["x"] * p["w"][:, 0] + 1, lambda arr: ({"x": arr(x), "w": arr(w)},)),
    "jit(vmap(grad)) 16x16x4": (lambda m: m.vmap(m.grad(lambda w, x: m.np.tanh(x @ w).sum()), in_axes=(None, 0)),
                                lambda arr: (arr(w), arr(x.reshape(1, 16)))),
  }
  libs = {"tracegrad": (tg, tnp)}
  if _have("jax"):
    import jax, jax.numpy as jnp
    libs["jax"] = (jax, jnp)
  for name, (make, args) in cases.items():
    impls = {"numpy": lambda: x * 2 + 1} if name.startswith("tiny jit") else {}
    for lib, (top, mnp) in libs.items():
      f, a = top.jit(make(argparse.Namespace(np=mnp, grad=top.grad, vmap=top.vmap))), args(mnp.asarray)
      impls[lib] = (lambda f, a: lambda: f(*a).block_until_ready())(f, a)
    compare(name, impls, rounds, min_time)


def _mlp_params(rng, sizes=(784, 512, 512, 10)):
  return [(rng.normal(size=(a, b)).astype(np.float32) * np.sqrt(2 / a), np.zeros(b, np.float32))
          for a, b in zip(sizes[:-1], sizes[1:])]


def _mlp_step(m, nn_logsumexp):
  def loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
      h = h @ w + b
      if i < len(params) - 1: h = m.maximum(h, 0)
    return -(h * y).sum() / x.shape[0] + nn_logsumexp(h).sum() / x.shape[0]
  return loss


def mlp_problem():
  """(params, x, y) of the MLP benchmark as numpy arrays, and its loss written with tracegrad."""
  rng = np.random.default_rng(2)
  params = _mlp_params(rng)
  x = rng.normal(size=(128, 784)).astype(np.float32)
  y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
  lse = lambda h: tnp.log(tnp.exp(h - h.max(1, keepdims=True)).sum(1)) + h.max(1)
  return params, x, y, _mlp_step(tnp, lse)


def jax_mlp_step(params, x, y):
  """A call of the MLP step jitted by JAX (JAX must be installed)."""
  import jax, jax.numpy as jnp
  jloss = _mlp_step(jnp, lambda h: jax.nn.logsumexp(h, axis=1))
  jstep = jax.jit(lambda p, x, y: jax.tree.map(lambda a, g: a - 0.01 * g, p, jax.grad(jloss)(p, x, y)))
  jp = jax.tree.map(jnp.asarray, params)
  return lambda: jax.tree.leaves(jstep(jp, x, y))[0].block_until_ready()


def mlp(rounds, min_time):
  params, x, y, loss = mlp_problem()

  @tg.jit
  def step(params, x, y):
    g = tg.grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

  tp = tg.tree.map(tnp.asarray, params)
  tx, ty = tnp.asarray(x), tnp.asarray(y)
  impls = {"tracegrad": lambda: tg.tree.leaves(step(tp, tx, ty))[0].block_until_ready()}
  if _have("jax"): impls["jax"] = jax_mlp_step(params, x, y)
  return compare("MLP train step 784-512-512-10", impls, rounds, min_time)


FIRST_CALL = """
import time, numpy as np, tracegrad as tg, tracegrad.numpy as tnp
import sys; sys.path.insert(0, {here!r})
from run import mlp_problem
params, x, y, loss = mlp_problem()
params, x, y = tg.tree.map(tnp.asarray, params), tnp.asarray(x), tnp.asarray(y)
step = tg.jit(lambda p, x, y: tg.tree.map(lambda a, g: a - 0.01 * g, p, tg.grad(loss)(p, x, y)))
t0 = time.perf_counter(); tg.tree.leaves(step(params, x, y))[0].block_until_ready(); print(time.perf_counter() - t0)
"""


def first_call():
  """The MLP step's first call in a fresh process: with a cold disk cache, then with the cache warm."""
  cache = tempfile.mkdtemp(prefix="tracegrad-bench-")
  env = as_user({**os.environ, "TRACEGRAD_CACHE_DIR": cache})
  code = FIRST_CALL.format(here=os.path.dirname(os.path.abspath(__file__)))
  try:
    times = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                  check=True).stdout.split()[-1]) for _ in range(2)]
  finally:
    shutil.rmtree(cache, ignore_errors=True)
  print(f"{'MLP first call':<28} cold cache {times[0]:.2f} s | warm disk cache {times[1]:.2f} s", flush=True)


def main():
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
  as_avx2.add_argument(ap)
  a = ap.parse_args()
  rounds, min_time = (2, 0.2) if a.quick else (5, 0.5)
  os.environ["TRACEGRAD_TIERED"] = "0"   # the steady calls time full builds, not a quick one awaiting its upgrade
  print(f"tracegrad on {tg.default_backend()} ({tg.devices()[0]}); numpy {np.__version__}"
        + "".join(f"; {m} installed" for m in ("jax", "torch") if _have(m)) + as_avx2.note())
  for bench in (elementwise, softmax, tiny, mlp): bench(rounds, min_time)
  first_call()


if __name__ == "__main__":
  main()
