"""Complex values as pairs of reals, before scheduling: every complex node becomes two real nodes (its real and
imaginary parts), so the scheduler, the kernels and every renderer see real arithmetic only, and a complex
contraction is four real contractions on the register-blocked micro-kernel.

Where a complex value crosses a boundary (the program's inputs and outputs, a control-flow sub-graph's) it travels
packed: a real array with a trailing axis of 2 holding (re, im), which is a complex array's memory read as its
real type, so a program takes and gives numpy's complex arrays as views, without copies.

>>> from tracegrad.ir import UOp, Ops, dtypes, Graph
>>> z = UOp.param((3,), dtypes.complex64)
>>> split_complex(Graph((z,), (z * z,))).inputs[0].shape
(3, 2)
"""
from __future__ import annotations

import numpy as np

from ..devices import host_linalg
from ..ir import Buffer, Graph, Ops, UOp
from ..ir.dtypes import bool_, void
from ..ir.ops import MOVEMENT, HostCall
from ..ir.shapes import multi_avals


class ComplexUnsupported(NotImplementedError):
  """A complex value reaches an op the pair form has no rule for."""


def has_complex(graph: Graph) -> bool:
  """Whether any value of graph (or of its control flow's sub-graphs) is complex."""
  return any(u.dtype.is_complex for u in graph.inputs) or any(_any_complex(u) for u in graph.nodes())


def _any_complex(u: UOp) -> bool:
  if u.dtype.is_complex: return True
  if u.op in _HOST: return _host_complex(u)
  if u.op in (Ops.COND, Ops.SCAN, Ops.WHILE):
    subs = u.arg if u.op is Ops.COND else (u.arg[0],) if u.op is Ops.SCAN else u.arg[:2]
    return any(has_complex(g) for g in subs)
  return False


def pack(re: UOp, im: UOp) -> UOp:
  """The parts as one real array with a trailing axis of 2."""
  s = re.shape + (1,)
  return UOp.concat([re.reshape(s), im.reshape(s)], len(re.shape))


def unpack(p: UOp) -> tuple[UOp, UOp]:
  shape = p.shape[:-1]
  whole = [(0, n, 1) for n in shape]
  return tuple(p.slice(whole + [(i, i + 1, 1)]).reshape(shape) for i in (0, 1))


def _const(u: UOp) -> tuple[UOp, UOp]:
  r = u.dtype.real
  v = complex(u.arg)
  return UOp.const(r, v.real), UOp.const(r, v.imag)


def _buffer(u: UOp) -> tuple[UOp, UOp]:
  data = np.ascontiguousarray(u.arg.data)
  return unpack(UOp.buffer(Buffer(data.view(u.dtype.real.np).reshape(data.shape + (2,)))))


def _divide(a, b, c, d) -> tuple[UOp, UOp]:
  """(a + ib) / (c + id) by Smith's method, branch for branch as numpy divides, so inf and nan come out alike."""
  ac, ad = _fabs(c), _fabs(d)
  wide = _ge(ac, ad)                   # |c| >= |d| (false where either is nan)
  zero = _eq(ac, _zero(ac)).alu(Ops.AND, _eq(ad, _zero(ad)))
  # |c| >= |d|: r = d / c, s = 1 / (c + d r); else r = c / d, s = 1 / (d + c r)
  r = wide.where(d, c).alu(Ops.DIV, wide.where(c, d))
  s = _one(c).alu(Ops.DIV, wide.where(c, d) + wide.where(d, c) * r)
  re = wide.where((a + b * r) * s, (a * r + b) * s)
  im = wide.where((b - a * r) * s, (b * r - a) * s)
  return zero.where(a.alu(Ops.DIV, ac), re), zero.where(b.alu(Ops.DIV, ac), im)


def _fabs(x: UOp) -> UOp: return _lt(x, _zero(x)).where(-x, x) + _zero(x)   # + 0 clears the sign of -0.0
def _lt(a: UOp, b: UOp) -> UOp: return a.alu(Ops.CMPLT, b)
def _ge(a: UOp, b: UOp) -> UOp: return _lt(a, b).alu(Ops.XOR, UOp.const(bool_, True, a.shape)).alu(
  Ops.AND, _eq(a, a)).alu(Ops.AND, _eq(b, b))
def _eq(a: UOp, b: UOp) -> UOp: return a.alu(Ops.CMPEQ, b)
def _one(x: UOp) -> UOp: return UOp.const(x.dtype, 1.0, x.shape)
def _zero(x: UOp) -> UOp: return UOp.const(x.dtype, 0.0, x.shape)


