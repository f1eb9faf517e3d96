"""Shape and dtype checks run when a UOp is built: a bad node fails here, naming the op and the shapes."""
from __future__ import annotations

import math

from . import dtypes
from .dtypes import DType, bool_, void
from .linalg import linalg_avals
from .ops import (COLLECTIVE, MULTI, BINARY, COMPARE, FLOAT_ONLY, INT_ONLY, INT_OR_BOOL, LEAF, NOT_ON_BOOL, ON_COMPLEX,
                  PARTS, REDUCE, SCATTER_MODES, UNARY, Ops)

Shape = tuple[int, ...]


def fmt(shape: Shape) -> str: return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _err(op: Ops, msg: str) -> ValueError: return ValueError(f"{op.name.lower()}: {msg}")


INT64_MAX = (1 << 63) - 1


def check_size(shape: Shape, dtype: DType, fn: str) -> None:
  """Raise unless `shape` can hold an array of `dtype`: no negative dimension (ValueError), an element count that
  fits int64 (ValueError) and a byte size that fits int64, more than any machine can address (MemoryError)."""
  if any(n < 0 for n in shape): raise ValueError(f"{fn}: negative dimensions are not allowed, got shape {fmt(shape)}")
  n = math.prod(shape)
  if n > INT64_MAX:
    raise ValueError(f"{fn}: shape {fmt(shape)} has {n} elements, more than int64 can count; use a smaller shape")
  if n * dtype.itemsize > INT64_MAX:
    raise MemoryError(f"{fn}: an array of shape {fmt(shape)} and dtype {dtype} takes {n * dtype.itemsize} bytes, "
                      f"more than any machine can address; use a smaller shape")


def _check_axes(op: Ops, axes, ndim: int, shape: Shape):
  if any(not isinstance(a, int) or not 0 <= a < ndim for a in axes) or len(set(axes)) != len(axes):
    raise _err(op, f"axes {axes} are not distinct axes of an array of shape {fmt(shape)}")


def _elementwise(op: Ops, dtype: DType, src, arg) -> Shape:
  shapes = {s.shape for s in src}
  if len(shapes) != 1:
    raise _err(op, f"operands must have one shape, got {', '.join(fmt(s.shape) for s in src)}")
  ins = src[1:] if op is Ops.WHERE else src
  if op is Ops.WHERE and src[0].dtype is not bool_: raise _err(op, f"condition must be bool, got {src[0].dtype}")
  if len({s.dtype for s in ins}) != 1:
    raise _err(op, f"operands must have one dtype, got {', '.join(str(s.dtype) for s in ins)}")
  d = ins[0].dtype
  if d.is_complex and op not in ON_COMPLEX: raise _err(op, f"is not defined on complex operands, got {d}")
  if op in FLOAT_ONLY and not d.is_inexact: raise _err(op, f"needs a float operand, got {d}")
  if op in INT_ONLY and not d.is_int: raise _err(op, f"needs an integer operand, got {d}")
  if op in INT_OR_BOOL and d.is_inexact: raise _err(op, f"needs an integer or bool operand, got {d}")
  if op in NOT_ON_BOOL and d.is_bool: raise _err(op, "is not defined on bool")
  want = bool_ if op in COMPARE else d
  if dtype is not want: raise _err(op, f"result dtype must be {want}, got {dtype}")
  return src[0].shape


def _parts(op, dtype, src, arg):
  if op is Ops.COMPLEX:
    a, b = src
    if a.shape != b.shape or a.dtype is not b.dtype or a.dtype not in (dtypes.float32, dtypes.float64):
      raise _err(op, f"operands must be float32 or float64 of one shape and dtype, got {a.dtype}{fmt(a.shape)} and "
                     f"{b.dtype}{fmt(b.shape)}")
    want = dtypes.complex_of(a.dtype)
  else:
    if not src[0].dtype.is_complex: raise _err(op, f"needs a complex operand, got {src[0].dtype}")
    want = src[0].dtype.real
  if dtype is not want: raise _err(op, f"result dtype must be {want}, got {dtype}")
  return src[0].shape


