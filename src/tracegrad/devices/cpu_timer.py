"""Times a compiled program in a process of its own, so that one that crashes or hangs takes only this process down:

  python3 cpu_timer.py JOB_DIR

JOB_DIR holds job.json ({"library", "stored", "min_time"}) and inputs.npz (one array per buffer, in order). The
program runs once on the inputs, the buffers it stores are written to outputs.npz, then it runs again until min_time
has passed; the best time of one run is printed as JSON. Only numpy and cffi are imported: no tracegrad.
"""
import json
import os
import sys
import time
from pathlib import Path

import cffi
import numpy as np


def main(job: Path) -> None:
  spec = json.loads((job / "job.json").read_text())
  with np.load(job / "inputs.npz") as z: arrays = [np.ascontiguousarray(z[f"arr_{i}"]) for i in range(len(z.files))]
  ffi = cffi.FFI()
  ffi.cdef("void tg_run(void **bufs);")
  lib = ffi.dlopen(spec["library"])
  ptrs = ffi.new("void *[]", max(len(arrays), 1))
  keep = [ffi.from_buffer(a) for a in arrays]
  for i, p in enumerate(keep): ptrs[i] = p
  lib.tg_run(ptrs)
  np.savez(job / "outputs.npz", *[arrays[i] for i in spec["stored"]])
  best, spent = float("inf"), 0.0
  while spent < spec["min_time"] or best == float("inf"):
    t0 = time.perf_counter()
    lib.tg_run(ptrs)
    dt = time.perf_counter() - t0
    best, spent = min(best, dt), spent + dt
  print(json.dumps({"seconds": best}), flush=True)


if __name__ == "__main__":
  main(Path(sys.argv[1]))
  os._exit(0)   # no interpreter teardown: unloading the library under OpenMP's idle threads can crash it
