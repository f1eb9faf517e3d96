"""Control flow on a compiling device: a graph with COND, SCAN or WHILE runs as compiled stages, one before each
control-flow op (computing its operands) and one for the outputs; the op itself runs here on the host, calling its
compiled sub-graphs (each an executable of its own, so control flow nests)."""
from __future__ import annotations

import numpy as np

from .devices.interp import CONTROL_FLOW
from .ir import Graph, Ops, UOp, graph_rewrite_many, substitute, toposort


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
      out = CONTROL_FLOW[h.op](lambda g, v: self.exe(g)(v), operands, h.arg)
      for p in results: vals[p] = out[p.arg]
    known, final = self.final
    return self.exe(final)([vals[k] for k in known])
