"""UOp: the immutable, hash-consed node of every graph.

Building the same node twice returns the same object, so identity is equality and graphs share structure.

>>> from tracegrad.ir import UOp, Ops, dtypes
>>> x = UOp.param((3,), dtypes.float32)
>>> (x + x) is (x + x)
True
"""
from __future__ import annotations

import itertools
import math
import weakref

import numpy as np

from .dtypes import _BY_NP, DType, as_dtype, bool_, complex_of, max_value, min_value, void
from .ops import COLLECTIVE, COMPARE, PARTS, Ops
from .shapes import Shape, fmt, infer_shape, multi_avals


class Buffer:
  """A concrete array held by a BUFFER node; compared by identity, never mutated. `node` is a weak reference to its
  BUFFER node: a buffer is unique, so it keys its own node rather than the shared cache.

  A buffer may also have a copy in a device's memory (`resident`: an object with `fetch()`, giving the numpy
  array, and `wait()`); one a device computed lives there alone until `data` copies it to the host on first use."""
  __slots__ = ("_data", "shape", "dtype", "resident", "node", "__weakref__")

  def __init__(self, data: np.ndarray | None = None, resident=None, shape: Shape = (), dtype: np.dtype | None = None):
    if data is not None:
      data.setflags(write=False)
      shape, dtype = data.shape, data.dtype
    self._data, self.shape, self.dtype, self.resident, self.node = data, shape, dtype, resident, None

  @property
  def data(self) -> np.ndarray:
    if self._data is None:
      data = self.resident.fetch().reshape(self.shape)
      data.flags.writeable = False
      self._data = data
    return self._data

  def contiguous(self) -> np.ndarray:
    """`data` as one C-contiguous run, which a compiled program reads: a view of other memory (a broadcast's zero
    strides, a transpose) is replaced by a contiguous copy of the same values once, not copied again at every call."""
    data = self.data
    if not data.flags.c_contiguous:
      data = np.ascontiguousarray(data)
      data.flags.writeable = False
      self._data = data
    return data

  def wait(self) -> None:
    """Return once the device has computed it."""
    if self._data is None: self.resident.wait()

  def __repr__(self) -> str: return f"Buffer({self.dtype}{fmt(self.shape)})"


def key_arg(op: Ops, arg):
  """arg as a node's identity holds it: 0.0 and -0.0 (and 1, 1.0, True) are equal as Python values but are
  different constants."""
  if op is Ops.CONST: return (type(arg), arg, math.copysign(1.0, arg) if isinstance(arg, float) else 0, repr(arg))
  return arg


_NOT_CONST = object()


def _const_value(u: "UOp"):
  """The value of a constant node or of a broadcast constant, else _NOT_CONST."""
  if u.op is Ops.CONST: return u.arg
  if u.op is Ops.BROADCAST and u.src[0].op is Ops.CONST: return u.src[0].arg
  return _NOT_CONST


def _is(v, want: float) -> bool:
  """v is the constant `want`, with want's sign when it is a float zero."""
  return type(v) in (int, float, bool) and v == want and (not isinstance(v, float) or math.copysign(1.0, v) ==
                                                          math.copysign(1.0, want))


def _identity(op: Ops, a: "UOp", b: "UOp") -> "UOp | None":
  """The operand that `a op b` equals exactly, when the other is that op's identity element (x * 1, x / 1, x - 0,
  x + -0.0 and integer x + 0, x & True, x | False, x != False), else None."""
  if a.shape != b.shape or a.dtype is not b.dtype: return None
  va, vb = _const_value(a), _const_value(b)
  if va is _NOT_CONST and vb is _NOT_CONST: return None
  zero = 0 if a.dtype.is_int else -0.0
  if op is Ops.MUL: return a if _is(vb, 1) else b if _is(va, 1) else None
  if op is Ops.ADD: return a if _is(vb, zero) else b if _is(va, zero) else None
  if op is Ops.DIV: return a if _is(vb, 1) else None
  if op is Ops.SUB: return a if _is(vb, 0) and (a.dtype.is_int or _is(vb, 0.0)) else None
  if not a.dtype.is_bool: return None
  if op is Ops.AND: return a if vb is True else b if va is True else None
  if op in (Ops.OR, Ops.CMPNE, Ops.XOR): return a if vb is False else b if va is False else None
  if op is Ops.CMPEQ: return a if vb is True else b if va is True else None
  return None


def _scalar(u: "UOp") -> "UOp":
  """The scalar CONST of a constant or broadcast constant."""
  return u if u.op is Ops.CONST else u.src[0]


def _exact_cast(dtype: DType, src, arg) -> "UOp | None":
  c = src[0]
  if _const_value(c) is _NOT_CONST or c.dtype.is_inexact or dtype.is_complex: return None
  v = _scalar(c).arg
  if not (dtype.is_float or dtype.is_int and min_value(dtype) <= v <= max_value(dtype)): return None
  return UOp.const(dtype, v, c.shape)   # an integer or bool constant as a float or a wide enough integer: exact


