"""Contractions: matmul, dot, vdot, inner, outer, tensordot, einsum, vecdot, kron, matrix_transpose.

Every contraction is one pattern of primitives: each operand is permuted and reshaped so that its axes line up
with the full index space, BROADCAST to it, multiplied (MUL; AND for bool) and summed (REDUCE_SUM; REDUCE_MAX for
bool) over the contracted axes. The kernel optimizer (and the reference device, through np.einsum) recognises the
pattern. Dtypes follow jax.numpy: operands promote by JAX's lattice, integers accumulate in their own dtype
(wrapping), float16/bfloat16 accumulate in float32 and are cast back.
"""
from __future__ import annotations

import operator
from typing import Sequence

from ..array import Array, to_array
from ..ir import Ops, UOp, broadcast_shapes, composite, dtypes
from ..ir.dtypes import DType
from ..ir.shapes import fmt
from ..lax import complex_math
from ..lax.dot import check_precision, tensorfloat32, tf32
from .core import normalize_axis, promote

__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "einsum_path", "vecdot", "kron",
           "matrix_transpose", "cross"]

_HALF = (dtypes.float16, dtypes.bfloat16)


# ---- the one contraction pattern ----
def acc_dtype(dt: DType) -> DType:
  """The dtype a contraction of `dt` accumulates in: float32 for half floats, else `dt` itself."""
  return dtypes.float32 if dt in _HALF else dt


def _mul(a: UOp, b: UOp) -> UOp: return a.alu(Ops.AND if a.dtype.is_bool else Ops.MUL, b)


def _sum(u: UOp, axes) -> UOp: return u.reduce(Ops.REDUCE_MAX if u.dtype.is_bool else Ops.REDUCE_SUM, axes)


def _label_sizes(fn: str, *pairs) -> dict:
  """label -> size over (uop, labels) pairs; size 1 broadcasts against any other size."""
  sizes: dict = {}
  for u, ls in pairs:
    for l, n in zip(ls, u.shape):
      m = sizes.get(l, 1)
      if m != n and m != 1 and n != 1:
        raise ValueError(f"{fn}: index {l!r} has size {m} in one operand and {n} in another "
                         f"(shapes {', '.join(fmt(u.shape) for u, _ in pairs)})")
      sizes[l] = n if l not in sizes or m == 1 else m
  return sizes


def _place(u: UOp, ls: Sequence, full: Sequence, shape: tuple) -> UOp:
  """u (axes labelled ls, all distinct) permuted, reshaped and broadcast onto the index space `full`."""
  perm = sorted(range(len(ls)), key=lambda i: full.index(ls[i]))
  u = u.permute(perm)
  own = {ls[i]: u.shape[k] for k, i in enumerate(perm)}
  return u.reshape(tuple(own.get(l, 1) for l in full)).broadcast(shape)


def contract_uops(x: UOp, xl: Sequence, y: UOp, yl: Sequence, out: Sequence, fn: str = "contract",
                  precision=None) -> UOp:
  """x (axes labelled xl) times y (labelled yl), summed over every label not in `out`; axes ordered as `out`.

  Labels are any hashable values and must be distinct within an operand. Both operands share one dtype;
  the product is taken and summed in that dtype (float32 operands rounded to TensorFloat-32 first where `precision`
  asks for it on a GPU: lax.dot.tensorfloat32). In a traced graph it is one composite node named `fn` (matmul,
  einsum, ...), its body the broadcast product and sum.
  """
  _label_sizes(fn, (x, xl), (y, yl))
  check_precision(precision, fn)
  if tensorfloat32(precision, x.dtype) and y.dtype is x.dtype: x, y = tf32(x), tf32(y)
  return composite(fn, _contract, x, y, xl=tuple(xl), yl=tuple(yl), out=tuple(out), fn=fn)[0]


def _contract(x: UOp, y: UOp, *, xl: tuple, yl: tuple, out: tuple, fn: str) -> UOp:
  sizes = _label_sizes(fn, (x, xl), (y, yl))
  red = [l for l in dict.fromkeys([*xl, *yl]) if l not in out]
  full = [*out, *red]
  shape = tuple(sizes[l] for l in full)
  p = _mul(_place(x, xl, full, shape), _place(y, yl, full, shape))
  return _sum(p, tuple(range(len(out), len(full)))).reshape(shape[:len(out)])


