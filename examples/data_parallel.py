"""Data-parallel training: every device takes its slice of each batch, and the gradients and the loss are averaged
over all devices, so the loss curve is the one a single device would draw. Two ways to write it:

  --mode shard_map   the step is written per device, and lax.pmean averages across devices (the default)
  --mode jit         the step is written for the whole batch, jitted; the batch is laid out over the devices
                     (device_put with a NamedSharding) and the partitioner inserts the averaging itself

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
from tracegrad.sharding import Mesh, NamedSharding, P


def main(argv=None) -> list[float]:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--steps", type=int, default=20)
  p.add_argument("--batch-size", type=int, default=64)
  p.add_argument("--lr", type=float, default=0.1)
  p.add_argument("--mode", choices=("shard_map", "jit"), default="shard_map")
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

  @tg.jit
  def global_step(model, x, y):
    value, grads = tg.value_and_grad(loss)(model, x, y)
    return value, tg.tree.map(lambda w, g: w - args.lr * g, model, grads)

  if args.mode == "shard_map":
    step = tg.shard_map(local_step, mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=(P(), P()))
  else:
    batch = NamedSharding(mesh, P("batch"))
    step = lambda model, x, y: global_step(model, tg.device_put(x, batch), tg.device_put(y, batch))
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
