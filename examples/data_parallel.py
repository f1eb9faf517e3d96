"""Data-parallel training with shard_map: every device takes its slice of each batch, and lax.pmean averages the
gradients and the loss over all devices, so the loss curve is the one a single device would draw.

  python3 examples/data_parallel.py                                   # one device
  TRACEGRAD_NUM_CPU_DEVICES=4 python3 examples/data_parallel.py       # four devices in one process
  mpirun -n 2 python3 examples/data_parallel.py                       # two processes (pip install 'tracegrad[mpi]')

Process 0 prints one line per step: `step <n> loss <value>`.
"""
from __future__ import annotations

import argparse

import numpy as np

import tracegrad as tg
import tracegrad.numpy as jnp
from tracegrad import lax, nn, random
from tracegrad.sharding import Mesh, P


def main(argv=None) -> list[float]:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--steps", type=int, default=20)
  p.add_argument("--batch-size", type=int, default=64)
  p.add_argument("--lr", type=float, default=0.1)
  args = p.parse_args(argv)

  rng = np.random.default_rng(0)                      # every process draws the same data and keeps its slices
  true_w = rng.standard_normal((8, 1)).astype(np.float32)
  model = nn.Sequential(nn.Linear(8, 16, key=random.key(0)), jnp.tanh, nn.Linear(16, 1, key=random.key(1)))
  mesh = Mesh(np.array(tg.devices()), ("batch",))

  def loss(model, x, y): return jnp.mean((model(x) - y) ** 2)

  def local_step(model, x, y):
    value, grads = tg.value_and_grad(loss)(model, x, y)
    grads = lax.pmean(grads, "batch")
    return lax.pmean(value, "batch"), tg.tree.map(lambda w, g: w - args.lr * g, model, grads)

  step = tg.shard_map(local_step, mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=(P(), P()))
  losses = []
  for n in range(args.steps):
    x = rng.standard_normal((args.batch_size, 8)).astype(np.float32)
    y = np.sin(x @ true_w)
    value, model = step(model, x, y)
    losses.append(float(value))
    if tg.distributed.process_index() == 0: print(f"step {n} loss {losses[-1]:.9g}", flush=True)
  return losses


if __name__ == "__main__":
  main()
