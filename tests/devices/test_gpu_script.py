"""benchmarks/gpu_h200.sh, the one prepared GPU check, run through at small sizes on the opencl device (PoCL here): its
steps run, and it leaves its logs under $OUT."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_script_runs_its_steps_on_opencl(tmp_path):
  from tracegrad.devices import opencl
  if opencl.missing(): pytest.skip(f"no OpenCL device: {opencl.missing()}")
  env = {**os.environ, "OUT": str(tmp_path), "BACKEND": "opencl", "SMALL": "1", "SUITE_SECONDS": "200"}
  env.pop("PYTEST_XDIST_WORKER", None)
  r = subprocess.run(["bash", str(ROOT / "benchmarks/gpu_h200.sh")], env=env, capture_output=True, text=True,
                     timeout=400)
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  assert {p.name for p in tmp_path.iterdir()} >= {"gpu.txt", "suite.log", "bench.log", "models.log"}
  suite = (tmp_path / "suite.log").read_text()
  assert "suite exit: 0" in suite and " passed" in suite, suite[-2000:]
  bench = (tmp_path / "bench.log").read_text()
  assert "bench exit: 0" in bench and "elementwise 65536 float32" in bench and "matmul 128^2 bfloat16" in bench, bench
