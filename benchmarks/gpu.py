"""GPU-style backends: kernel times (the device's work, without the copies in and out of each call) of a fused
elementwise chain over 64M float32 values against memory bandwidth, and of 4096 x 4096 matmuls in float32 and in
float16 / bfloat16 (float32 accumulation) against arithmetic peak. Not a test: nothing here asserts.

  python3 benchmarks/gpu.py [--backend cuda|opencl] [--size N] [--n M] [--search WIDTH]

--search times each program again after a kernel search of that beam width (the GPU actions of lower/opt.py: group
size, upcast tiles with vector loads, 2-d grids), beside the default mapping.

--peak-gbs and --peak-tflops give the chip's figures for the ratios (defaults: an H200's 4800 GB/s and dense
float32 67 TFLOPS / float16 989 TFLOPS).

--compare times the same work in PyTorch and JAX on the same GPU when they are installed (device-to-device copy
bandwidth, the fused chain under jax.jit, the matmuls, and a cached jitted call of a tiny function, end to end).
"""
from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import run


def kernel_seconds(f, args, backend: str, repeats: int = 5, search: int = 0) -> tuple[float, list]:
  """The best total kernel time of f's compiled program (after a search of that beam width) over `repeats` runs, and
  its outputs."""
  g = tg.make_graph(f)(*args)
  ex = run.executable(g, backend, search=search)
  ex._runner.timed = True
  best, out = float("inf"), None
  for _ in range(repeats):
    out = ex._runner(args)
    best = min(best, sum(ex._runner.kernel_ns()) / 1e9)
  return best, out


def _have(mod: str) -> bool: return importlib.util.find_spec(mod) is not None


def torch_seconds(fn, repeats: int = 10) -> float:
  """The best time of fn() on the GPU by CUDA events (after a warm-up call)."""
  import torch
  fn()
  best = float("inf")
  for _ in range(repeats):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    best = min(best, start.elapsed_time(end) / 1e3)
  return best


def wall_seconds(fn, repeats: int = 10) -> float:
  """The best wall time of fn() (which waits for its result), after a warm-up call."""
  fn()
  best = float("inf")
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - t0)
  return best


