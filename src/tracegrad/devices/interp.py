"""The reference device: evaluates each primitive with numpy. Always available; the oracle in tests."""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..errors import TracedValueError
from ..ir import Ops, UOp
from ..ir.ops import FUSED
from ..ir.pattern import natural_exp_argument, natural_log_argument
from ..ir.dtypes import count_value
from ..ir.shapes import multi_avals
from . import host_linalg
from .base import Device


def _idiv(a, b):
  q = np.floor_divide(a, b)
  return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


def _iota(dtype, shape, axis):
  ar = np.arange(shape[axis], dtype=dtype.np).reshape([-1 if i == axis else 1 for i in range(len(shape))])
  return np.broadcast_to(ar, shape)


def _index(x, idx):
  k = idx.shape[-1]
  return tuple(idx[..., j] for j in range(k)), x.shape[:k]


def _gather(x, idx):
  cols, dims = _index(x, idx)
  return np.asarray(x[tuple(np.clip(c, 0, n - 1) for c, n in zip(cols, dims))])   # an array even for 0-d indices


_AT = {"add": np.add.at, "mul": np.multiply.at, "min": np.minimum.at, "max": np.maximum.at}


def _scatter(x, idx, upd, mode):
  out = np.array(x, copy=True)
  cols, dims = _index(x, idx)
  ok = np.ones(idx.shape[:-1], bool)
  for c, n in zip(cols, dims): ok &= (c >= 0) & (c < n)
  cols = tuple(c[ok] for c in cols)
  if mode == "set": out[cols] = upd[ok]
  else: _AT[mode](out, cols, upd[ok])
  return out


def _reduce(fn, ident=None):
  def go(x, axes, dtype):
    if ident is None: return fn(x, axis=axes, keepdims=True, dtype=dtype.np)
    return fn(x, axis=axes, keepdims=True, initial=ident(dtype))
  return go


def _min_ident(d):
  from ..ir.dtypes import min_value
  return min_value(d)


def _max_ident(d):
  from ..ir.dtypes import max_value
  return max_value(d)


def _cast(x: np.ndarray, src, dst) -> np.ndarray:
  """x converted to dst; a float to an integer as XLA converts: NaN to 0, beyond the range to its nearest end, else
  truncated toward zero (numpy's astype leaves those to the platform)."""
  if src.is_complex and dst.is_bool: return x != 0
  if src.is_complex and not dst.is_complex: x, src = np.real(x), src.real   # the real part, as XLA converts
  if not (src.is_float and dst.is_int): return x.astype(dst.np)
  info, f = np.iinfo(dst.np), np.asarray(x, np.float64)   # exact for every float type
  top = float(info.max) + 1.0   # a power of two
  inside = np.clip(np.where(np.isnan(f), 0.0, f), float(info.min), np.nextafter(top, 0.0)).astype(dst.np)
  return np.where(f >= top, dst.np.type(info.max), inside)


def _complex(re: np.ndarray, im: np.ndarray) -> np.ndarray:
  """The complex numbers with these parts, exactly (re + 1j * im would turn an infinite part into nan)."""
  out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), np.result_type(re, np.complex64))
  out.real, out.imag = re, im
  return out


# op -> numpy implementation, called as fn(*source values) for elementwise ops
ELEMENTWISE = {
  Ops.NEG: np.negative, Ops.RECIP: np.reciprocal, Ops.SQRT: np.sqrt, Ops.EXP2: np.exp2, Ops.LOG2: np.log2,
  Ops.SIN: np.sin, Ops.COS: np.cos, Ops.FLOOR: np.floor,
  Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.DIV: np.true_divide, Ops.IDIV: _idiv,
  Ops.MOD: np.fmod, Ops.MAX: np.maximum, Ops.MIN: np.minimum, Ops.POW: np.power, Ops.ATAN2: np.arctan2,
  Ops.CMPLT: np.less, Ops.CMPEQ: np.equal, Ops.CMPNE: np.not_equal,
  Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor, Ops.SHL: np.left_shift, Ops.SHR: np.right_shift,
  Ops.WHERE: np.where, Ops.REAL: np.real, Ops.IMAG: np.imag, Ops.COMPLEX: lambda a, b: _complex(a, b),
}
REDUCE = {Ops.REDUCE_SUM: _reduce(np.sum), Ops.REDUCE_PROD: _reduce(np.prod),
          Ops.REDUCE_MAX: _reduce(np.max, _min_ident), Ops.REDUCE_MIN: _reduce(np.min, _max_ident)}
