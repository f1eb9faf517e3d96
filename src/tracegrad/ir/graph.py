"""Graph: a traced function as inputs -> outputs, with the pytree structure of both."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from .ops import Ops
from .uop import UOp, substitute, toposort


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

  def __call__(self, *args: UOp) -> list[UOp]:
    """The outputs with the inputs replaced by `args` (inlining the graph where `args` live)."""
    return substitute(list(self.outputs), dict(zip(self.inputs, args)))

  def closed(self, hoist: bool = False) -> tuple["Graph", list[UOp]]:
    """This graph with every value it uses from outside (a traced node that depends on no input; with `hoist`, also
    a constant it computes, so that a loop body does not compute it again each step) made an input.

    Returns the closed graph, whose inputs are the lifted values' placeholders then the old inputs, and the lifted
    values themselves. Sub-graphs of control flow must be closed, so that rewrites of the outer graph reach them."""
    order = toposort(self.outputs)
    dep = set(self.inputs)
    for u in order:
      if u not in dep and any(s in dep for s in u.src): dep.add(u)
    free: dict[UOp, None] = {}
    for u in order:
      if u in dep: free.update((s, None) for s in u.src if s not in dep and (s.traced or hoist and _computed(s)))
    free.update((o, None) for o in self.outputs if o.traced and o not in dep)
    free = list(free)
    if not free: return self, []
    params = [UOp.param(f.shape, f.dtype) for f in free]
    outs = substitute(list(self.outputs), dict(zip(free, params)))
    return Graph(tuple(params) + self.inputs, tuple(outs), None, self.out_tree, (False,) * len(params) + self.in_weak,
                 self.out_weak), free

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
    nodes = self.nodes()
    reads: dict[UOp, dict[int, UOp]] = {}   # an op with several results -> its PROJ nodes, which print as its binders
    for u in nodes:
      if u.op is Ops.PROJ: reads.setdefault(u.src[0], {})[u.arg] = u
    body = []
    for u in nodes:
      if u.op is Ops.PARAM and u in names or u.op is Ops.PROJ and u.src[0] in reads: continue
      if u.op is Ops.CONST:
        names[u] = repr(u.arg)
        continue
      args = " ".join(name(s) for s in u.src)
      what, arg = _op_text(u)
      if u in reads:
        got = reads[u]
        binders = " ".join(f"{name(got[i])}:{typ(got[i])}" if i in got else "_" for i in range(max(got) + 1))
      else:
        binders = f"{name(u)}:{typ(u)}"
      body.append(f"    {binders} = {what}{arg} {args}".rstrip())
    outs = ", ".join(name(o) for o in self.outputs)
    return "{ lambda " + ins + ". let\n" + "\n".join(body) + ("\n" if body else "") + f"  in ({outs}) }}"

  __repr__ = __str__


def composite(name: str, build: Callable, *srcs: UOp, **static) -> list[UOp]:
  """The results of build(*srcs, **static) (UOps -> a UOp or a tuple of them): where a source is traced, those of one
  COMPOSITE node named `name`, whose body is made once per function, static values (hashable) and sources' shapes
  and dtypes, so equal calls share one node; on concrete sources, build's own nodes."""
  if not any(s.traced for s in srcs):
    out = build(*srcs, **static)
    return [out] if isinstance(out, UOp) else list(out)
  body = _composite_body(build, tuple((s.shape, s.dtype) for s in srcs), tuple(sorted(static.items())))
  return UOp.multi(Ops.COMPOSITE, srcs, (body, name))


@functools.lru_cache(maxsize=1024)
def _composite_body(build: Callable, avals: tuple, static: tuple) -> Graph:
  params = [UOp.param(shape, dtype) for shape, dtype in avals]
  out = build(*params, **dict(static))
  return Graph(tuple(params), (out,) if isinstance(out, UOp) else tuple(out))


def _op_text(u: UOp) -> tuple[str, str]:
  """How a node's op and argument print: a composite by its name; custom derivatives by their body and rules."""
  if u.op is Ops.COMPOSITE: return u.arg[1], ""
  if u.op is Ops.BUFFER: return "const", ""
  if u.op is Ops.PARAM: return "free", ""
  if u.op is Ops.CUSTOM_JVP: return "custom_jvp", f"[{_fmt_arg(u.arg[0])},jvp={_fmt_arg(u.arg[1])}]"
  if u.op is Ops.CUSTOM_VJP:
    return "custom_vjp", f"[{_fmt_arg(u.arg[0])},fwd={_fmt_arg(u.arg[1])},bwd={_fmt_arg(u.arg[2])}]"
  return u.op.name.lower(), "" if u.arg is None else f"[{_fmt_arg(u.arg)}]"


def _fmt_arg(arg) -> str:
  if isinstance(arg, Graph): return str(arg).replace("\n", "\n    ")
  if callable(arg): return getattr(arg, "__name__", "fn")
  if isinstance(arg, tuple): return ",".join(_fmt_arg(a) for a in arg)
  return str(arg)


def _computed(u: UOp) -> bool:
  """Whether u computes something, rather than being a constant, a buffer or an iota (maybe broadcast or reshaped)."""
  while u.op in (Ops.BROADCAST, Ops.RESHAPE): u = u.src[0]
  return u.op not in (Ops.CONST, Ops.BUFFER, Ops.IOTA, Ops.PARAM)
