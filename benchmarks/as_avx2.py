"""`--as-avx2`: a host with AVX-512 times a benchmark as a host with AVX2 and no AVX-512 would run it, every side at
once: tracegrad's generated code built for x86-64-v3, OpenBLAS (numpy's matmuls) on its Haswell kernels, numpy's own
loops without their AVX-512 paths, and the code JAX's XLA generates limited to AVX2. The settings are environment
variables, read when those libraries load, so `apply` runs before numpy or JAX is imported; the processes a
benchmark starts inherit them. JAX's matmuls are library kernels chosen at run time, which keep AVX-512 (a 1024^2
matmul at 260-270 GFLOPS either way here, where AVX2's peak is about 190): a step that is mostly matmuls (the MLP)
is compared against more than an AVX2 host's JAX.
"""
from __future__ import annotations

import os
import sys

FLAG = "--as-avx2"
ENV = {"TRACEGRAD_CPU_TARGET": "x86-64-v3", "OPENBLAS_CORETYPE": "Haswell",
       "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
XLA = "--xla_cpu_max_isa=AVX2"


def _set() -> bool:
  """Whether the environment is an AVX2 host's already."""
  return all(os.environ.get(k) == v for k, v in ENV.items()) and XLA in os.environ.get("XLA_FLAGS", "")


def apply(argv: list[str] | None = None) -> bool:
  """Set the environment of an AVX2 host when argv (sys.argv) holds FLAG; whether it did."""
  if FLAG not in (sys.argv if argv is None else argv): return False
  if _set(): return True
  if "numpy" in sys.modules: raise RuntimeError(f"{FLAG}: numpy was imported before the flag took effect")
  os.environ.update(ENV)
  os.environ["XLA_FLAGS"] = " ".join(f for f in (XLA, os.environ.get("XLA_FLAGS", "")) if f)
  return True


def add_argument(ap) -> None:
  """FLAG on an argparse parser (apply has read it already)."""
  ap.add_argument(FLAG, action="store_true", help="run as a host with AVX2 and no AVX-512 would: tracegrad, "
                  "OpenBLAS, numpy and JAX's XLA all limited to AVX2 (see as_avx2.py)")


def note() -> str:
  """What a benchmark's first line says of the host it runs as: '; as an AVX2 host' once apply has set it up."""
  return "; as an AVX2 host (x86-64-v3 code, OpenBLAS Haswell, XLA codegen AVX2)" if _set() else ""