class _Splitter:
  def __init__(self):
    self.parts: dict[UOp, tuple[UOp, UOp]] = {}   # a complex node's (re, im)
    self.real: dict[UOp, UOp] = {}                # a real node rebuilt on split sources

  def graph(self, g: Graph) -> Graph:
    ins = []
    for p in g.inputs:
      if p.dtype.is_complex:
        q = UOp.param(p.shape + (2,), p.dtype.real)
        self.parts[p] = unpack(q)
        ins.append(q)
      else:
        self.real[p] = p
        ins.append(p)
    outs = [self.packed(o) for o in g.outputs]
    return Graph(tuple(ins), tuple(outs), g.in_tree, g.out_tree, g.in_weak, g.out_weak)

  def packed(self, u: UOp) -> UOp:
    self.walk(u)
    return pack(*self.parts[u]) if u.dtype.is_complex else self.real[u]

  def walk(self, root: UOp) -> None:
    stack = [(root, False)]
    while stack:
      u, ready = stack.pop()
      if u in self.parts or u in self.real: continue
      if not ready:
        stack.append((u, True))
        stack.extend((s, False) for s in u.src if s not in self.parts and s not in self.real)
        continue
      if u.dtype.is_complex: self.parts[u] = self.split(u)
      else: self.real[u] = self.rebuild(u)

  def rebuild(self, u: UOp) -> UOp:
    """A real node on the split forms of its sources."""
    if u.op in _HOST and _host_complex(u): return self.host(u)
    if not any(s.dtype.is_complex for s in u.src) and u.op not in _WITH_GRAPHS:
      src = tuple(self.real[s] for s in u.src)
      return u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
    if u.op is Ops.REAL: return self.parts[u.src[0]][0]
    if u.op is Ops.IMAG: return self.parts[u.src[0]][1]
    if u.op is Ops.CAST:
      re, im = self.parts[u.src[0]]
      if u.dtype is bool_: return re.alu(Ops.CMPNE, _zero(re)).alu(Ops.OR, im.alu(Ops.CMPNE, _zero(im)))
      return re.cast(u.dtype)
    if u.op in (Ops.CMPEQ, Ops.CMPNE):
      (a, b), (c, d) = self.parts[u.src[0]], self.parts[u.src[1]]
      if u.op is Ops.CMPEQ: return _eq(a, c).alu(Ops.AND, _eq(b, d))
      return a.alu(Ops.CMPNE, c).alu(Ops.OR, b.alu(Ops.CMPNE, d))
    if u.op in _WITH_GRAPHS: return self.control(u)
    raise ComplexUnsupported(f"no pair form for {u.op.name.lower()} of complex operands")

  def control(self, u: UOp) -> UOp:
    """COND, SCAN or WHILE with complex operands or results: sub-graphs split, complex values passed packed."""
    src = tuple(self.packed(s) for s in u.src)
    if u.op is Ops.COND: arg = tuple(split_complex(g) for g in u.arg)
    elif u.op is Ops.SCAN: arg = (split_complex(u.arg[0]), *u.arg[1:])
    else: arg = (split_complex(u.arg[0]), split_complex(u.arg[1]), *u.arg[2:])
    return UOp(u.op, u.dtype, src, arg)

  def host(self, u: UOp) -> UOp:
    """A host call (CALLBACK, or LINALG, which the host computes) with complex operands or results: one taking and
    giving them packed, viewing them as numpy's complex arrays around the call."""
    avals = tuple(multi_avals(u.op, u.src, u.arg))
    if u.op is Ops.LINALG:
      kind, params = u.arg
      inner, name, vmap_method, borrows = (lambda vals: host_linalg.run(kind, params, vals, avals)), f"linalg {kind}", \
        None, True
    else:
      inner, name, vmap_method, borrows = u.arg, u.arg.name, u.arg.vmap_method, u.arg.borrows
    cin = [s.dtype.np if s.dtype.is_complex else None for s in u.src]
    cout = [d.np if d.is_complex else None for _, d in avals]

    def fn(vals: list) -> list:
      outs = inner([v if c is None else from_packed(v, c) for v, c in zip(vals, cin)])
      return [np.asarray(r) if c is None else to_packed(np.asarray(r, c)) for r, c in zip(outs, cout)]

    results = tuple((tuple(shape) + (2,), d.real) if d.is_complex else (shape, d) for shape, d in avals)
    call = HostCall(fn, results, name, vmap_method, borrows)
    return UOp(Ops.CALLBACK, void, tuple(self.packed(s) for s in u.src), call)

  def split(self, u: UOp) -> tuple[UOp, UOp]:
    op, P = u.op, self.parts
    r = u.dtype.real
    if op is Ops.CONST: return _const(u)
    if op is Ops.BUFFER: return _buffer(u)
    if op is Ops.PROJ:
      if u.src[0].op not in _WITH_GRAPHS and u.src[0].op not in _HOST: raise ComplexUnsupported(f"no pair form for {u.src[0].op.name.lower()}")
      return unpack(self.real[u.src[0]].proj(u.arg))
    if op is Ops.COMPLEX: return self.real[u.src[0]], self.real[u.src[1]]
    if op is Ops.CAST:
      s = u.src[0]
      if s.dtype.is_complex: return tuple(x.cast(r) for x in P[s])
      x = self.real[s].cast(r)
      return x, _zero(x)
    if op is Ops.NEG: return tuple(-x for x in P[u.src[0]])
    if op in (Ops.ADD, Ops.SUB):
      (a, b), (c, d) = P[u.src[0]], P[u.src[1]]
      return a.alu(op, c), b.alu(op, d)
    if op is Ops.MUL:
      (a, b), (c, d) = P[u.src[0]], P[u.src[1]]
      return a * c - b * d, a * d + b * c
    if op is Ops.DIV: return _divide(*P[u.src[0]], *P[u.src[1]])
    if op is Ops.RECIP:
      c, d = P[u.src[0]]
      return _divide(_one(c), _zero(c), c, d)
    if op is Ops.WHERE:
      cond = self.real[u.src[0]]
      return tuple(cond.where(x, y) for x, y in zip(P[u.src[1]], P[u.src[2]]))
    if op is Ops.REDUCE_SUM: return self.sum(u)
    if op is Ops.FFT:
      from .fft_stages import fft_pairs
      if (axis := _swapped_last(u.src[0])) is not None:   # along another axis: no transposes, the stages run there
        perm = u.src[0].arg
        return tuple(x.permute(perm) for x in fft_pairs(*P[u.src[0].src[0]], u.arg, axis))
      return fft_pairs(*P[u.src[0]], u.arg)
    if op in MOVEMENT and op is not Ops.CONCAT: return tuple(UOp(op, r, (x,), u.arg) for x in P[u.src[0]])
    if op is Ops.CONCAT: return tuple(UOp.concat([P[s][i] for s in u.src], u.arg) for i in (0, 1))
    if op is Ops.GATHER: return tuple(x.gather(self.real[u.src[1]]) for x in P[u.src[0]])
    if op is Ops.SCATTER:
      if u.arg not in ("add", "set"): raise ComplexUnsupported(f"no pair form for a complex scatter-{u.arg}")
      idx = self.real[u.src[1]]
      return tuple(x.scatter(idx, y, u.arg) for x, y in zip(P[u.src[0]], P[u.src[2]]))
    if op in (Ops.DETACH, Ops.SHARDING_CONSTRAINT, Ops.OPTIMIZATION_BARRIER) or \
        op is Ops.ALL_REDUCE and u.arg[2] == "sum" or op in (Ops.ALL_GATHER, Ops.REDUCE_SCATTER, Ops.PPERMUTE,
                                                             Ops.ALL_TO_ALL):
      return tuple(UOp(op, r, (x,), u.arg) for x in P[u.src[0]])
    raise ComplexUnsupported(f"no pair form for complex {op.name.lower()}")

  def sum(self, u: UOp) -> tuple[UOp, UOp]:
    """A sum; a sum of products is four real sums of products, each a contraction the scheduler recognises."""
    x, axes = u.src[0], u.arg
    if x.op is Ops.MUL:
      (a, b), (c, d) = self.parts[x.src[0]], self.parts[x.src[1]]
      s = lambda p, q: (p * q).reduce(Ops.REDUCE_SUM, axes)
      return s(a, c) - s(b, d), s(a, d) + s(b, c)
    return tuple(p.reduce(Ops.REDUCE_SUM, axes) for p in self.parts[x])