def _fft(op, dtype, src, arg):
  (x,) = src
  if not x.dtype.is_complex or not x.shape or dtype is not x.dtype or not isinstance(arg, bool):
    raise _err(op, f"takes a complex array of rank >= 1 (arg: inverse, a bool) and gives its dtype, got "
                   f"{x.dtype}{fmt(x.shape)} -> {dtype}, arg={arg!r}")
  return x.shape


def _reshape(op, dtype, src, arg):
  (x,) = src
  if any(not isinstance(n, int) or n < 0 for n in arg) or math.prod(arg) != math.prod(x.shape):
    raise _err(op, f"cannot reshape an array of shape {fmt(x.shape)} ({math.prod(x.shape)} elements) "
                   f"into shape {fmt(arg)} ({math.prod(arg) if all(isinstance(n, int) for n in arg) else '?'} elements)")
  return tuple(arg)


def broadcast_shapes(*shapes: Shape, fn: str = "broadcast") -> Shape:
  nd = max((len(s) for s in shapes), default=0)
  out = []
  for i in range(-nd, 0):
    sizes = {s[i] for s in shapes if len(s) >= -i} - {1}
    if len(sizes) > 1:
      raise ValueError(f"{fn}: shapes {', '.join(fmt(s) for s in shapes)} are not broadcast-compatible "
                       f"(sizes {sorted(sizes)} meet at axis {i})")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)


def _broadcast(op, dtype, src, arg):
  (x,) = src
  arg = tuple(arg)
  if len(arg) < len(x.shape) or any(s != 1 and s != t for s, t in zip(x.shape[::-1], arg[::-1])):
    raise _err(op, f"cannot broadcast shape {fmt(x.shape)} to shape {fmt(arg)}")
  return arg


def _permute(op, dtype, src, arg):
  (x,) = src
  if sorted(arg) != list(range(len(x.shape))):
    raise _err(op, f"{arg} is not a permutation of the axes of shape {fmt(x.shape)}")
  return tuple(x.shape[a] for a in arg)


def _pad(op, dtype, src, arg):
  (x,) = src
  if len(arg) != len(x.shape) or any(lo < 0 or hi < 0 for lo, hi in arg):
    raise _err(op, f"padding {arg} does not fit shape {fmt(x.shape)} (one non-negative (lo, hi) per axis)")
  return tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, arg))


