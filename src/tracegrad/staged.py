"""Control flow on a compiling device: a graph with COND, SCAN or WHILE runs as compiled stages, one before each
control-flow op (computing its operands) and one for the outputs; the op itself runs here on the host, calling its
compiled sub-graphs (each an executable of its own, so control flow nests)."""
from __future__ import annotations

import numpy as np

from .ir import Graph, Ops, UOp, graph_rewrite_many, substitute, toposort

CONTROL_FLOW = (Ops.COND, Ops.SCAN, Ops.WHILE)


def has_control_flow(graph: Graph) -> bool:
  return any(u.op in CONTROL_FLOW for u in toposort(list(graph.outputs)))


class Staged:
  def __init__(self, graph: Graph, executable):
    from .lower.schedule import INLINE
    self.exe = executable
    outs = graph_rewrite_many(list(graph.outputs), INLINE)
    order = toposort(outs)
    avail: dict[UOp, UOp] = dict(zip(graph.inputs, graph.inputs))  # known at run time -> the PARAM standing for it
    projs = {}
    for u in order:
      if u.op is Ops.PROJ: projs.setdefault(u.src[0], []).append(u)
    self.steps = []
    for h in (u for u in order if u.op in CONTROL_FLOW):
      known = list(avail)
      stage = Graph(tuple(avail[k] for k in known), tuple(substitute(list(h.src), avail)))
      results = projs.get(h, [])
      for p in results: avail[p] = UOp.param(p.shape, p.dtype)
      self.steps.append((known, stage, h, results))
    known = list(avail)
    self.final = (known, Graph(tuple(avail[k] for k in known), tuple(substitute(outs, avail))))
    self.inputs = list(graph.inputs)

  def __call__(self, leaves: list[np.ndarray]) -> list[np.ndarray]:
    vals: dict[UOp, np.ndarray] = dict(zip(self.inputs, leaves))
    for known, stage, h, results in self.steps:
      operands = self.exe(stage)([vals[k] for k in known])
      out = HOST[h.op](self.exe, operands, h.arg)
      for p in results: vals[p] = out[p.arg]
    known, final = self.final
    return self.exe(final)([vals[k] for k in known])


def _cond(exe, vals, branches):
  return exe(branches[int(np.clip(vals[0], 0, len(branches) - 1))])(vals[1:])


def _scan(exe, vals, arg):
  body, n_consts, n_carry, length, reverse = arg
  run = exe(body)
  consts, carry, xs = vals[:n_consts], list(vals[n_consts:n_consts + n_carry]), vals[n_consts + n_carry:]
  ys = [np.empty((length, *o.shape), o.dtype.np) for o in body.outputs[n_carry:]]
  for t in (reversed(range(length)) if reverse else range(length)):
    out = run([*consts, *carry, *(x[t] for x in xs)])
    carry = out[:n_carry]
    for y, v in zip(ys, out[n_carry:]): y[t] = v
  return [*carry, *ys]


def _while(exe, vals, arg):
  cond, body, n_consts = arg
  test, step = exe(cond), exe(body)
  consts, carry = vals[:n_consts], list(vals[n_consts:])
  while bool(test([*consts, *carry])[0]): carry = step([*consts, *carry])
  return carry


HOST = {Ops.COND: _cond, Ops.SCAN: _scan, Ops.WHILE: _while}