def _swapped_last(u: UOp) -> int | None:
  """The axis a PERMUTE swaps with the last one (leaving the others in place), else None."""
  if u.op is not Ops.PERMUTE: return None
  last, perm = u.ndim - 1, u.arg
  a = perm[last]
  ok = perm[a] == last and all(p == i for i, p in enumerate(perm) if i not in (a, last))
  return a if ok and a != last else None


_WITH_GRAPHS = frozenset({Ops.COND, Ops.SCAN, Ops.WHILE})
_HOST = frozenset({Ops.CALLBACK, Ops.LINALG})


def _host_complex(u: UOp) -> bool:
  return any(s.dtype.is_complex for s in u.src) or any(d.is_complex for _, d in multi_avals(u.op, u.src, u.arg))


def split_complex(graph: Graph) -> Graph:
  """graph with every complex value as a pair of real ones, complex inputs and outputs packed (trailing axis of 2);
  graph itself when it holds no complex value."""
  if not has_complex(graph): return graph
  return _Splitter().graph(graph)


def complex_io(graph: Graph) -> bool:
  """Whether graph takes or gives a complex array (its program then takes and gives their packed views)."""
  return any(u.dtype.is_complex for u in graph.inputs) or any(u.dtype.is_complex for u in graph.outputs)


def to_packed(a: np.ndarray) -> np.ndarray:
  """A complex array's memory as its real type, (re, im) on a trailing axis of 2."""
  a = np.ascontiguousarray(a)
  return a.view(a.real.dtype).reshape(a.shape + (2,))


def from_packed(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
  """The complex array a packed real one holds."""
  return np.ascontiguousarray(a).view(dtype).reshape(a.shape[:-1])