def _where(dtype: DType, src, arg) -> "UOp | None":
  c = _const_value(src[0])
  if c is _NOT_CONST or src[1].shape != src[0].shape or src[2].shape != src[0].shape: return None
  return src[1] if c else src[2]


# Trivial algebra folded as a node is built, so that no graph (traced, transformed or rewritten) carries such steps.
# Each row gives the node to use instead, or None; it runs after the node's shape was checked.
_FOLDS = {
  **{op: (lambda op: lambda dtype, src, arg: _identity(op, *src))(op)
     for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE, Ops.CMPEQ)},
  Ops.NEG: lambda dtype, src, arg: src[0].src[0] if src[0].op is Ops.NEG else None,
  Ops.CAST: _exact_cast,
  Ops.WHERE: _where,
  Ops.RESHAPE: lambda dtype, src, arg: src[0].src[0].reshape(arg) if src[0].op is Ops.RESHAPE else None,
  Ops.BROADCAST: lambda dtype, src, arg: src[0].src[0].broadcast(arg) if src[0].op is Ops.BROADCAST else
    _scalar(src[0].src[0]).broadcast(arg) if src[0].op is Ops.RESHAPE and src[0].src[0].op is Ops.CONST else None,
  Ops.PERMUTE: lambda dtype, src, arg: src[0].src[0].permute(tuple(src[0].arg[p] for p in arg))
    if src[0].op is Ops.PERMUTE else None,
}


class UOp:
  __slots__ = ("op", "dtype", "src", "arg", "shape", "depth", "traced", "__weakref__")
  _cache: "weakref.WeakValueDictionary[tuple, UOp]" = weakref.WeakValueDictionary()
  _uids = itertools.count()

  def __new__(cls, op: Ops, dtype: DType, src: tuple = (), arg=None):
    if op is Ops.BUFFER and not src: return UOp._buffer(dtype, arg)
    src = tuple(src)
    key = (op, dtype, src, key_arg(op, arg))
    if (hit := UOp._cache.get(key)) is not None: return hit
    shape = infer_shape(op, dtype, src, arg)
    if (fold := _FOLDS.get(op)) is not None and (same := fold(dtype, src, arg)) is not None: return same
    self = object.__new__(cls)
    # derived, like shape: the longest path to a leaf, and whether a PARAM lies below
    depth = 1 + max((s.depth for s in src), default=-1)
    traced = op is Ops.PARAM or op in COLLECTIVE or any(s.traced for s in src)   # a collective needs its axis
    _fill(self, op, dtype, src, arg, shape, depth, traced)
    UOp._cache[key] = self
    return self

  def __setattr__(self, k, v): raise AttributeError("UOp is immutable")
  def __reduce__(self): raise TypeError("UOp cannot be pickled; pickle a Graph's printed form or its arrays instead")
  __hash__ = object.__hash__
  def __eq__(self, other): return self is other
  def __bool__(self): return True

  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return math.prod(self.shape)

  # ---- constructors ----
  @staticmethod
  def param(shape: Shape, dtype: DType) -> "UOp":
    """A fresh graph input; every call makes a distinct node."""
    return UOp(Ops.PARAM, dtype, (), (next(UOp._uids), tuple(shape)))

  @staticmethod
  def const(dtype: DType, value, shape: Shape = ()) -> "UOp":
    py = bool if dtype.is_bool else int if dtype.is_int else complex if dtype.is_complex else float
    c = UOp(Ops.CONST, dtype, (), py(value))
    return c.broadcast(shape)

  @staticmethod
  def buffer(data: "np.ndarray | Buffer") -> "UOp":
    buf = data if type(data) is Buffer else Buffer(data)
    return UOp._buffer(_BY_NP.get(buf.dtype) or as_dtype(buf.dtype), buf)

  @staticmethod
  def _buffer(dtype: DType, buf: Buffer) -> "UOp":
    if (node := buf.node) is not None and (hit := node()) is not None and hit.dtype is dtype: return hit
    if type(buf) is not Buffer or (buf.dtype is not dtype.np and buf.dtype != dtype.np):
      raise TypeError(f"UOp: a BUFFER node of {dtype} holds a Buffer of that dtype, got {buf!r}")
    self = object.__new__(UOp)
    _fill(self, Ops.BUFFER, dtype, (), buf, buf.shape, 0, False)
    if node is None: buf.node = weakref.ref(self)
    return self

  @staticmethod
  def iota(shape: Shape, axis: int, dtype: DType) -> "UOp": return UOp(Ops.IOTA, dtype, (), (tuple(shape), axis))

  # ---- builders: each infers its result dtype ----
  def alu(self, op: Ops, *others: "UOp") -> "UOp":
    if op in PARTS: return UOp(op, complex_of(self.dtype) if op is Ops.COMPLEX else self.dtype.real, (self, *others))
    return UOp(op, bool_ if op in COMPARE else (others[-1].dtype if op is Ops.WHERE else self.dtype), (self, *others))

  def cast(self, dtype: DType) -> "UOp": return self if dtype is self.dtype else UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype: DType) -> "UOp": return self if dtype is self.dtype else UOp(Ops.BITCAST, dtype, (self,))
  def reshape(self, shape: Shape) -> "UOp": return self if tuple(shape) == self.shape else UOp(Ops.RESHAPE, self.dtype, (self,), tuple(shape))
  def broadcast(self, shape: Shape) -> "UOp": return self if tuple(shape) == self.shape else UOp(Ops.BROADCAST, self.dtype, (self,), tuple(shape))
  def permute(self, perm) -> "UOp": return self if tuple(perm) == tuple(range(self.ndim)) else UOp(Ops.PERMUTE, self.dtype, (self,), tuple(perm))
  def pad(self, pads) -> "UOp": return self if all(p == (0, 0) for p in pads) else UOp(Ops.PAD, self.dtype, (self,), tuple(map(tuple, pads)))
  def slice(self, arg) -> "UOp":
    arg = tuple(map(tuple, arg))
    return self if arg == tuple((0, n, 1) for n in self.shape) else UOp(Ops.SLICE, self.dtype, (self,), arg)
  def flip(self, axes) -> "UOp": return self if not axes else UOp(Ops.FLIP, self.dtype, (self,), tuple(axes))
  def reduce(self, op: Ops, axes) -> "UOp": return self if not axes else UOp(op, self.dtype, (self,), tuple(sorted(axes)))
  @staticmethod
  def concat(xs, axis: int) -> "UOp": return xs[0] if len(xs) == 1 else UOp(Ops.CONCAT, xs[0].dtype, tuple(xs), axis)
  def gather(self, idx: "UOp") -> "UOp": return UOp(Ops.GATHER, self.dtype, (self, idx))
  def scatter(self, idx: "UOp", upd: "UOp", mode: str) -> "UOp": return UOp(Ops.SCATTER, self.dtype, (self, idx, upd), mode)
  def where(self, a: "UOp", b: "UOp") -> "UOp": return UOp(Ops.WHERE, a.dtype, (self, a, b))
  def detach(self) -> "UOp": return UOp(Ops.DETACH, self.dtype, (self,))
  def proj(self, i: int) -> "UOp": return UOp(Ops.PROJ, multi_avals(self.op, self.src, self.arg)[i][1], (self,), i)

  @staticmethod
  def multi(op: Ops, src, arg) -> list["UOp"]:
    """The results of an op with several results (COND, SCAN, ...), each read with PROJ."""
    node = UOp(op, void, tuple(src), arg)
    return [node.proj(i) for i in range(len(multi_avals(op, node.src, arg)))]

  def __add__(self, o): return self.alu(Ops.ADD, o)
  def __mul__(self, o): return self.alu(Ops.MUL, o)
  def __sub__(self, o): return self.alu(Ops.SUB, o)
  def __neg__(self): return self.alu(Ops.NEG)

  # ---- graph utilities ----
  def toposort(self) -> list["UOp"]: return toposort([self])

  def __repr__(self) -> str:
    arg = "" if self.arg is None else f", arg={self.arg!r}"
    return f"UOp({self.op!r}, {self.dtype.short}{list(self.shape)}, src=({len(self.src)}){arg})"

  def print(self) -> str:
    """The graph below this node, one line per node, children first."""
    names: dict[UOp, str] = {}
    lines = []
    for u in toposort([self]):
      names[u] = f"%{len(names)}"
      arg = "" if u.arg is None else f" {u.arg!r}"
      lines.append(f"{names[u]}:{u.dtype.short}[{','.join(map(str, u.shape))}] = {u.op.name.lower()}"
                   f"{''.join(' ' + names[s] for s in u.src)}{arg}")
    return "\n".join(lines)