MOVEMENT = {
  Ops.RESHAPE: lambda x, a: x.reshape(a),
  Ops.BROADCAST: lambda x, a: np.broadcast_to(x, a),
  Ops.PERMUTE: lambda x, a: np.transpose(x, a),
  Ops.PAD: lambda x, a: np.pad(x, a),
  Ops.SLICE: lambda x, a: x[tuple(slice(s, e, st) for s, e, st in a)],
  Ops.FLIP: lambda x, a: np.flip(x, a),
}


def _spread(x: UOp) -> set[int]:
  """The axes along which a BROADCAST node repeats its source."""
  if x.op is not Ops.BROADCAST: return set()
  s = (1,) * (x.ndim - x.src[0].ndim) + x.src[0].shape
  return {i for i, (m, n) in enumerate(zip(s, x.shape)) if m == 1 and n != 1}


def _contraction(u: UOp):
  """REDUCE_SUM(MUL(a, b)) with a broadcast operand: the operands under the broadcasts, for np.einsum (not when both
  repeat along a summed axis: the product is then a repeated value, which _reduce_repeated sums without a loop)."""
  if u.op is not Ops.REDUCE_SUM or u.src[0].op is not Ops.MUL or u.dtype.np not in (np.float32, np.float64): return None
  a, b = u.src[0].src
  if Ops.BROADCAST not in (a.op, b.op) or _spread(a) & _spread(b) & set(u.arg): return None
  return tuple(x.src[0] if x.op is Ops.BROADCAST else x for x in (a, b))


def _fused(u: UOp):
  """(a, b, c) where u is a * b + c with a FUSED product (rounded once, as fma)."""
  if u.op is not Ops.ADD: return None
  for m, c in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
    if m.op is Ops.MUL and m.arg == FUSED: return (*m.src, c)
  return None


def _two_sum(a, b):
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _odd(s, e):
  """s (the sum rounded to nearest, e what it lost) rounded to odd instead: its low bit set where it was inexact, so
  that rounding it again to fewer bits rounds as the exact sum would."""
  w = s.view(np.uint64 if s.dtype == np.float64 else np.uint32)
  step = np.where((e > 0) == (s > 0), 1, -1).astype(w.dtype)
  return np.where((e != 0) & ((w & 1) == 0), w + step, w).view(s.dtype)


def _fma(a, b, c, dt) -> np.ndarray:
  """a * b + c rounded once: float32 through float64 (the product exact, the sum rounded to odd); float64 from
  Dekker's exact product and exact sums (moderate magnitudes)."""
  if dt.np == np.float32:
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    return _odd(*_two_sum(p, np.asarray(c, np.float64))).astype(np.float32)
  a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
  split = lambda x: (lambda t: (t - (t - x), x - (t - (t - x))))(x * 134217729.0)   # 2^27 + 1
  (ah, al), (bh, bl) = split(a), split(b)
  p = a * b
  low = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
  th, tl = _two_sum(c, p)
  return th + _odd(*_two_sum(tl, low))


def _repeated(vals: list, ndim: int) -> list[int]:
  """The axes of length > 1 along which every value repeats one entry (a broadcast view: stride 0)."""
  if not all(isinstance(v, np.ndarray) and v.ndim == ndim for v in vals): return []
  return [i for i in range(ndim) if vals[0].shape[i] > 1 and all(v.strides[i] == 0 for v in vals)]


def _first(v: np.ndarray, axes) -> np.ndarray:
  return v[tuple(slice(0, 1) if i in axes else slice(None) for i in range(v.ndim))]


