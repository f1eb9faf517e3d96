"""Array: the user-facing value. It holds a UOp; a concrete one is computed on demand, a traced one belongs to a
graph being built by make_graph, jit, grad or vmap."""
from __future__ import annotations

import contextvars
import math

import numpy as np

from .devices import TracedValueError, recycled_memory
from .errors import TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError
from .ir import Buffer, Ops, UOp, dtypes, substitute
from .ir.dtypes import DType
from .ir.shapes import fmt
from .parallel.sharding import NamedSharding, Shard, Sharding, ShardedBuffers, SingleDeviceSharding
from . import run
from . import tree as tree_util

# concrete graphs deeper than this are computed when built, so eager loops keep bounded graphs
MAX_LAZY_DEPTH = 48

# the inputs of the traces in progress that stand for known values (grad, jvp, vjp of concrete arguments, as JAX runs
# them): each placeholder -> the value it stands for, itself possibly an outer such placeholder. A traced value built
# only from them has a value, so Python control flow on it works outside jit, as in JAX.
KNOWN: contextvars.ContextVar[dict] = contextvars.ContextVar("known_inputs", default={})


def _known_value(u: UOp) -> UOp | None:
  """u with every known placeholder replaced by its value, or None when it still depends on an unknown one."""
  known = KNOWN.get()
  while u.traced and known:
    v = substitute([u], known)[0]
    if v is u: return None
    u = v
  return None if u.traced else u


# the error a traced value's conversion raises, by what converted it (as jax.errors names them)
_CONVERSION = {"bool(Array)": TracerBoolConversionError, "operator.index(Array)": TracerIntegerConversionError,
               "np.asarray": TracerArrayConversionError}


def _traced_message(x: "Array", what: str) -> str:
  return (f"{what}: this value ({x.aval_str()}) is traced: it depends on the arguments of a function being transformed "
          f"(make_graph, jit, grad, vmap), so it has no concrete value yet. For control flow on it use "
          f"tracegrad.numpy.where, tracegrad.lax.cond or tracegrad.lax.select; for a Python value, mark the "
          f"argument static (jit(f, static_argnums=...)) or compute it outside the transformed function.")


