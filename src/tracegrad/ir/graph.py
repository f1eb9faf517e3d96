"""Graph: a traced function as inputs -> outputs, with the pytree structure of both."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .ops import Ops
from .uop import UOp, toposort


@dataclass(frozen=True, eq=False)
class Graph:
  """`inputs` are PARAM nodes (one per input leaf), `outputs` the result nodes; `in_tree`/`out_tree` are optree
  tree specs. `out_weak` records which outputs are weakly typed (Python scalars promoted)."""
  inputs: tuple[UOp, ...]
  outputs: tuple[UOp, ...]
  in_tree: Any = None
  out_tree: Any = None
  in_weak: tuple[bool, ...] = ()
  out_weak: tuple[bool, ...] = ()

  def nodes(self) -> list[UOp]: return toposort(self.outputs)

  def __str__(self) -> str:
    """A jaxpr-like listing: { lambda a:f32[3]. let b:f32[3] = sin a ... in (b) }"""
    names: dict[UOp, str] = {}
    count = [0]

    def name(u: UOp) -> str:
      if u not in names:
        n, s = count[0], ""
        count[0] += 1
        while True:
          s = chr(ord("a") + n % 26) + s
          n = n // 26 - 1
          if n < 0: break
        names[u] = s
      return names[u]

    def typ(u: UOp) -> str: return f"{u.dtype.short}[{','.join(map(str, u.shape))}]"

    ins = " ".join(f"{name(p)}:{typ(p)}" for p in self.inputs)
    body = []
    for u in self.nodes():
      if u.op is Ops.PARAM and u in names: continue
      if u.op is Ops.CONST:
        names[u] = repr(u.arg)
        continue
      args = " ".join(name(s) for s in u.src)
      arg = "" if u.arg is None or u.op in (Ops.PARAM, Ops.BUFFER) else f"[{_fmt_arg(u.arg)}]"
      what = "const" if u.op is Ops.BUFFER else ("free" if u.op is Ops.PARAM else u.op.name.lower())
      body.append(f"    {name(u)}:{typ(u)} = {what}{arg} {args}".rstrip())
    outs = ", ".join(name(o) for o in self.outputs)
    return "{ lambda " + ins + ". let\n" + "\n".join(body) + ("\n" if body else "") + f"  in ({outs}) }}"

  __repr__ = __str__


def _fmt_arg(arg) -> str:
  if isinstance(arg, tuple): return ",".join(_fmt_arg(a) if isinstance(a, tuple) else str(a) for a in arg)
  return str(arg)