def _arrays(fn: str, *xs, preferred_element_type=None) -> tuple[list[UOp], DType, DType, bool]:
  """Operands promoted to their common dtype and cast to the accumulation dtype; (uops, acc, out, weak)."""
  arrs, dt, weak = promote(fn, *xs)
  if preferred_element_type is not None:
    dt, weak = dtypes.canonicalize(dtypes.as_dtype(preferred_element_type, fn)), False
  acc = acc_dtype(dt)
  return [a.uop.cast(acc) for a in arrs], acc, dt, weak


def _done(u: UOp, dt: DType, weak: bool) -> Array: return Array(u.cast(dt), weak)


def _mismatch(fn: str, a, b, sa: int, sb: int, op: str = "@") -> TypeError:
  return TypeError(f"{fn}: contraction dimension mismatch: {fmt(a)} {op} {fmt(b)} (size {sa} against size {sb}); "
                    f"the contracted axes must have equal sizes")


# ---- matmul and friends ----
def matmul(a, b, *, precision=None, preferred_element_type=None) -> Array:
  """Matrix product with numpy's rules: batch axes broadcast, a 1-D operand is a row (a) or column (b) vector.

  >>> tnp.matmul(tnp.ones((2, 3)), tnp.ones((3,)))
  Array([3., 3.], dtype=float32)
  """
  (au, bu), _, dt, weak = _arrays("matmul", a, b, preferred_element_type=preferred_element_type)
  sa, sb = au.shape, bu.shape
  if not sa or not sb:
    raise ValueError(f"matmul: operands must have at least one dimension, got shapes {fmt(sa)} and {fmt(sb)}; "
                     f"use multiply for scalars")
  kb = sb[-2] if len(sb) > 1 else sb[0]
  if sa[-1] != kb: raise _mismatch("matmul", sa, sb, sa[-1], kb)
  batch = broadcast_shapes(sa[:-2], sb[:-2], fn="matmul")
  nb = len(batch)
  bl = list(range(nb))
  m = ["m"] if len(sa) > 1 else []   # a 1-D operand is a row (a) or column (b) vector, its unit axis left out
  n = ["n"] if len(sb) > 1 else []
  al = bl[nb - max(len(sa) - 2, 0):] + m + ["k"]
  blb = bl[nb - max(len(sb) - 2, 0):] + ["k"] + n
  return _done(contract_uops(au, al, bu, blb, bl + m + n, "matmul", precision), dt, weak)


def matrix_transpose(x) -> Array:
  """x with its last two axes swapped.

  >>> tnp.matrix_transpose(tnp.ones((2, 3, 4))).shape
  (2, 4, 3)
  """
  x = x if isinstance(x, Array) else to_array(x, fn="matrix_transpose")
  if x.ndim < 2:
    raise ValueError(f"matrix_transpose: x must have at least two dimensions, got shape {fmt(x.shape)}")
  perm = list(range(x.ndim))
  perm[-2], perm[-1] = perm[-1], perm[-2]
  return Array(x.uop.permute(perm), x.weak_type)


def _scalar_mul(fn: str, a, b) -> Array:
  arrs, dt, weak = promote(fn, a, b)
  shape = broadcast_shapes(*(x.shape for x in arrs), fn=fn)
  return Array(_mul(*(x.uop.broadcast(shape) for x in arrs)), weak)


def dot(a, b, *, precision=None, preferred_element_type=None) -> Array:
  """numpy's dot: a product for scalars, the sum over a's last axis and b's second-to-last (or only) axis.

  >>> tnp.dot(tnp.array([1, 2]), tnp.array([3, 4]))
  Array(11, dtype=int32)
  """
  (au, bu), _, dt, weak = _arrays("dot", a, b, preferred_element_type=preferred_element_type)
  if not au.shape or not bu.shape:
    out = _scalar_mul("dot", Array(au), Array(bu)).uop
    return _done(out, dt, weak)
  kb = 0 if bu.ndim == 1 else bu.ndim - 2
  if au.shape[-1] != bu.shape[kb]: raise _mismatch("dot", au.shape, bu.shape, au.shape[-1], bu.shape[kb])
  al = [("a", i) for i in range(au.ndim - 1)] + ["k"]
  bl = [("b", i) if i != kb else "k" for i in range(bu.ndim)]
  out = al[:-1] + [l for l in bl if l != "k"]
  return _done(contract_uops(au, al, bu, bl, out, "dot", precision), dt, weak)


