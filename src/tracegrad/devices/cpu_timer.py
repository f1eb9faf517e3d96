"""Times compiled programs in a process of their own, so that one that crashes or hangs takes only this process down:

  python3 cpu_timer.py JOB_DIR      (one job)
  python3 cpu_timer.py --serve      (a job directory per line of stdin, a JSON line per job on stdout)

JOB_DIR holds job.json ({"library", "inputs", "stored", "min_time"}, and "against" for a second library) and `inputs`
names a .npz of one array per buffer, in order (jobs may share one: the last one read is kept). The program runs once
on a copy of the inputs, the buffers it stores are written to outputs.npz in JOB_DIR, then it runs again until
min_time has passed; the best time of one run is printed as JSON ({"seconds"}). With "against", the two libraries
run in turn instead, in pairs, and the median of the pairs' ratios of the library's time to the other's is printed
too ({"ratio"}): a slow spell of the machine slows both runs of a pair, where it decides which of two bests is lower.
Only numpy and cffi are imported: no tracegrad.
"""
import json
import os
import sys
import time
from pathlib import Path

import cffi
import numpy as np


_inputs: dict = {}   # the last inputs file read, by path
# each buffer starts on a cache line, as the runner's big ones do (recycled_memory.aligned): a program is timed on the
# alignment it runs on, not on malloc's 16 bytes, where its vector loads would cross cache lines its own runs never do
ALIGN = 64
MIN_PAIRS = 3   # pairs of runs at least in a job timed against another library, whatever min_time


def _arrays(path: str) -> list:
  if path not in _inputs:
    _inputs.clear()
    with np.load(path) as z: _inputs[path] = [np.ascontiguousarray(z[f"arr_{i}"]) for i in range(len(z.files))]
  return [_aligned_copy(a) for a in _inputs[path]]


def _aligned_copy(a: np.ndarray) -> np.ndarray:
  raw = np.empty(a.nbytes + ALIGN, np.uint8)
  at = -raw.ctypes.data % ALIGN
  out = raw[at:at + a.nbytes].view(a.dtype).reshape(a.shape)
  out[...] = a
  return out


def run(job: Path) -> dict:
  spec = json.loads((job / "job.json").read_text())
  arrays = _arrays(spec["inputs"])
  ffi = cffi.FFI()
  ffi.cdef("void tg_run(void **bufs);")
  lib = ffi.dlopen(spec["library"])   # never closed: unloading under OpenMP's idle threads can crash the process
  ptrs = ffi.new("void *[]", max(len(arrays), 1))
  keep = [ffi.from_buffer(a) for a in arrays]
  for i, p in enumerate(keep): ptrs[i] = p
  lib.tg_run(ptrs)
  np.savez(job / "outputs.npz", *[arrays[i] for i in spec["stored"]])
  if spec.get("against"): return _paired(lib, ffi.dlopen(spec["against"]), ptrs, spec["min_time"])
  best, spent = float("inf"), 0.0
  while spent < spec["min_time"] or best == float("inf"):
    t0 = time.perf_counter()
    lib.tg_run(ptrs)
    dt = time.perf_counter() - t0
    best, spent = min(best, dt), spent + dt
  return {"seconds": best}


def _paired(lib, other, ptrs, min_time: float) -> dict:
  """lib and other run in turn, in pairs (which one first alternating) until min_time has passed and MIN_PAIRS
  pairs have run: lib's best time, and the median of the pairs' ratios of its time to other's. other runs once
  first, as lib did: a cold run in a pair would favour lib."""
  other.tg_run(ptrs)
  best, ratios, spent = float("inf"), [], 0.0
  while spent < min_time or len(ratios) < MIN_PAIRS:
    took = {}
    for which in ((lib, other) if len(ratios) % 2 == 0 else (other, lib)):
      t0 = time.perf_counter()
      which.tg_run(ptrs)
      took[which is lib] = time.perf_counter() - t0
    best, spent = min(best, took[True]), spent + took[True] + took[False]
    ratios.append(took[True] / max(took[False], 1e-9))
  ratios.sort()
  return {"seconds": best, "ratio": ratios[len(ratios) // 2]}


def serve() -> None:
  for line in sys.stdin:
    try:
      out = run(Path(line.strip()))
    except Exception as e:   # a job that fails short of a crash: say so, and take the next
      out = {"error": f"{type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
  if sys.argv[1] == "--serve": serve()
  else: print(json.dumps(run(Path(sys.argv[1]))), flush=True)
  os._exit(0)   # no interpreter teardown: unloading the library under OpenMP's idle threads can crash it
