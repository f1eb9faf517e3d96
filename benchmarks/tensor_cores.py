"""Tensor-core matmuls on a CUDA GPU checked and timed: float16, bfloat16 and TensorFloat-32 contractions of a few
shapes against numpy on the same (rounded) operands, then a 4096^2 bfloat16 matmul's speed. Run once as is
(mma.sync) and once with TRACEGRAD_WGMMA=1 (Hopper's wgmma, compiled for sm_90a): benchmarks/gpu_h200.sh does both.
Not a test: a wrong result prints FAIL.

  TRACEGRAD_DEVICE=cuda python3 benchmarks/tensor_cores.py [--n 4096]
"""
from __future__ import annotations

import argparse
import importlib
import os
import time

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp


def _rounded(a: np.ndarray, dtype: str) -> np.ndarray:
  """a as the device reads it: rounded to the half type, or for float32 to TensorFloat-32 where the device uses it
  (lax.dot.tensorfloat32: CUDA)."""
  if dtype != "float32": return np.asarray(tnp.asarray(a).astype(getattr(tnp, dtype))).astype(np.float64)
  if not importlib.import_module("tracegrad.lax.dot").tensorfloat32(None, tnp.float32): return a.astype(np.float64)
  bits = a.view(np.uint32)
  return ((bits + np.uint32(0xFFF) + ((bits >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


def check(dtype: str, shapes: tuple, rng) -> bool:
  a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
  if dtype == "float32": f = lambda x, y: tnp.matmul(x, y)
  else: f = lambda x, y: tnp.matmul(x.astype(dtype), y.astype(dtype), preferred_element_type=tnp.float32)
  got = np.asarray(tg.jit(f)(a, b)).astype(np.float64)
  want = np.matmul(_rounded(a, dtype), _rounded(b, dtype))
  err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
  ok = err < 1e-5
  print(f"{'PASS' if ok else 'FAIL'} {dtype} {' x '.join(map(str, shapes))}: max relative error {err:.2g}", flush=True)
  return ok


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--n", type=int, default=4096, help="the timed matmul's size")
  a = p.parse_args()
  rng = np.random.default_rng(0)
  print(f"tracegrad on {tg.default_backend()}, TRACEGRAD_WGMMA={os.environ.get('TRACEGRAD_WGMMA', '')!r}", flush=True)
  shapes = [((128, 64), (64, 192)), ((64, 1024), (1024, 64)), ((3, 64, 48), (3, 48, 128)), ((256, 256), (256, 512))]
  ok = all([check(d, s, rng) for d in ("bfloat16", "float16", "float32") for s in shapes])
  m = rng.standard_normal((a.n, a.n)).astype(np.float32)
  x = tg.device_put(m.astype(np.float32))
  mm = tg.jit(lambda u: tnp.matmul(u.astype(tnp.bfloat16), u.astype(tnp.bfloat16), preferred_element_type=tnp.float32))
  mm(x).block_until_ready()
  best = float("inf")
  for _ in range(5):
    t0 = time.perf_counter()
    mm(x).block_until_ready()
    best = min(best, time.perf_counter() - t0)
  print(f"matmul {a.n}^2 bfloat16 (end to end): {best * 1e3:.2f} ms, {2 * a.n ** 3 / best / 1e12:.1f} TFLOPS", flush=True)
  print("all PASS" if ok else "some FAIL", flush=True)


if __name__ == "__main__":
  main()
