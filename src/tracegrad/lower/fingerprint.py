"""A graph's fingerprint: a digest that is the same in every process for the same computation, so a program
compiled once is found again on disk without scheduling it (the lowering is deterministic).

It covers a graph node by node: op, dtype, shape, argument, which nodes it reads, the bytes of its constants; inputs
by position, control flow's sub-graphs by the fingerprints of their prepared forms (calls inlined, schedule.prepare).
It also covers tracegrad's own code, so an edited lowering never finds an old program. The lowering is a function
of the graph and that code, so a graph as traced and the same graph prepared each name its program (by different
digests); a traced graph may hold what has no stable form (a Python function) where its prepared form does not.

>>> from tracegrad.lower.schedule import prepare
>>> twice = lambda f: fingerprint(prepare(tracegrad.make_graph(f)(tnp.ones(3))))
>>> twice(lambda x: x * 2) == twice(lambda y: y * 2), twice(lambda x: x * 2) == twice(lambda x: x * 3)
(True, False)
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from ..ir import Buffer, Graph, Ops, toposort
from ..ir.dtypes import DType
from .schedule import prepare

CONST_BYTES_MAX = 1 << 20   # a graph holding more constant bytes is not fingerprinted (its record would hold them)
# calls whose first argument, their function's graph, is all the lowering reads (prepare inlines it); the rest of their
# argument (a Python rule for jvp, vjp or an XLA composite's name) concerns only transforms
LOWERED_AS_THEIR_GRAPH = frozenset({Ops.CUSTOM_JVP, Ops.CUSTOM_VJP, Ops.COMPOSITE})


class _Unstable(Exception):
  """An argument with no form that is the same in every process (a Python function)."""


@lru_cache(maxsize=None)
def code_digest() -> str:
  """The digest of tracegrad's Python sources."""
  root, h = Path(__file__).resolve().parent.parent, hashlib.sha256()
  for f in sorted(root.rglob("*.py")):
    h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
  return h.hexdigest()


def fingerprint(graph: Graph) -> str | None:
  """The hex digest of `graph`'s computation (as traced, or from schedule.prepare) and of the code lowering it; None
  when the graph holds an argument with no stable form or more than CONST_BYTES_MAX bytes of constants."""
  h = hashlib.sha256(code_digest().encode())
  try:
    _digest(graph, h, [0])
  except _Unstable:
    return None
  return h.hexdigest()


def _digest(graph: Graph, h, const_bytes: list[int]) -> None:
  order = toposort(list(graph.outputs))
  num = {u: i for i, u in enumerate(order)}
  inputs = {p: i for i, p in enumerate(graph.inputs)}
  h.update(f"inputs {[(p.dtype.name, p.shape) for p in graph.inputs]}\n".encode())
  for u in order:
    if u.op is Ops.PARAM:
      if u not in inputs: raise _Unstable   # a value from outside: the scheduler names it
      arg = f"input {inputs[u]}"
    elif u.op is Ops.BUFFER: arg = _buffer(u.arg, h, const_bytes)
    elif u.op is Ops.LINALG: raise _Unstable   # its program calls the host, which a record on disk cannot hold
    elif u.op in LOWERED_AS_THEIR_GRAPH: arg = _arg(u.arg[0], h, const_bytes)
    else: arg = _arg(u.arg, h, const_bytes)
    h.update(f"{u.op.name} {u.dtype.name} {u.shape} {arg} {[num[s] for s in u.src]}\n".encode())
  h.update(f"outputs {[num[o] for o in graph.outputs]}\n".encode())


def _buffer(b: Buffer, h, const_bytes: list[int]) -> str:
  data = b.data
  const_bytes[0] += data.nbytes
  if const_bytes[0] > CONST_BYTES_MAX: raise _Unstable
  h.update(data.tobytes())
  return f"buffer {data.dtype.str} {data.shape}"


def _arg(a, h, const_bytes: list[int]) -> str:
  if a is None or isinstance(a, (bool, int, str)): return repr(a)
  if isinstance(a, float): return a.hex()
  if isinstance(a, (tuple, list)): return "(" + ",".join(_arg(x, h, const_bytes) for x in a) + ")"
  if isinstance(a, (Ops, DType)): return a.name
  if isinstance(a, Graph):
    sub = hashlib.sha256()
    _digest(prepare(a), sub, const_bytes)
    return "graph " + sub.hexdigest()
  raise _Unstable