def inner(a, b, *, precision=None, preferred_element_type=None) -> Array:
  """The sum over the last axes of a and b; the result has shape a.shape[:-1] + b.shape[:-1].

  >>> tnp.inner(tnp.ones((2, 3)), tnp.ones((4, 3))).shape
  (2, 4)
  """
  (au, bu), _, dt, weak = _arrays("inner", a, b, preferred_element_type=preferred_element_type)
  if not au.shape or not bu.shape: return _done(_scalar_mul("inner", Array(au), Array(bu)).uop, dt, weak)
  if au.shape[-1] != bu.shape[-1]: raise _mismatch("inner", au.shape, bu.shape, au.shape[-1], bu.shape[-1], "inner")
  al = [("a", i) for i in range(au.ndim - 1)] + ["k"]
  bl = [("b", i) for i in range(bu.ndim - 1)] + ["k"]
  return _done(contract_uops(au, al, bu, bl, al[:-1] + bl[:-1], "inner", precision), dt, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None) -> Array:
  """The dot product of a and b flattened, a conjugated.

  >>> tnp.vdot(tnp.ones((2, 2)), tnp.ones((4,)))
  Array(4., dtype=float32)
  """
  (au, bu), _, dt, weak = _arrays("vdot", a, b, preferred_element_type=preferred_element_type)
  if au.size != bu.size:
    raise TypeError(f"vdot: operands must have the same number of elements, got shapes {fmt(au.shape)} and "
                     f"{fmt(bu.shape)}")
  au, bu = _conj(au.reshape((au.size,))), bu.reshape((bu.size,))
  return _done(contract_uops(au, ["k"], bu, ["k"], [], "vdot", precision), dt, weak)


def _conj(u: UOp) -> UOp: return complex_math.conj(u) if u.dtype.is_complex else u


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None) -> Array:
  """The dot product of vectors along `axis` (x1 conjugated), with the other axes broadcast.

  >>> tnp.vecdot(tnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), tnp.array([1.0, 1.0, 1.0]))
  Array([ 6., 15.], dtype=float32)
  """
  (au, bu), _, dt, weak = _arrays("vecdot", x1, x2, preferred_element_type=preferred_element_type)
  if not au.shape or not bu.shape:
    raise ValueError(f"vecdot: operands must have at least one dimension, got {fmt(au.shape)} and {fmt(bu.shape)}")
  ia, ib = normalize_axis(axis, au.ndim, "vecdot"), normalize_axis(axis, bu.ndim, "vecdot")
  if au.shape[ia] != bu.shape[ib]: raise _mismatch("vecdot", au.shape, bu.shape, au.shape[ia], bu.shape[ib], "vecdot")
  au = _conj(au.permute([i for i in range(au.ndim) if i != ia] + [ia]))
  bu = bu.permute([i for i in range(bu.ndim) if i != ib] + [ib])
  batch = broadcast_shapes(au.shape[:-1], bu.shape[:-1], fn="vecdot")
  nb = len(batch)
  al = list(range(nb - (au.ndim - 1), nb)) + ["k"]
  bl = list(range(nb - (bu.ndim - 1), nb)) + ["k"]
  return _done(contract_uops(au, al, bu, bl, list(range(nb)), "vecdot", precision), dt, weak)


def outer(a, b) -> Array:
  """The outer product of a and b flattened: out[i, j] = a[i] * b[j].

  >>> tnp.outer(tnp.array([1, 2]), tnp.array([1, 10, 100])).shape
  (2, 3)
  """
  (a, b), dt, weak = promote("outer", a, b)
  au, bu = a.uop.reshape((a.size,)), b.uop.reshape((b.size,))
  return Array(contract_uops(au, ["i"], bu, ["j"], ["i", "j"], "outer"), weak)


