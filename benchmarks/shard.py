"""Data-parallel scaling: the MLP gradient step of benchmarks/run.py (batch 128) split over 1, 2 and 4 host devices,
written two ways: with shard_map (each device a quarter, half or all of the batch, gradients averaged with
lax.pmean) and as a sharded jit (the batch laid out over the devices, the averaging inserted by the partitioner),
against the plain jitted step. Each device count runs in a process of its own (TRACEGRAD_NUM_CPU_DEVICES is read at start); then two
processes of one device each under mpirun, when mpi4py and its mpirun are installed. Not a test: nothing here
asserts.

  python3 benchmarks/shard.py
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig

CHILD = r"""
import sys, time
import numpy as np
sys.path.insert(0, {here!r})
import tracegrad as tg
from tracegrad import lax
from tracegrad.sharding import Mesh, NamedSharding, P
from run import mlp_problem, _timeit

params, x, y, loss = mlp_problem()
n = len(tg.devices())
mesh = Mesh(np.array(tg.devices()), ("batch",))
grads = tg.shard_map(lambda p, x, y: lax.pmean(tg.grad(loss)(p, x, y), "batch"), mesh,
                     in_specs=(P(), P("batch"), P("batch")), out_specs=P())
plain = tg.jit(tg.grad(loss))
batch = NamedSharding(mesh, P("batch"))
xs, ys = tg.device_put(x, batch), tg.device_put(y, batch)
want, got, jitted = plain(params, x, y), grads(params, x, y), plain(params, xs, ys)
err = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
          for out in (got, jitted) for a, b in zip(tg.tree.leaves(want), tg.tree.leaves(out)))
run = lambda f, *a: [np.asarray(l) for l in tg.tree.leaves(f(*a))]
t_plain = _timeit(lambda: run(plain, params, x, y), 1.0)
t_shard = _timeit(lambda: run(grads, params, x, y), 1.0)
t_jit = _timeit(lambda: run(plain, params, xs, ys), 1.0)
if tg.process_index() == 0:
  print(f"{{n}} device(s) in {{tg.process_count()}} process(es): shard_map step {{t_shard * 1e3:.2f}} ms, sharded jit "
        f"step {{t_jit * 1e3:.2f}} ms, one jitted step {{t_plain * 1e3:.2f}} ms (ratios {{t_plain / t_shard:.2f}}, "
        f"{{t_plain / t_jit:.2f}}), max |difference| {{err:.1e}}", flush=True)
"""


def main() -> None:
  here = os.path.dirname(os.path.abspath(__file__))
  for n in (1, 2, 4):
    env = {**os.environ, "TRACEGRAD_NUM_CPU_DEVICES": str(n)}
    subprocess.run([sys.executable, "-c", CHILD.format(here=here)], env=env, check=True)
  mpirun = os.path.join(sysconfig.get_path("scripts"), "mpirun")
  if importlib.util.find_spec("mpi4py") and os.path.exists(mpirun):
    env = {**os.environ, "TRACEGRAD_NUM_CPU_DEVICES": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    subprocess.run([mpirun, "--oversubscribe", "-n", "2", sys.executable, "-c", CHILD.format(here=here)], env=env,
                   check=True)


if __name__ == "__main__":
  main()
