"""Running one program on every device of a mesh (SPMD): the program's collectives cut it into stages; each device
runs a stage on a thread of its own (a compiled call releases the GIL), then the host combines the devices' operands
of the collectives that stage ends with, and hands each device its result for the next stage.

The plan (the stages, each a Graph compiled once) is made once per traced program and reused.
"""
from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from ..devices.cpu import CPUDevice, limit_threads
from ..ir import Graph, Ops, UOp, substitute, toposort
from ..ir.ops import COLLECTIVE
from . import distributed


class Stage:
  """Computes `targets` (operands of the collectives the stage ends with, or the program's outputs) from the values
  known so far (`needs`: the program's inputs and earlier collectives' results)."""

  def __init__(self, needs: list[UOp], targets: list[UOp]):
    params = [UOp.param(u.shape, u.dtype) for u in needs]
    self.needs, self.targets = needs, targets
    self.graph = Graph(tuple(params), tuple(substitute(targets, dict(zip(needs, params)))))


class Plan:
  """The stages of `graph` in order, and after each, the collectives the host then performs; `compile` makes a stage's
  Graph into something whose `run(leaves)` gives its outputs (the running layer's executable)."""

  def __init__(self, graph: Graph, compile: Callable[[Graph], Any]):
    self.graph, self.compile = graph, compile
    nodes = toposort(list(graph.outputs))
    pending = {u: None for u in nodes if u.op in COLLECTIVE}   # ordered, with fast membership
    known = list(graph.inputs)
    self.steps: list[tuple[Stage, list[UOp]]] = []
    while pending:
      blocked = set()
      for u in nodes:   # a collective is ready when nothing below it is a pending collective
        if any(s in blocked or s in pending for s in u.src): blocked.add(u)
      ready = [u for u in pending if u not in blocked]
      operands = list(dict.fromkeys(u.src[0] for u in ready if u.src))
      self.steps.append((Stage(_below(operands, known), operands), ready))
      known += ready
      pending = {u: None for u in pending if u not in ready}
    self.final = Stage(_below(list(graph.outputs), known), list(graph.outputs))


def _below(targets: list[UOp], known: list[UOp]) -> list[UOp]:
  """The known nodes `targets` read (the rest below them is recomputed from those)."""
  have = set(known)
  seen, out, stack = set(), [], list(targets)
  while stack:
    u = stack.pop()
    if u in seen: continue
    seen.add(u)
    if u in have: out.append(u)
    else: stack.extend(u.src)
  return sorted(out, key=known.index)


def execute(plan: Plan, mesh, inputs: dict) -> dict:
  """{device: output values} for {device: input values (numpy, in the order of the graph's inputs)}, over the
  devices of this process; across processes, each runs its own and the collectives' operands go through MPI."""
  devices = [d for d in mesh.devices.flat if d in inputs]            # this process's; other processes run theirs
  coords = {mesh.devices[pos]: dict(zip(mesh.axis_names, pos)) for pos in np.ndindex(*mesh.devices.shape)}
  values = {d: dict(zip(plan.graph.inputs, inputs[d])) for d in devices}
  pool = _pool(len(devices), isinstance(devices[0], CPUDevice) if devices else False)

  def stage(s: Stage) -> dict:
    ex = plan.compile(s.graph)
    futures = {d: pool.submit(ex.run, [values[d][u] for u in s.needs]) for d in devices}
    return {d: dict(zip(s.targets, f.result())) for d, f in futures.items()}

  for s, collectives in plan.steps:
    operands = stage(s) if s.targets else {d: {} for d in devices}
    if distributed.process_count() > 1:   # every device's operands, from every process
      by_id = {d.id: d for d in mesh.devices.flat}
      gathered = distributed.allgather({d.id: [ops[t] for t in s.targets] for d, ops in operands.items()})
      operands = {by_id[i]: dict(zip(s.targets, vals)) for part in gathered for i, vals in part.items()}
    for c in collectives:
      for d in devices: values[d][c] = _collective(c, d, operands, coords)
  outs = stage(plan.final)
  return {d: [outs[d][u] for u in plan.graph.outputs] for d in devices}


@functools.lru_cache(maxsize=None)
def _pool(n: int, cpu: bool) -> ThreadPoolExecutor:
  """n threads kept for the life of the process (a kernel's OpenMP team belongs to the thread that starts it, and
  starting one per call costs more than a small step), each given its share of the cores on the cpu device."""
  share = max(1, (os.cpu_count() or 1) // n)
  return ThreadPoolExecutor(max_workers=n, thread_name_prefix="tracegrad-device",
                            initializer=limit_threads if cpu else None, initargs=(share,) if cpu else ())


def _group(c: UOp, d, coords: dict) -> list:
  """The devices taking part with d in a collective over axis c.arg[0]: those differing from d only along it, in
  the order of their index on it."""
  name = c.arg[0]
  others = {k: v for k, v in coords[d].items() if k != name}
  members = [e for e in coords if all(coords[e][k] == v for k, v in others.items())]
  return sorted(members, key=lambda e: coords[e][name])


def _collective(c: UOp, d, operands: dict, coords: dict) -> np.ndarray:
  name = c.arg[0]
  me = coords[d][name]
  if c.op is Ops.AXIS_INDEX: return np.asarray(me, np.int32)
  group = [operands[e][c.src[0]] for e in _group(c, d, coords)]
  if c.op is Ops.ALL_REDUCE:
    out = {"sum": np.add, "max": np.maximum, "min": np.minimum}[c.arg[2]].reduce(np.stack(group), axis=0)
  elif c.op is Ops.ALL_GATHER:
    axis, tiled = c.arg[2], c.arg[3]
    out = np.concatenate(group, axis) if tiled else np.stack(group, axis)
  elif c.op is Ops.REDUCE_SCATTER:
    axis, tiled = c.arg[2], c.arg[3]
    mine = np.split(np.add.reduce(np.stack(group), axis=0), len(group), axis)[me]
    out = mine if tiled else np.take(mine, 0, axis)
  elif c.op is Ops.ALL_TO_ALL:
    split, concat = c.arg[2], c.arg[3]
    out = np.concatenate([np.split(x, len(group), split)[me] for x in group], concat)
  else:   # PPERMUTE
    src = {dst: s for s, dst in c.arg[2]}.get(me)
    out = np.zeros_like(group[0]) if src is None else group[src]
  return np.asarray(out, dtype=c.dtype.np, order="C")   # (ascontiguousarray would make a scalar 1-d)