def compare(a, x: np.ndarray, m: np.ndarray) -> None:
  """The references on the same GPU: PyTorch's copy bandwidth and matmuls, JAX's fused chain, matmuls and tiny call."""
  if _have("torch"):
    import torch
    if torch.cuda.is_available():
      tx = torch.from_numpy(x).cuda()
      ty = torch.empty_like(tx)
      t = torch_seconds(lambda: ty.copy_(tx))
      print(f"torch: device-to-device copy {x.size} float32: {2 * x.nbytes / t / 1e9:.0f} GB/s", flush=True)
      for dtype in ("float32", "float16", "bfloat16"):
        d = getattr(torch, dtype)
        u = torch.from_numpy(m).cuda().to(d)
        t = torch_seconds(lambda: u @ u, repeats=5)
        print(f"torch: matmul {a.n}^2 {dtype}: {t * 1e3:.2f} ms, {2 * a.n ** 3 / t / 1e12:.1f} TFLOPS", flush=True)
      torch.backends.cuda.matmul.allow_tf32 = True   # float32 as JAX's default: TensorFloat-32 operands
      u = torch.from_numpy(m).cuda()
      t = torch_seconds(lambda: u @ u, repeats=5)
      torch.backends.cuda.matmul.allow_tf32 = False
      print(f"torch: matmul {a.n}^2 float32 allow_tf32: {t * 1e3:.2f} ms, {2 * a.n ** 3 / t / 1e12:.1f} TFLOPS", flush=True)
      big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
      t = torch_seconds(lambda: big @ big, repeats=5)
      print(f"torch: matmul 8192^2 bfloat16: {2 * 8192 ** 3 / t / 1e12:.1f} TFLOPS", flush=True)
  if _have("jax"):
    import jax
    import jax.numpy as jnp
    print(f"jax: {jax.devices()}", flush=True)
    jx = jax.device_put(x)
    chain = jax.jit(lambda x: jnp.tanh(1.5 * x + 0.5) * jnp.exp(-x * x) + x / (1 + jnp.abs(x)))
    t = wall_seconds(lambda: chain(jx).block_until_ready())
    print(f"jax: elementwise {x.size} float32 (end to end): {t * 1e3:.3f} ms, {2 * x.nbytes / t / 1e9:.0f} GB/s",
          flush=True)
    for dtype in ("float32", "float16", "bfloat16"):
      u = jax.device_put(m.astype(getattr(jnp, dtype)))
      mm = jax.jit(lambda u: jnp.matmul(u, u, preferred_element_type=jnp.float32))
      t = wall_seconds(lambda: mm(u).block_until_ready(), repeats=5)
      print(f"jax: matmul {a.n}^2 {dtype} (end to end): {t * 1e3:.2f} ms, {2 * a.n ** 3 / t / 1e12:.1f} TFLOPS",
            flush=True)
    tiny, s = jax.jit(lambda v: v * 2 + 1), jax.device_put(np.ones(8, np.float32))
    print(f"jax: cached jitted call of a tiny function: {wall_seconds(lambda: tiny(s).block_until_ready(), 200) * 1e6:.1f}"
          f" us", flush=True)
  tiny, s = tg.jit(lambda v: v * 2 + 1), tg.device_put(np.ones(8, np.float32))
  print(f"tracegrad: cached jitted call of a tiny function: "
        f"{wall_seconds(lambda: tiny(s).block_until_ready(), 200) * 1e6:.1f} us", flush=True)


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--backend", default="cuda", choices=("cuda", "opencl"))
  p.add_argument("--size", type=int, default=64 * 2 ** 20, help="elements of the elementwise benchmark")
  p.add_argument("--n", type=int, default=4096, help="matmul size")
  p.add_argument("--peak-gbs", type=float, default=4800.0)
  p.add_argument("--peak-tflops", type=float, nargs=2, default=(67.0, 989.0), metavar=("F32", "F16"))
  p.add_argument("--search", type=int, default=0, help="beam width of a kernel search to time as well (0: none)")
  p.add_argument("--compare", action="store_true", help="time the same work in PyTorch and JAX (when installed)")
  a = p.parse_args()
  searches = (0, a.search) if a.search else (0,)
  print(f"{a.backend}: {tg.devices(a.backend)}", flush=True)
  rng = np.random.default_rng(0)

  x = rng.standard_normal(a.size).astype(np.float32)
  for width in searches:
    t, (y,) = kernel_seconds(lambda x: tnp.tanh(1.5 * x + 0.5) * tnp.exp(-x * x) + x / (1 + tnp.abs(x)), [x], a.backend,
                             search=width)
    gbs = 2 * x.nbytes / t / 1e9
    print(f"elementwise {a.size} float32{_searched(width)}: {t * 1e3:.3f} ms, {gbs:.0f} GB/s "
          f"({gbs / a.peak_gbs:.1%} of {a.peak_gbs:.0f})", flush=True)

  # float32 at the default precision takes TensorFloat-32 operands on CUDA (as JAX's), "highest" keeps float32
  for dtype, precision, peak in (("float32", None, a.peak_tflops[0]), ("float32", "highest", a.peak_tflops[0]),
                                 ("float16", None, a.peak_tflops[1]), ("bfloat16", None, a.peak_tflops[1])):
    m = rng.standard_normal((a.n, a.n)).astype(np.float32)
    d = getattr(tnp, dtype)
    f = lambda u, v: tnp.matmul(u.astype(d), v.astype(d), precision=precision, preferred_element_type=tnp.float32)
    for width in searches:
      t, (c,) = kernel_seconds(f, [m, m], a.backend, repeats=3, search=width)
      tflops = 2 * a.n ** 3 / t / 1e12
      err = float(np.abs(c[:64, :64] - m[:64] @ m[:, :64]).max())
      label = dtype + (f" precision={precision}" if precision else "")
      print(f"matmul {a.n}^2 {label} (float32 accumulation){_searched(width)}: {t * 1e3:.2f} ms, {tflops:.2f} TFLOPS "
            f"({tflops / peak:.1%} of {peak:.0f}), max |error| on a corner {err:.2g}", flush=True)
  if a.compare: compare(a, x, rng.standard_normal((a.n, a.n)).astype(np.float32))


def _searched(width: int) -> str: return f", searched (beam {width})" if width else ""


if __name__ == "__main__":
  main()
