"""Several processes: examples/data_parallel.py under `mpirun -n 2` (one device per process, collectives through
MPI) draws the loss curve of the same run on two devices of one process, and of one device (to rounding), with the
step written per device (shard_map) or for the whole batch (sharded jit)."""
import os
import re
import subprocess
import sys
import sysconfig

import pytest

from oracles import ulps

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data_parallel.py")
MPIRUN = os.path.join(sysconfig.get_path("scripts"), "mpirun")


def _losses(cmd: list[str], **env) -> list[float]:
  env = {**os.environ, **env}
  for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"): env.pop(k, None)
  r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
  assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
  return [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]


@pytest.mark.parametrize("mode", ["shard_map", "jit"])
def test_two_processes_train_as_one(mode):
  pytest.importorskip("mpi4py")
  if not os.path.exists(MPIRUN): pytest.skip("no mpirun beside this Python (pip install 'tracegrad[mpi]')")
  args = [EXAMPLE, "--steps", "6", "--mode", mode]
  one = _losses([sys.executable, *args], TRACEGRAD_NUM_CPU_DEVICES="1")
  two = _losses([sys.executable, *args], TRACEGRAD_NUM_CPU_DEVICES="2")
  # root may launch Open MPI only when it says so; --oversubscribe lets two ranks share fewer cores
  mpi = _losses([MPIRUN, "--oversubscribe", "-n", "2", sys.executable, *args], TRACEGRAD_NUM_CPU_DEVICES="1",
                OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
  assert len(one) == len(two) == len(mpi) == 6
  assert mpi == two                                   # the same collectives in the same order: the same bits
  assert max(abs(a - b) for a, b in zip(one, mpi)) < ulps(8) and one[-1] < one[0]