def _elementwise(fn, vals: list, shape) -> np.ndarray:
  """fn over values of one shape; along axes where all of them repeat one entry, fn runs once and is broadcast."""
  if not (axes := _repeated(vals, len(shape))): return fn(*vals)
  return np.broadcast_to(fn(*(_first(v, axes) for v in vals)), shape)


def _reduce_repeated(op: Ops, x: np.ndarray, axes, dtype) -> np.ndarray | None:
  """A sum, max or min over axes along which x repeats one entry: of that entry (times the count, for a sum)."""
  if op not in (Ops.REDUCE_SUM, Ops.REDUCE_MAX, Ops.REDUCE_MIN) or (op is Ops.REDUCE_SUM and dtype.is_bool): return None
  if not (rep := [a for a in _repeated([x], x.ndim) if a in axes]): return None
  count = 1 if op is not Ops.REDUCE_SUM else count_value(dtype, math.prod(x.shape[a] for a in rep))
  if count is None: return None
  r = REDUCE[op](_first(x, rep), axes, dtype)
  return r if count == 1 else r * np.array(count, dtype.np)


def _einsum(u: UOp, ops, vals):
  full, nd = u.src[0].shape, len(u.src[0].shape)
  letters = [chr(ord("a") + i) for i in range(nd)]
  vs = [v.reshape((1,) * (nd - v.ndim) + v.shape) for v in vals]
  drops = [{i for i in range(nd) if v.shape[i] == 1 and full[i] != 1} for v in vs]
  both = drops[0] & drops[1]  # an axis broadcast in both operands stays, as a broadcast view, in the first
  if both:
    vs[0] = np.broadcast_to(vs[0], tuple(full[i] if i in both else n for i, n in enumerate(vs[0].shape)))
    drops[0] -= both
  args = [v.reshape(tuple(n for i, n in enumerate(v.shape) if i not in d)) for v, d in zip(vs, drops)]
  subs = ["".join(l for i, l in enumerate(letters) if i not in d) for d in drops]
  out = "".join(l for i, l in enumerate(letters) if i not in u.arg)
  return np.einsum(f"{subs[0]},{subs[1]}->{out}", *args, optimize=True).reshape(u.shape).astype(u.dtype.np, copy=False)


def _run(graph, vals) -> list:
  """A sub-graph's outputs for input values (the interp device runs control flow one step at a time)."""
  return _execute(list(graph.outputs), dict(zip(graph.inputs, vals)))


def _cond(run, vals, branches) -> list: return run(branches[int(np.clip(vals[0], 0, len(branches) - 1))], vals[1:])


def _scan(run, vals, arg) -> list:
  body, n_consts, n_carry, length, reverse = arg
  consts, carry, xs = vals[:n_consts], list(vals[n_consts:n_consts + n_carry]), vals[n_consts + n_carry:]
  ys = [np.empty((length, *o.shape), o.dtype.np) for o in body.outputs[n_carry:]]
  for t in (reversed(range(length)) if reverse else range(length)):
    out = run(body, [*consts, *carry, *(x[t] for x in xs)])
    carry = out[:n_carry]
    for y, v in zip(ys, out[n_carry:]): y[t] = v
  return [*carry, *ys]


def _while(run, vals, arg) -> list:
  cond, body, n_consts = arg
  consts, carry = vals[:n_consts], list(vals[n_consts:])
  while bool(run(cond, [*consts, *carry])[0]): carry = run(body, [*consts, *carry])
  return carry


# control flow, given run(graph, input values) -> output values
CONTROL_FLOW = {Ops.COND: _cond, Ops.SCAN: _scan, Ops.WHILE: _while}
MULTI = {
  **{op: (lambda f: lambda vals, arg: tuple(f(_run, vals, arg)))(f) for op, f in CONTROL_FLOW.items()},
  Ops.CUSTOM_JVP: lambda vals, arg: tuple(_run(arg[0], vals)), Ops.CUSTOM_VJP: lambda vals, arg: tuple(_run(arg[0], vals)),
  Ops.REMAT: lambda vals, fun: tuple(_run(fun, vals)), Ops.COMPOSITE: lambda vals, arg: tuple(_run(arg[0], vals)),
  Ops.CALLBACK: lambda vals, call: tuple(call([np.array(v) for v in vals])),
}


