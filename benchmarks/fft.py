"""FFTs through tracegrad.numpy.fft against numpy's pocketfft and jax.numpy.fft (when installed), interleaved in one
process: a batch of 256 complex64 transforms of length 1024, a 512 x 512 rfft2, and a batch of prime-length (1009,
Bluestein) transforms; the first call of each jitted function (trace and compile) too. Prints one line per problem
with the speed-up over numpy (and JAX): above 1 means faster. Not a test: nothing here asserts.

  python3 benchmarks/fft.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from run import _have, compare


def problems(rng) -> dict:
  """name -> (the function on an fft module, its input)."""
  c = lambda *s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)
  return {
    "fft 256 x 1024 complex64": (lambda f, x: f.fft(x), c(256, 1024)),
    "rfft2 512 x 512 float32": (lambda f, x: f.rfft2(x), rng.standard_normal((512, 512)).astype(np.float32)),
    "ifft 64 x 1009 (prime)": (lambda f, x: f.ifft(x), c(64, 1009)),
  }


def main():
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
  a = ap.parse_args()
  rounds, min_time = (3, 0.1) if a.quick else (7, 0.3)
  import tracegrad as tg
  import tracegrad.numpy as tnp
  jax_too = _have("jax")
  if jax_too:
    import jax
    import jax.numpy as jnp
  print(f"tracegrad on {tg.default_backend()}; numpy {np.__version__}"
        + (f"; jax {jax.__version__}" if jax_too else "; jax not installed"), flush=True)
  for name, (fn, x) in problems(np.random.default_rng(0)).items():
    tf = tg.jit(lambda v, fn=fn: fn(tnp.fft, v))
    tx = tnp.asarray(x)
    t0 = time.perf_counter()
    tf(tx).block_until_ready()
    first = time.perf_counter() - t0
    impls = {"numpy": lambda fn=fn, x=x: fn(np.fft, x), "tracegrad": lambda: tf(tx).block_until_ready()}
    if jax_too:
      jf, jx = jax.jit(lambda v, fn=fn: fn(jnp.fft, v)), jnp.asarray(x)
      impls["jax"] = lambda: jf(jx).block_until_ready()
    want = fn(np.fft, x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    err = np.abs(np.asarray(tf(tx)) - want).max() / np.abs(want).max()
    compare(name, impls, rounds, min_time)
    print(f"{'':28} first call {first:.2f} s; max error {err:.1e} of the largest output", flush=True)


if __name__ == "__main__":
  main()