class Array:
  """An n-dimensional array. Outside a trace it is concrete; numpy reads it with np.asarray(x).

  >>> import tracegrad.numpy as tnp
  >>> tnp.arange(3) * 2
  Array([0, 2, 4], dtype=int32)
  """
  # _u: the node (None until first read where the value is held elsewhere); _shards: per-device buffers
  # (sharding.ShardedBuffers); _held: (numpy array, DType) of a compiled program's output
  __slots__ = ("_u", "weak_type", "_shards", "_held", "__weakref__")
  __array_priority__ = 100

  def __init__(self, uop: UOp, weak_type: bool = False):
    if not uop.traced and uop.depth > MAX_LAZY_DEPTH:
      uop = UOp.buffer(run.realize([uop])[0])
    self._u, self._shards, self._held = uop, None, None
    self.weak_type = weak_type

  @classmethod
  def _of(cls, data: np.ndarray, dtype: DType, weak_type: bool = False) -> "Array":
    """An Array of a numpy array already of `dtype` (a compiled program's output). Its BUFFER node is made when
    something first reads it: an output passed straight back into a compiled call (a training step's state) never
    needs one."""
    a = cls.__new__(cls)
    a._u, a._shards, a._held, a.weak_type = None, None, (data, dtype), weak_type
    return a

  @classmethod
  def _sharded(cls, shards, weak_type: bool = False) -> "Array":
    """An Array whose value lives in per-device buffers (sharding.ShardedBuffers); the global value is put
    together from them when an operation first reads it."""
    a = cls.__new__(cls)
    a._u, a._shards, a._held, a.weak_type = None, shards, None, weak_type
    return a

  @property
  def _uop(self) -> UOp:
    if self._u is None:
      if self._held is None: self._u = UOp.buffer(self._shards.assemble())
      else: self._u, self._held = UOp._buffer(self._held[1], Buffer(self._held[0])), None
    return self._u

  @_uop.setter
  def _uop(self, u: UOp) -> None: self._u = u

  @property
  def uop(self) -> UOp: return self._uop
  @property
  def shape(self) -> tuple[int, ...]:
    if (u := self._u) is not None: return u.shape
    return self._shards.shape if self._held is None else self._held[0].shape
  @property
  def dtype(self) -> DType:
    if (u := self._u) is not None: return u.dtype
    return self._shards.dtype if self._held is None else self._held[1]
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return math.prod(self.shape)
  @property
  def itemsize(self) -> int: return self.dtype.itemsize
  @property
  def nbytes(self) -> int: return self.size * self.itemsize
  @property
  def is_traced(self) -> bool: return self._u is not None and self._u.traced

  def aval_str(self) -> str: return f"{self.dtype.short}[{','.join(map(str, self.shape))}]" + ("{weak}" if self.weak_type else "")

  # ---- concrete values ----
  def _value(self, what: str = "Array") -> np.ndarray:
    if self._uop.op is Ops.BUFFER: return self._uop.arg.data
    if self._uop.traced:
      if (u := _known_value(self._uop)) is None:
        raise _CONVERSION.get(what, TracedValueError)(_traced_message(self, what))
      return run.realize([u], what)[0]
    v = run.realize([self._uop], what)[0]
    if self._uop.depth > 0: self._uop = UOp.buffer(v)
    return v

  def __array__(self, dtype=None, copy=None):
    v = self._value("np.asarray")
    if copy: v = v.copy()
    return v if dtype is None else v.astype(dtype, copy=False)

  def block_until_ready(self) -> "Array":
    """Wait until the value is computed (one a device holds stays there); returns self."""
    if self._held is not None: return self   # a compiled program's output, computed before it returned
    if (u := self._uop).op is Ops.BUFFER: u.arg.wait()
    elif not u.traced: self._value()
    return self

  @property
  def sharding(self):
    """How the value is laid out over devices: the NamedSharding it was put with, else the default device's
    SingleDeviceSharding."""
    return SingleDeviceSharding(run.default_device()) if self._shards is None else self._shards.sharding

  @property
  def addressable_shards(self) -> list:
    """Each device's block: Shard(.device, .index, .data, .replica_id)."""
    if self._shards is None:
      return [Shard(run.default_device(), tuple(slice(None) for _ in self.shape), self)]
    ids = self._shards.replica_ids()
    return [Shard(d, index, Array(UOp.buffer(block), self.weak_type), ids[d])
            for d, (index, block) in self._shards.buffers.items()]

  def devices(self) -> set: return set(self.sharding.device_set)

  @property
  def device(self):
    """The device holding the value, or its sharding when that spans several devices."""
    s = self.sharding
    return next(iter(s.device_set)) if len(s.device_set) == 1 else s

  def to_device(self, device, /, *, stream=None) -> "Array":
    """The array on `device` (as device_put).

    >>> tnp.ones(2).to_device(tracegrad.devices()[0]).shape
    (2,)
    """
    return device_put(self, device)

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of the value, made by numpy (on the CPU)."""
    v = self._value("Array.__dlpack__")
    kwargs = {k: a for k, a in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)) if a is not None}
    try:
      return v.__dlpack__(stream=stream, **kwargs)
    except BufferError:
      if copy is False: raise
      return v.copy().__dlpack__(stream=stream, **kwargs)   # a read-only buffer exports to older readers as a copy

  def __dlpack_device__(self) -> tuple[int, int]: return (1, 0)   # DLPack's CPU device

  def __setitem__(self, key, value):
    raise TypeError(f"Array.__setitem__: tracegrad arrays are immutable, so x[{key!r}] = ... cannot change this "
                    f"{self.aval_str()} array in place; use x = x.at[{key!r}].set(value), which returns the updated "
                    f"array")

  def tolist(self): return self._value("Array.tolist").tolist()

  def item(self, *args):
    v = self._value("Array.item")
    if not args and v.size != 1:
      raise ValueError(f"Array.item: only an array of size 1 converts to a Python scalar, this one has shape {fmt(self.shape)}")
    return v.item(*args)

  def _scalar(self, what: str, kind):
    if self.size != 1:
      if kind is bool:
        raise ValueError(f"{what}: the truth value of an array with more than one element is ambiguous (shape "
                         f"{fmt(self.shape)}); use a.any() or a.all()")
      raise TypeError(f"{what}: only an array of size 1 converts to a Python scalar, this one has shape "
                      f"{fmt(self.shape)}")
    return kind(self._value(what).reshape(()))

  def __bool__(self) -> bool: return self._scalar("bool(Array)", bool)
  def __float__(self) -> float: return self._scalar("float(Array)", float)
  def __int__(self) -> int: return self._scalar("int(Array)", int)
  def __complex__(self) -> complex: return self._scalar("complex(Array)", complex)

  def __index__(self) -> int:
    if not self.dtype.is_int and not self.dtype.is_bool:
      raise TypeError(f"Array.__index__: only integer arrays can be used as an index, this one is {self.dtype}")
    return self._scalar("operator.index(Array)", int)

  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d Array")
    return self.shape[0]

  __hash__ = None  # type: ignore[assignment]

  def __repr__(self) -> str:
    if self._uop.traced: return f"Traced<{self.aval_str()}>"
    v = self._value("repr")
    body = np.array2string(v, separator=", ", prefix="Array(")
    return f"Array({body}, dtype={self.dtype.name}{', weak_type=True' if self.weak_type else ''})"

  def __str__(self) -> str:
    return f"Traced<{self.aval_str()}>" if self._uop.traced else str(self._value("str"))

  def __format__(self, spec: str) -> str:
    return format(self.item(), spec) if spec and self.size == 1 else format(str(self), spec)

  def __getstate__(self): return {"value": np.asarray(self), "weak_type": self.weak_type}
  def __setstate__(self, st): self.__init__(UOp.buffer(np.array(st["value"])), st["weak_type"])
  def __reduce__(self): return (_rebuild, (np.array(np.asarray(self)), self.weak_type))


def _rebuild(value: np.ndarray, weak: bool) -> Array: return Array(UOp.buffer(value), weak)


def _canonical_np(a: np.ndarray, fn: str) -> np.ndarray:
  if a.dtype.kind in "OUSMmV" and a.dtype != dtypes.bfloat16.np:
    raise TypeError(f"{fn}: cannot convert an array of dtype {a.dtype} to a tracegrad Array; pass numbers")
  d = dtypes.canonicalize(dtypes.as_dtype(a.dtype, fn))
  out = recycled_memory.aligned(a.shape, d.np)   # a vector load of it never straddles two cache lines
  np.copyto(out, a, casting="unsafe")
  return out


def to_array(x, dtype: DType | None = None, fn: str = "asarray") -> Array:
  """x (an Array, numpy array, Python or numpy scalar, or nested lists of them) as an Array of `dtype`."""
  if isinstance(x, Array):
    if dtype is None or dtype is x.dtype: return x
    return Array(x.uop.cast(dtype))
  if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
    weak = not isinstance(x, bool)
    d = dtype or (dtypes.bool_ if isinstance(x, bool) else dtypes.default_int() if isinstance(x, int) else
                  dtypes.default_complex() if isinstance(x, complex) else dtypes.default_float())
    if isinstance(x, complex) and not d.is_complex: x = x.real   # as numpy converts, dropping the imaginary part
    if isinstance(x, int) and not isinstance(x, bool) and d.is_int:
      info = np.iinfo(d.np)
      if not info.min <= x <= info.max:
        raise OverflowError(f"{fn}: Python int {x} is out of range for {d} ({info.min}..{info.max})")
    return Array(UOp.const(d, x), weak_type=weak and dtype is None)
  if isinstance(x, np.generic) or isinstance(x, np.ndarray):
    a = _canonical_np(np.asarray(x), fn)
  elif isinstance(x, (list, tuple)):
    if any(isinstance(e, Array) for e in _flat(x)):
      return Array._stack([to_array(e, dtype, fn) for e in x])   # tracegrad.numpy's stack, installed on Array
    try:
      a = _canonical_np(np.asarray(x), fn)
    except ValueError as e:
      raise ValueError(f"{fn}: nested sequences must be rectangular: {e}") from None
  elif hasattr(x, "__array__"):
    a = _canonical_np(np.asarray(x), fn)
  else:
    raise TypeError(f"{fn}: cannot convert {type(x).__name__} to an Array; pass an Array, a numpy array, a number or a list")
  if dtype is not None and a.dtype != dtype.np:
    with np.errstate(all="ignore"): a = a.astype(dtype.np)
  return Array(UOp.buffer(a))


def _flat(x):
  for e in x:
    if isinstance(e, (list, tuple)): yield from _flat(e)
    else: yield e


def device_put(x, device=None):
  """x (a pytree of arrays or numbers) as concrete Arrays on `device` (default: the default device; a GPU device keeps
  a copy in its memory, which compiled programs read there) or laid out by a sharding
  (tracegrad.sharding.NamedSharding: each device gets its own buffer holding its block), as jax.device_put.

  >>> tracegrad.device_put(np.arange(3.0), tracegrad.devices()[0])
  Array([0., 1., 2.], dtype=float32)
  """
  mine = [d for ds in run.registry().values() for d in ds]
  if isinstance(device, SingleDeviceSharding): device = device.device
  targets = list(device.device_set) if isinstance(device, Sharding) else [] if device is None else [device]
  for d in targets:
    if not any(d is m for m in mine):
      raise ValueError(f"device_put: {d!r} is not one of this process's devices: {mine}")

  def put(v):
    a = to_array(v, fn="device_put")
    if a.is_traced: return a
    if isinstance(device, NamedSharding):
      device.check(a.shape, "device_put")
      return Array._sharded(ShardedBuffers.cut(np.asarray(a), a.dtype, device, set(run.local_devices())), a.weak_type)
    target = run.default_device() if device is None else device
    if hasattr(target, "put"): return Array(UOp.buffer(target.put(np.asarray(a))), a.weak_type)   # into its memory
    return Array(UOp.buffer(np.asarray(a)), a.weak_type)

  return tree_util.map(put, x)