_OP, _DTYPE, _SRC, _ARG, _SHAPE, _DEPTH, _TRACED = (UOp.__dict__[k].__set__ for k in UOp.__slots__[:7])


def _fill(u: UOp, op, dtype, src, arg, shape, depth, traced) -> None:
  """Set a new node's fields (UOp forbids setattr) through its slots' descriptors: the cheapest way there is."""
  _OP(u, op); _DTYPE(u, dtype); _SRC(u, src); _ARG(u, arg); _SHAPE(u, shape); _DEPTH(u, depth); _TRACED(u, traced)

def toposort(roots) -> list[UOp]:
  """Every node reachable from `roots`, each after all of its sources (iterative: deep graphs are fine)."""
  seen: set[UOp] = set()
  order: list[UOp] = []
  for r in roots:
    if r in seen: continue
    stack = [(r, False)]
    while stack:
      u, done = stack.pop()
      if done:
        order.append(u)
        continue
      if u in seen: continue
      seen.add(u)
      stack.append((u, True))
      stack.extend((s, False) for s in reversed(u.src) if s not in seen)
  return order


def substitute(roots, mapping: dict) -> list[UOp]:
  """`roots` with every node in `mapping` replaced by its image, rebuilding only what changed."""
  new: dict[UOp, UOp] = dict(mapping)
  for u in toposort(roots):
    if u in new: continue
    src = tuple(new.get(s, s) for s in u.src)
    new[u] = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
  return [new[r] for r in roots]
