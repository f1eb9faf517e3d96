"""What the VIZ page shows, recorded only while VIZ is on (`start()`; `tracegrad.viz.serve` calls it).

A program is one jitted function's trace and compile, or one transform applied outside jit. Its steps are graphs as
the passes leave them: each trace, each transform's rewrite (grad, jvp, vmap, shard), each lowering pass, and the
scheduled kernels with their source and measured times. Steps are kept as plain data (numbered nodes), so recording
keeps no graph alive; a node keeps its number across the steps of a program while it is the same node, which is
what lets the page mark the nodes a pass made. When VIZ is off, every hook returns at its first line.

>>> start(); _ = tracegrad.jit(lambda x: x * 2 + 1)(tnp.ones(3)); stop()
>>> programs()[-1]["steps"][0]["name"]   # then the lowering passes, when compiled
'trace jit(<lambda>)'
>>> clear()
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref

from ..ir import Graph, Ops, UOp, toposort

MAX_NODES = 5000   # a step's graph beyond this many nodes is kept as its size only
_ON = False
_lock = threading.RLock()
_programs: list["Program"] = []
_bound: "weakref.WeakKeyDictionary[Graph, Program]" = weakref.WeakKeyDictionary()
_local = threading.local()   # the stack of programs being recorded in this thread
_ids = itertools.count(1)


class Program:
  """One program's record: steps (graphs), kernels (name, source, cost) and kernel times (sums over runs)."""

  def __init__(self, name: str):
    self.id, self.name, self.created = next(_ids), name, time.time()
    self.steps: list[dict] = []
    self.kernels: list[dict] = []
    self.runs = 0
    self._numbers: "weakref.WeakKeyDictionary[UOp, int]" = weakref.WeakKeyDictionary()
    self._next = itertools.count()

  def number(self, u: UOp) -> int:
    n = self._numbers.get(u)
    if n is None: n = self._numbers[u] = next(self._next)
    return n

  def as_dict(self) -> dict:
    return {"id": self.id, "name": self.name, "created": self.created, "steps": self.steps, "kernels": self.kernels,
            "runs": self.runs}


def on() -> bool: return _ON


def start() -> None:
  """Record from now on."""
  global _ON
  _ON = True


def stop() -> None:
  """Stop recording (what was recorded stays)."""
  global _ON
  _ON = False


def clear() -> None:
  with _lock:
    _programs.clear()


def programs() -> list[dict]:
  """Every recorded program as plain data (JSON-ready)."""
  with _lock:
    return [p.as_dict() for p in _programs]


def program(pid: int) -> Program | None:
  with _lock:
    return next((p for p in _programs if p.id == pid), None)


def _stack() -> list:
  if not hasattr(_local, "stack"): _local.stack = []
  return _local.stack


def _new(name: str) -> Program:
  p = Program(name)
  with _lock:
    _programs.append(p)
  return p


@contextlib.contextmanager
def _within(p):
  """Steps inside go to p (a Program), or nowhere (False)."""
  _stack().append(p)
  try:
    yield
  finally:
    _stack().pop()


@contextlib.contextmanager
def recording(name: str):
  """Steps recorded inside belong to a new program called name (a jitted function's trace); yields it (None when
  off)."""
  if not _ON:
    yield None
    return
  p = _new(name)
  with _within(p): yield p


def bind(graph: Graph, p: Program | None) -> None:
  """graph is p's traced graph: its lowering, kernels and runs are recorded in p."""
  if p is not None: _bound[graph] = p


def bound(graph: Graph) -> Program | None:
  """The program graph was traced for, when VIZ recorded it."""
  return _bound.get(graph) if _ON else None


@contextlib.contextmanager
def lowering(graph: Graph):
  """Lowering passes inside are steps of the program graph was traced for (none: they are not recorded)."""
  p = bound(graph)
  with _within(p or False): yield p


def quiet():
  """Nothing inside is recorded (the lowering of a control-flow body, inside its program's)."""
  return _within(False)


def step(name: str, outputs, inputs=(), kernels: dict | None = None) -> None:
  """A pass's result: the graph computing outputs (UOps) from inputs; `kernels` names the kernel that stores each
  node it holds (a schedule). Outside any program, a step starts one of its own (a transform applied outside jit)."""
  if not _ON: return
  stack = _stack()
  p = stack[-1] if stack else None
  if p is False: return
  if p is None: p = _new(name)
  outputs, inputs = list(outputs), list(inputs)
  nodes = toposort(outputs)
  prev = set(p.steps[-1]["ids"]) if p.steps and "ids" in p.steps[-1] else None
  rec: dict = {"name": name, "size": len(nodes)}
  if len(nodes) <= MAX_NODES:
    ids = [p.number(u) for u in nodes]
    rec["ids"] = ids
    rec["nodes"] = [_node(p, u, i) for u, i in zip(nodes, ids)]
    if kernels:
      for n, u in zip(rec["nodes"], nodes):
        if u in kernels: n["kernel"] = kernels[u]
    rec["outputs"] = [p.number(u) for u in outputs]
    rec["inputs"] = [p.number(u) for u in inputs]
    rec["changed"] = [] if prev is None else [i for i in ids if i not in prev]
  with _lock:
    p.steps.append(rec)


def step_for(graph: Graph, name: str, outputs, inputs=()) -> None:
  """A step of the program graph was traced for (none: not recorded)."""
  with lowering(graph): step(name, outputs, inputs)


def _node(p: Program, u: UOp, i: int) -> dict:
  arg = "" if u.arg is None or u.op is Ops.BUFFER else _short(u.arg)
  return {"id": i, "op": u.op.name.lower(), "dtype": str(u.dtype), "shape": list(u.shape), "arg": arg,
          "src": [p.number(s) for s in u.src]}


def _short(arg, n: int = 48) -> str:
  if isinstance(arg, (list, tuple)) and arg and any(isinstance(a, Graph) for a in arg):
    arg = tuple("<graph>" if isinstance(a, Graph) else a for a in arg)
  s = getattr(arg, "name", None) if callable(arg) else None
  s = s if isinstance(s, str) else repr(arg)
  return s if len(s) <= n else s[:n - 3] + "..."


def kernels(p: Program | None, items) -> None:
  """The kernels (and control-flow items) p's graph was scheduled into, with their source and estimated cost."""
  if p is None: return
  out = []
  for k in items:
    cost = k.cost() if hasattr(k, "cost") else (0, 0)
    out.append({"name": k.name, "source": getattr(k, "source", "") or "", "flops": cost[0], "bytes": cost[1],
                "ns": 0.0})
  with _lock:
    p.kernels = out
    p.runs = 0


def times(p: Program | None, ns) -> None:
  """One run's time of each kernel (ns), summed into p."""
  if p is None or len(p.kernels) != len(ns): return
  with _lock:
    for k, t in zip(p.kernels, ns): k["ns"] += float(t)
    p.runs += 1