def deps(u: UOp):
  """The nodes whose values evaluate(u, values) takes, in order: u's sources, except where it computes a pattern
  whole (exp from EXP2(x * log2(e)), log from LOG2(x) * ln(2), a contraction from its operands under their
  broadcasts)."""
  if (x := natural_exp_argument(u)) is not None or (x := natural_log_argument(u)) is not None: return (x,)
  if (f := _fused(u)) is not None: return f
  return ops if (ops := _contraction(u)) is not None else u.src


def evaluate(u: UOp, vals: list):
  op, arg, dt = u.op, u.arg, u.dtype
  if op is Ops.CONST: return np.array(arg, dtype=dt.np)
  if op is Ops.BUFFER: return arg.data
  if op is Ops.IOTA: return _iota(dt, *arg)
  if op is Ops.PARAM: raise TracedValueError("a traced value was evaluated")
  if (ops := _contraction(u)) is not None: return _einsum(u, ops, vals)
  if _fused(u) is not None: return _elementwise(lambda a, b, c: _fma(a, b, c, dt), vals, u.shape)
  if op is Ops.EXP2 and natural_exp_argument(u) is not None: return np.asarray(np.exp(vals[0]), dtype=dt.np)
  if natural_log_argument(u) is not None: return np.asarray(np.log(vals[0]), dtype=dt.np)
  if op in ELEMENTWISE: return _elementwise(lambda *v: np.asarray(ELEMENTWISE[op](*v), dtype=dt.np), vals, u.shape)
  if op is Ops.CAST: return _elementwise(lambda v: _cast(v, u.src[0].dtype, dt), vals, u.shape)
  if op is Ops.BITCAST: return np.array(vals[0], order="C", copy=True).view(dt.np)   # same itemsize: same shape
  if op in REDUCE:
    if (r := _reduce_repeated(op, vals[0], arg, dt)) is not None: return r
    return np.asarray(REDUCE[op](vals[0], arg, dt), dtype=dt.np)
  if op in MOVEMENT: return MOVEMENT[op](vals[0], arg)
  if op is Ops.CONCAT: return np.concatenate(vals, axis=arg)
  if op is Ops.GATHER: return _gather(*vals)
  if op is Ops.SCATTER: return _scatter(*vals, arg)
  if op in (Ops.DETACH, Ops.SHARDING_CONSTRAINT, Ops.OPTIMIZATION_BARRIER): return vals[0]
  if op is Ops.PROJ: return vals[0][arg]
  if op is Ops.FFT: return np.asarray((np.fft.ifft if arg else np.fft.fft)(vals[0], axis=-1, norm="backward" if not arg
                                      else "forward"), dt.np)
  if op is Ops.LINALG: return tuple(host_linalg.run(*arg, vals, multi_avals(op, u.src, arg)))
  if op in MULTI: return MULTI[op](vals, arg)
  raise NotImplementedError(f"interp: no evaluation rule for {op}")


class InterpDevice(Device):
  name = "interp"
  platform = "interp"

  def __init__(self, id: int = 0): self.id = id

  def execute(self, outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
    return _execute(outputs, known)


def _execute(outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
  vals: dict[UOp, np.ndarray] = {}
  order: list[UOp] = []
  seen: set[UOp] = set()
  for r in outputs:
    stack = [(r, False)]
    while stack:
      u, ready = stack.pop()
      if ready:
        order.append(u)
        continue
      if u in seen: continue
      seen.add(u)
      if u in known:
        vals[u] = known[u]
        continue
      stack.append((u, True))
      stack.extend((s, False) for s in deps(u) if s not in seen)
  with np.errstate(all="ignore"):
    for u in order: vals[u] = evaluate(u, [vals[s] for s in deps(u)])
  return [vals[o] for o in outputs]