def kron(a, b) -> Array:
  """The Kronecker product: blocks a[i, j] * b, with the smaller operand's shape padded with leading ones.

  >>> tnp.kron(tnp.eye(2), tnp.ones((2, 2))).shape
  (4, 4)
  """
  (a, b), dt, weak = promote("kron", a, b)
  nd = max(a.ndim, b.ndim)
  au, bu = a.uop.reshape((1,) * (nd - a.ndim) + a.shape), b.uop.reshape((1,) * (nd - b.ndim) + b.shape)
  al, bl = [("a", i) for i in range(nd)], [("b", i) for i in range(nd)]
  inter = [l for pair in zip(al, bl) for l in pair]
  out = contract_uops(au, al, bu, bl, inter, "kron")
  return Array(out.reshape(tuple(m * n for m, n in zip(au.shape, bu.shape))), weak)


def _axes_list(ax, nd: int, fn: str) -> list[int]:
  ax = [ax] if isinstance(ax, int) or hasattr(ax, "__index__") else list(ax)
  out = [normalize_axis(operator.index(i), nd, fn, "axes") for i in ax]
  if len(set(out)) != len(out): raise ValueError(f"{fn}: repeated axis in axes {ax}")
  return out


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None) -> Array:
  """Sum over the last `axes` axes of a and the first of b, or over the axes in the pair (a_axes, b_axes).

  >>> tnp.tensordot(tnp.ones((2, 3, 4)), tnp.ones((3, 4, 5))).shape
  (2, 5)
  """
  (au, bu), _, dt, weak = _arrays("tensordot", a, b, preferred_element_type=preferred_element_type)
  if isinstance(axes, int) or hasattr(axes, "__index__") and not isinstance(axes, (list, tuple)):
    n = operator.index(axes)
    if n < 0 or n > au.ndim or n > bu.ndim:
      raise TypeError(f"tensordot: axes={n} must be between 0 and the operands' dimensions "
                       f"(shapes {fmt(au.shape)} and {fmt(bu.shape)})")
    xa, xb = list(range(au.ndim - n, au.ndim)), list(range(n))
  else:
    try:
      pa, pb = axes
    except (TypeError, ValueError):
      raise TypeError(f"tensordot: axes must be an int or a pair of sequences of axes, got {axes!r}") from None
    xa, xb = _axes_list(pa, au.ndim, "tensordot"), _axes_list(pb, bu.ndim, "tensordot")
    if len(xa) != len(xb):
      raise TypeError(f"tensordot: axes {axes!r} name {len(xa)} axes of a but {len(xb)} of b")
  for i, j in zip(xa, xb):
    if au.shape[i] != bu.shape[j]:
      raise TypeError(f"tensordot: contraction dimension mismatch: {fmt(au.shape)} and {fmt(bu.shape)} "
                       f"(axis {i} of a has size {au.shape[i]}, axis {j} of b has size {bu.shape[j]})")
  al = [("c", xa.index(i)) if i in xa else ("a", i) for i in range(au.ndim)]
  bl = [("c", xb.index(j)) if j in xb else ("b", j) for j in range(bu.ndim)]
  out = [l for l in al if l[0] == "a"] + [l for l in bl if l[0] == "b"]
  return _done(contract_uops(au, al, bu, bl, out, "tensordot", precision), dt, weak)


# ---- einsum ----
def _parse_term(term: str, nd: int, fn: str, what: str) -> tuple[list, int]:
  """Labels of one subscript term ('...' expands to a marker); returns (labels, ellipsis length)."""
  if term.count("...") > 1 or "." in term.replace("...", ""):
    raise ValueError(f"{fn}: invalid subscripts {term!r} for {what}: at most one '...' and no other dots")
  pre, ell, post = term.partition("...")
  for ch in pre + post:
    if not ch.isalpha(): raise ValueError(f"{fn}: invalid subscript {ch!r} in {term!r}; use letters and '...'")
  if nd is None: return [*pre, *(["..."] if ell else []), *post], 0
  e = nd - len(pre) - len(post)
  if (e != 0 and not ell) or e < 0:
    raise ValueError(f"{fn}: subscripts {term!r} for {what} name {len(pre) + len(post)} axes but it has {nd}")
  return [*pre, *(("...", i) for i in range(e)), *post], e