def _slice(op, dtype, src, arg):
  (x,) = src
  if len(arg) != len(x.shape) or any(not (0 <= s <= e <= n and st > 0) for (s, e, st), n in zip(arg, x.shape)):
    raise _err(op, f"slice {arg} does not fit shape {fmt(x.shape)} (0 <= start <= stop <= size, step > 0 per axis)")
  return tuple(-(-(e - s) // st) for s, e, st in arg)


def _flip(op, dtype, src, arg):
  _check_axes(op, arg, len(src[0].shape), src[0].shape)
  return src[0].shape


def _concat(op, dtype, src, arg):
  s0 = src[0].shape
  if not 0 <= arg < len(s0): raise _err(op, f"axis {arg} is out of range for shape {fmt(s0)}")
  for s in src:
    if len(s.shape) != len(s0) or any(a != b for i, (a, b) in enumerate(zip(s.shape, s0)) if i != arg) or s.dtype is not dtype:
      raise _err(op, f"operands must agree except on axis {arg}, got "
                     f"{', '.join(f'{x.dtype}{fmt(x.shape)}' for x in src)}")
  return s0[:arg] + (sum(s.shape[arg] for s in src),) + s0[arg + 1:]


def _reduce(op, dtype, src, arg):
  (x,) = src
  _check_axes(op, arg, len(x.shape), x.shape)
  if x.dtype.is_complex and op is not Ops.REDUCE_SUM: raise _err(op, f"is not defined on complex operands, got {x.dtype}")
  if dtype is not x.dtype: raise _err(op, f"result dtype must be {x.dtype}, got {dtype}")
  return tuple(1 if i in arg else n for i, n in enumerate(x.shape))


def _cast(op, dtype, src, arg):
  (x,) = src
  if op is Ops.BITCAST and (x.dtype.is_complex or dtype.is_complex):
    raise _err(op, f"cannot bitcast {x.dtype} to {dtype}: complex values are not bitcast")
  if op is Ops.BITCAST and x.dtype.itemsize != dtype.itemsize:
    raise _err(op, f"cannot bitcast {x.dtype} to {dtype}: item sizes differ ({x.dtype.itemsize} vs {dtype.itemsize})")
  return x.shape


def _gather(op, dtype, src, arg):
  x, idx = src
  if not idx.dtype.is_int or len(idx.shape) < 1 or idx.shape[-1] > len(x.shape):
    raise _err(op, f"indices must be integers of shape (..., k) with k <= {len(x.shape)}, got {idx.dtype}{fmt(idx.shape)}")
  if dtype is not x.dtype: raise _err(op, f"result dtype must be {x.dtype}, got {dtype}")
  return idx.shape[:-1] + x.shape[idx.shape[-1]:]


def _scatter(op, dtype, src, arg):
  x, idx, upd = src
  out = _gather(op, dtype, (x, idx), None)
  if arg not in SCATTER_MODES: raise _err(op, f"mode must be one of {SCATTER_MODES}, got {arg!r}")
  if x.dtype.is_complex and arg not in ("add", "set", "mul"): raise _err(op, f"mode {arg!r} is not defined on {x.dtype}")
  if upd.shape != out or upd.dtype is not x.dtype:
    raise _err(op, f"updates must be {x.dtype}{fmt(out)} for indices {fmt(idx.shape)} into {fmt(x.shape)}, "
                   f"got {upd.dtype}{fmt(upd.shape)}")
  return x.shape


def _leaf(op, dtype, src, arg):
  if op is Ops.CONST: return ()
  if op is Ops.BUFFER: return arg.shape
  if op is Ops.PARAM: return tuple(arg[1])
  shape, axis = arg
  if not 0 <= axis < len(shape): raise _err(op, f"axis {axis} is out of range for shape {fmt(shape)}")
  if not dtype.is_int: raise _err(op, f"needs an integer dtype, got {dtype}")
  return tuple(shape)


def _avals(us) -> list: return [(tuple(u.shape), u.dtype) for u in us]


def _show(avals) -> str: return "(" + ", ".join(f"{d}{fmt(s)}" for s, d in avals) + ")"


def _expect(op, what: str, got, want):
  if got != want: raise _err(op, f"{what} must be {_show(want)}, got {_show(got)}")


def multi_avals(op: Ops, src, arg) -> list:
  """The (shape, dtype) of each result of an op with several results."""
  if op is Ops.COND: return _avals(arg[0].outputs)
  if op is Ops.SCAN:
    body, _, n_carry, length, _ = arg
    return _avals(body.outputs[:n_carry]) + [((length, *s), d) for s, d in _avals(body.outputs[n_carry:])]
  if op is Ops.WHILE: return _avals(arg[1].outputs)
  if op is Ops.CALLBACK: return list(arg.results)
  if op is Ops.LINALG: return linalg_avals(src, arg)
  return _avals(arg[0].outputs if isinstance(arg, tuple) else arg.outputs)


def _multi(op, dtype, src, arg):
  if dtype is not void: raise _err(op, f"result dtype must be void, got {dtype}")
  ins = _avals(src)
  if op is Ops.COND:
    idx, branches = src[0], arg
    if idx.shape != () or not idx.dtype.is_int: raise _err(op, f"index must be an integer scalar, got {idx.dtype}{fmt(idx.shape)}")
    for b in branches:
      _expect(op, "branch inputs", _avals(b.inputs), ins[1:])
      _expect(op, "branch outputs", _avals(b.outputs), _avals(branches[0].outputs))
  elif op is Ops.SCAN:
    body, n_consts, n_carry, length, _ = arg
    if not isinstance(length, int) or length < 0: raise _err(op, f"length must be an int >= 0, got {length!r}")
    xs = ins[n_consts + n_carry:]
    if any(not s or s[0] != length for s, _ in xs): raise _err(op, f"every xs must have leading size {length}, got {_show(xs)}")
    _expect(op, "body inputs", _avals(body.inputs), ins[:n_consts + n_carry] + [(s[1:], d) for s, d in xs])
    _expect(op, "body carry outputs", _avals(body.outputs[:n_carry]), ins[n_consts:n_consts + n_carry])
  elif op is Ops.WHILE:
    cond, body, n_consts = arg
    _expect(op, "cond inputs", _avals(cond.inputs), ins)
    _expect(op, "cond output", _avals(cond.outputs), [((), bool_)])
    _expect(op, "body inputs", _avals(body.inputs), ins)
    _expect(op, "body outputs", _avals(body.outputs), ins[n_consts:])
  elif op is Ops.LINALG: linalg_avals(src, arg)
  elif op is not Ops.CALLBACK:
    fun = arg[0] if isinstance(arg, tuple) else arg
    _expect(op, "function inputs", _avals(fun.inputs), ins)
  return ()


def _proj(op, dtype, src, arg):
  (m,) = src
  if m.op not in MULTI: raise _err(op, f"reads a result of an op with several results, not of {m.op.name.lower()}")
  avals = multi_avals(m.op, m.src, m.arg)
  if not 0 <= arg < len(avals): raise _err(op, f"result {arg} of {m.op.name.lower()} does not exist ({len(avals)} results)")
  shape, want = avals[arg]
  if dtype is not want: raise _err(op, f"result dtype must be {want}, got {dtype}")
  return shape


def _detach(op, dtype, src, arg):
  if dtype is not src[0].dtype: raise _err(op, f"result dtype must be {src[0].dtype}, got {dtype}")
  return src[0].shape


def _collective(op, dtype, src, arg):
  name, size = arg[0], arg[1]
  if not isinstance(name, str) or not isinstance(size, int) or size < 1:
    raise _err(op, f"arg must start with an axis name and its size, got {arg!r}")
  if op is Ops.AXIS_INDEX:
    if src or dtype is not dtypes.int32: raise _err(op, "takes no sources and gives an int32 scalar")
    return ()
  (x,) = src
  if dtype is not x.dtype: raise _err(op, f"result dtype must be {x.dtype}, got {dtype}")
  shape = list(x.shape)
  if op in (Ops.ALL_GATHER, Ops.REDUCE_SCATTER):
    axis, tiled = arg[2], arg[3]
    if not 0 <= axis <= len(shape) - (op is Ops.REDUCE_SCATTER or tiled):
      raise _err(op, f"axis {axis} is out of range for shape {fmt(x.shape)}")
    if op is Ops.ALL_GATHER:
      if tiled: shape[axis] *= size
      else: shape.insert(axis, size)
    elif tiled:
      if shape[axis] % size: raise _err(op, f"dimension {axis} of {fmt(x.shape)} does not divide over {size} lanes")
      shape[axis] //= size
    else:
      if shape[axis] != size: raise _err(op, f"dimension {axis} of {fmt(x.shape)} must equal the {size} lanes")
      del shape[axis]
  elif op is Ops.ALL_TO_ALL:
    split, concat = arg[2], arg[3]
    if not (0 <= split < len(shape) and 0 <= concat < len(shape)):
      raise _err(op, f"split axis {split} or concat axis {concat} is out of range for shape {fmt(x.shape)}")
    if shape[split] % size: raise _err(op, f"dimension {split} of {fmt(x.shape)} does not divide over {size} lanes")
    shape[split] //= size
    shape[concat] *= size
  return tuple(shape)


RULES = {Ops.RESHAPE: _reshape, Ops.BROADCAST: _broadcast, Ops.PERMUTE: _permute, Ops.PAD: _pad, Ops.SLICE: _slice,
         Ops.FLIP: _flip, Ops.CONCAT: _concat, Ops.CAST: _cast, Ops.BITCAST: _cast, Ops.GATHER: _gather,
         Ops.SCATTER: _scatter, Ops.WHERE: _elementwise,
         **{o: _elementwise for o in UNARY | BINARY}, **{o: _parts for o in PARTS}, **{o: _reduce for o in REDUCE}, **{o: _leaf for o in LEAF},
         Ops.FFT: _fft, Ops.DETACH: _detach, Ops.SHARDING_CONSTRAINT: _detach, Ops.OPTIMIZATION_BARRIER: _detach,
         Ops.PROJ: _proj, **{o: _multi for o in MULTI}, **{o: _collective for o in COLLECTIVE}}


def infer_shape(op: Ops, dtype: DType, src: tuple, arg) -> Shape:
  shape = RULES[op](op, dtype, src, arg)
  if shape and (min(shape) < 0 or math.prod(shape) * max(dtype.itemsize, 1) > INT64_MAX):
    check_size(shape, dtype, op.name.lower())
  return shape