def _sublist(sub) -> str:
  out = []
  for s in sub:
    if s is Ellipsis: out.append("...")
    else:
      i = operator.index(s)
      if not 0 <= i < 52: raise ValueError(f"einsum: sublist indices must be in [0, 52), got {i}")
      out.append(chr(ord("a") + i) if i < 26 else chr(ord("A") + i - 26))
  return "".join(out)


def _einsum_args(subscripts, operands):
  if isinstance(subscripts, str): return subscripts, list(operands)
  # interleaved form: einsum(op0, sub0, op1, sub1, ..., [sub_out])
  args = [subscripts, *operands]
  ops, subs = args[0::2], args[1::2]
  out = None
  if len(ops) > len(subs): out = ops.pop()
  s = ",".join(_sublist(x) for x in subs) + ("" if out is None else "->" + _sublist(out))
  return s, ops


def _diagonal(u: UOp, ls: list) -> tuple[UOp, list]:
  """Repeated labels in one operand -> their diagonal, via an IOTA mask and a sum."""
  while len(set(ls)) != len(ls):
    l = next(l for i, l in enumerate(ls) if l in ls[:i])
    i, j = ls.index(l), ls.index(l, ls.index(l) + 1)
    if u.shape[i] != u.shape[j]:
      raise ValueError(f"einsum: repeated index {l!r} has sizes {u.shape[i]} and {u.shape[j]} in one operand")
    mask = UOp.iota(u.shape, i, dtypes.int32).alu(Ops.CMPEQ, UOp.iota(u.shape, j, dtypes.int32))
    u = mask.where(u, UOp.const(u.dtype, 0, u.shape))
    u = _sum(u, (j,))
    u = u.reshape(u.shape[:j] + u.shape[j + 1:])
    ls = ls[:j] + ls[j + 1:]
  return u, ls


def _reduce_labels(u: UOp, ls: list, keep) -> tuple[UOp, list]:
  axes = tuple(i for i, l in enumerate(ls) if l not in keep)
  if not axes: return u, ls
  u = _sum(u, axes)
  return u.reshape(tuple(n for i, n in enumerate(u.shape) if i not in axes)), [l for l in ls if l in keep]


def einsum(subscripts, *operands, out=None, optimize="optimal", precision=None, preferred_element_type=None,
           _dot_general=None) -> Array:
  """Einstein summation, as numpy.einsum: explicit ('ij,jk->ik') or implicit ('ij,jk') output, '...' broadcasting,
  repeated indices (diagonals) and sum-only indices. `optimize` is accepted; operands contract left to right.

  >>> tnp.einsum("ij,jk->ik", tnp.ones((2, 3)), tnp.ones((3, 4))).shape
  (2, 4)
  """
  fn = "einsum"
  if out is not None: raise NotImplementedError("einsum: out= is not supported (arrays are immutable)")
  subscripts, operands = _einsum_args(subscripts, operands)
  if not operands: raise ValueError("einsum: at least one operand is required")
  uops, _, dt, weak = _arrays(fn, *operands, preferred_element_type=preferred_element_type)
  s = subscripts.replace(" ", "")
  ins, arrow, outs = s.partition("->")
  terms = ins.split(",")
  if len(terms) != len(uops):
    raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operands but {len(uops)} were given")
  labels, ells = [], []
  for k, (t, u) in enumerate(zip(terms, uops)):
    ls, e = _parse_term(t, u.ndim, fn, f"operand {k} of shape {fmt(u.shape)}")
    labels.append(ls)
    ells.append(e)
  E = max(ells)
  # ellipsis axes align to the right across operands: ('...', i) in an operand of ellipsis length e is axis E - e + i
  labels = [[("...", E - e + l[1]) if isinstance(l, tuple) else l for l in ls] for ls, e in zip(labels, ells)]
  ell_labels = [("...", i) for i in range(E)]
  if arrow:
    ol, _ = _parse_term(outs, None, fn, "the output")
    out_l = []
    for l in ol: out_l.extend(ell_labels if l == "..." else [l])
    seen = [l for ls in labels for l in ls]
    for l in out_l:
      if out_l.count(l) > 1:
        raise ValueError(f"einsum: output subscript {l!r} appears more than once in {subscripts!r}")
      if l not in seen:
        raise ValueError(f"einsum: output subscript {l!r} does not appear in the inputs of {subscripts!r}")
  else:
    letters = [l for ls in labels for l in ls if isinstance(l, str)]
    out_l = ell_labels + sorted((l for l in set(letters) if letters.count(l) == 1), key=lambda c: (c.islower(), c))

  ops = []
  for k, (u, ls) in enumerate(zip(uops, labels)):
    u, ls = _diagonal(u, ls)
    later = set(out_l).union(*(set(x) for i, x in enumerate(labels) if i != k))
    ops.append(_reduce_labels(u, ls, later))
  cur, cl = ops[0]
  for k in range(1, len(ops)):
    u, ls = ops[k]
    need = set(out_l).union(*(set(x) for x in labels[k + 1:]))
    nl = [l for l in dict.fromkeys([*cl, *ls]) if l in need]
    cur, cl = contract_uops(cur, cl, u, ls, nl, fn, precision), nl
  cur, cl = _reduce_labels(cur, cl, set(out_l))
  cur = cur.permute([cl.index(l) for l in out_l])
  return _done(cur, dt, weak)


def einsum_path(subscripts, *operands, optimize="greedy"):
  """The contraction order einsum uses: left to right, as a list of pairs and a description.

  >>> tnp.einsum_path("ij,jk,kl", tnp.ones((2, 3)), tnp.ones((3, 4)), tnp.ones((4, 5)))[0]
  [(0, 1), (0, 1)]
  """
  subscripts, operands = _einsum_args(subscripts, operands)
  n = len(operands)
  return [(0, 1)] * max(n - 1, 0) if n > 1 else [(0,)], f"left-to-right contraction of {subscripts!r}"


def _last(x: Array, axis: int, fn: str, name: str) -> Array:
  """x with `axis` moved last."""
  ax = normalize_axis(axis, x.ndim, fn, name)
  perm = [i for i in range(x.ndim) if i != ax] + [ax]
  return x if ax == x.ndim - 1 else Array(x.uop.permute(perm), x.weak_type)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Array:
  """The cross product of 3-vectors (or 2-vectors, whose third component is 0) along the given axes, the other axes
  broadcast; two 2-vectors give the z component alone.

  >>> tnp.cross(tnp.array([1, 0, 0]), tnp.array([0, 1, 0]))
  Array([0, 0, 1], dtype=int32)
  """
  if axis is not None: axisa = axisb = axisc = axis
  (x, y), _, _ = promote("cross", a, b)
  if x.ndim == 0 or y.ndim == 0:
    raise ValueError(f"cross: the arguments must have an axis of vectors, got shapes {fmt(x.shape)} and {fmt(y.shape)}")
  x, y = _last(x, axisa, "cross", "axisa"), _last(y, axisb, "cross", "axisb")
  n, m = x.shape[-1], y.shape[-1]
  if n not in (2, 3) or m not in (2, 3):
    raise ValueError(f"cross: the vectors must have 2 or 3 components, got {n} (axisa={axisa}) and {m} "
                     f"(axisb={axisb}) in shapes {fmt(x.shape)} and {fmt(y.shape)}")
  x0, x1, x2 = (x[..., i] if i < n else 0 for i in range(3))
  y0, y1, y2 = (y[..., i] if i < m else 0 for i in range(3))
  z = x0 * y1 - x1 * y0
  if n == m == 2: return z
  c = Array._stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, z], -1)
  ax = normalize_axis(axisc, c.ndim, "cross", "axisc")
  perm = list(range(c.ndim - 1))
  perm.insert(ax, c.ndim - 1)
  return Array(c.uop.permute(perm), c.weak_type)

