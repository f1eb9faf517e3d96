"""The smaller top-level names of jax: settings as context managers, host transfers, host callbacks, arrays built
from blocks, custom_gradient, linear_transpose, checkpoint policies. tracegrad re-exports each of them.

>>> with tracegrad.disable_jit():
...   tracegrad.jit(lambda x: x.is_traced)(tnp.ones(2))
False
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import sys
import types
from typing import Any, Callable

import numpy as np

from . import run
from . import tree
from .array import Array, device_put, to_array
from .config import config
from .ir import Ops, UOp, dtypes
from .ir.ops import HostCall
from .parallel import distributed
from .parallel.sharding import NamedSharding, ShardedBuffers, Sharding, SingleDeviceSharding
from .trace import ShapeDtypeStruct, abstractify
from .transforms import custom_vjp, vjp
from .transforms.jit import _SHARED as _JIT_CACHES

float0 = np.dtype([("float0", np.void, 0)])   # the tangent dtype of integer and boolean values, as jax.float0


class _State:
  """A setting used as a context manager, `with tracegrad.enable_x64(True): ...`, its `.value` the current one (as
  JAX's config states)."""

  def __init__(self, name: str, allowed: tuple | None = None, unsupported: tuple = (), on_change=None):
    self.name, self._allowed, self._unsupported, self._on_change = name, allowed, unsupported, on_change
    self.__name__ = name[len("jax_"):]

  @property
  def value(self): return config.read(self.name)

  @contextlib.contextmanager
  def __call__(self, new_val=True):
    fn = self.__name__
    if self._allowed is not None and new_val not in self._allowed:
      raise ValueError(f"{fn}: new_val must be one of {self._allowed}, got {new_val!r}")
    if new_val in self._unsupported:
      raise NotImplementedError(f"{fn}: {new_val!r} is not supported; tracegrad implements {self._allowed[0]!r}")
    old = self.value
    config.update(self.name, new_val)
    undo = self._on_change(new_val) if self._on_change else None
    try:
      yield
    finally:
      config.update(self.name, old)
      if undo: undo()

  def __repr__(self) -> str: return f"{self.__name__}(value={self.value!r})"


def _debug_logging(on) -> Callable:
  """Trace logging (TRACEGRAD_DEBUG level 1) while a logging setting is on; returns what undoes it."""
  old = run._DEBUG
  if on: run._DEBUG = max(old, 1)

  def undo(): run._DEBUG = old
  return undo


enable_x64 = _State("jax_enable_x64")
default_matmul_precision = _State("jax_default_matmul_precision")
log_compiles = _State("jax_log_compiles", on_change=_debug_logging)
explain_cache_misses = _State("jax_explain_cache_misses", on_change=_debug_logging)
numpy_dtype_promotion = _State("jax_numpy_dtype_promotion", ("standard", "strict"), ("strict",))
numpy_rank_promotion = _State("jax_numpy_rank_promotion", ("allow", "warn", "raise"))
threefry_partitionable = _State("jax_threefry_partitionable")


def disable_jit(disable: bool = True):
  """A context manager inside which jitted functions run their Python eagerly, op by op (as jax.disable_jit).

  >>> with tracegrad.disable_jit():
  ...   tracegrad.jit(lambda x: float(x.sum()))(tnp.ones(3))
  3.0
  """
  return _State("jax_disable_jit")(bool(disable))


@contextlib.contextmanager
def default_device(device):
  """A context manager inside which values are computed on `device` (a Device, a platform name, or None for no
  change); tracegrad computes on the first device of a backend, so `device` must be one.

  >>> with tracegrad.default_device(tracegrad.devices()[0]):
  ...   tnp.ones(2).device == tracegrad.devices()[0]
  True
  """
  if device is None:
    yield
    return
  backends = run.registry()
  if isinstance(device, str):
    name = device
    if name not in backends: run._probe(name)
    if name not in run.registry():
      raise ValueError(f"default_device: unknown platform {device!r}; have {list(backends)}")
  else:
    name = next((b for b, ds in backends.items() if any(d is device for d in ds)), None)
    if name is None: raise ValueError(f"default_device: {device!r} is not a device of this process: {run.devices()}")
    if device is not run.local_devices(name)[0]:
      raise NotImplementedError(f"default_device: tracegrad computes on the first device of a backend "
                                f"({run.local_devices(name)[0]!r}), not {device!r}; lay arrays out over several "
                                f"devices with device_put and a NamedSharding")
  old = run._state["backend"]
  run._state["backend"] = name
  try:
    yield
  finally:
    run._state["backend"] = old


@contextlib.contextmanager
def _no_effect(*args, **kwargs):
  yield


def transfer_guard(new_val: str):
  """A context manager accepting jax.transfer_guard's levels; tracegrad does not guard transfers (it has no effect).

  >>> with tracegrad.transfer_guard("allow"): pass
  """
  levels = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
  if new_val not in levels: raise ValueError(f"transfer_guard: new_val must be one of {levels}, got {new_val!r}")
  return _no_effect()


transfer_guard_host_to_device = transfer_guard_device_to_device = transfer_guard_device_to_host = transfer_guard


def ensure_compile_time_eval():
  """A context manager, as jax.ensure_compile_time_eval; in tracegrad a value that does not depend on a traced
  argument is always computed when it is made, inside jit too, so it has no effect.

  >>> with tracegrad.ensure_compile_time_eval(): int(tnp.arange(3).sum())
  3
  """
  return _no_effect()


def named_scope(name: str):
  """A context manager naming the operations inside it in JAX's profiles; tracegrad records no names (no effect).

  >>> with tracegrad.named_scope("layer1"): pass
  """
  if not isinstance(name, str): raise TypeError(f"named_scope: name must be a str, got {type(name).__name__} {name!r}")
  return _no_effect()


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """fun itself: JAX names its operations in profiles, tracegrad records no names.

  >>> tracegrad.named_call(tnp.sin, name="s")(0.0)
  Array(0., dtype=float32, weak_type=True)
  """
  return fun


def block_until_ready(x):
  """x (a pytree) once every Array in it is computed.

  >>> tracegrad.block_until_ready({"a": tnp.ones(2) * 2})
  {'a': Array([2., 2.], dtype=float32)}
  """
  for leaf in tree.leaves(x):
    if isinstance(leaf, Array): leaf.block_until_ready()
  return x


def copy_to_host_async(x):
  """x; tracegrad's values are computed into host memory, so there is nothing to start (as jax.copy_to_host_async).

  >>> tracegrad.copy_to_host_async(tnp.ones(1))
  Array([1.], dtype=float32)
  """
  return x


def effects_barrier() -> None:
  """Nothing to wait for: tracegrad runs a program's host callbacks before the call returns.

  >>> tracegrad.effects_barrier()
  """


def device_get(x):
  """x with every Array replaced by a numpy array of its value (other leaves as they are), as jax.device_get.

  >>> tracegrad.device_get((tnp.arange(2), 3))
  (array([0, 1], dtype=int32), 3)
  """
  return tree.map(lambda v: np.asarray(v) if isinstance(v, Array) else v, x)


def clear_caches() -> None:
  """Forget every traced and compiled function (jit's caches and the compiled programs in memory; the disk cache
  of programs stays), as jax.clear_caches.

  >>> tracegrad.clear_caches()
  """
  for per in list(_JIT_CACHES.values()):
    for caches in per.values():
      for c in caches: c.clear()
  _JIT_CACHES.clear()
  run._executables.clear()


def typeof(x) -> ShapeDtypeStruct:
  """The abstract value (shape, dtype, weak type) of an array or number, as jax.typeof.

  >>> tracegrad.typeof(tnp.ones((2, 3)))
  ShapeDtypeStruct(shape=(2, 3), dtype=float32)
  """
  return abstractify(x, "typeof")


def host_count(backend=None) -> int:
  """How many processes (hosts) run this program: process_count().

  >>> tracegrad.host_count()
  1
  """
  return distributed.process_count()


def host_id(backend=None) -> int:
  """This process's index: process_index().

  >>> tracegrad.host_id()
  0
  """
  return distributed.process_index()


def process_indices(backend=None) -> list[int]:
  """The indices of every process: [0, ..., process_count() - 1].

  >>> tracegrad.process_indices()
  [0]
  """
  return list(range(distributed.process_count()))


host_ids = process_indices


def print_environment_info(return_string: bool = False) -> str | None:
  """The versions of tracegrad, numpy and Python, the default backend and the devices (printed, or returned).

  >>> "tracegrad:" in tracegrad.print_environment_info(return_string=True)
  True
  """
  info = "\n".join([f"tracegrad:    {importlib.metadata.version('tracegrad')}", f"numpy:        {np.__version__}",
                    f"python:       {sys.version}", f"platform:     {platform.platform()}",
                    f"backend:      {run.default_backend()}", f"devices:      {run.devices()}",
                    f"process_count: {distributed.process_count()}"])
  if return_string: return info
  print(info)
  return None


def pure_callback(callback: Callable, result_shape_dtypes, *args, sharding=None, vmap_method: str | None = None,
                  **kwargs):
  """callback(*args, **kwargs) on numpy values, its result made Arrays of result_shape_dtypes' shapes and dtypes, as
  jax.pure_callback. Under jit the compiled program calls it where it needs the result (cpu device); vmap batches it
  as vmap_method says ("sequential": one call per element; "expand_dims": one call, unbatched arguments with a
  leading axis of size 1; "broadcast_all": one call, every argument batched); it has no derivative.

  >>> tracegrad.jit(lambda x: tracegrad.pure_callback(np.sin, tracegrad.ShapeDtypeStruct((2,), tnp.float32), x))(
  ...   tnp.zeros(2))
  Array([0., 0.], dtype=float32)
  """
  if not callable(callback):
    raise TypeError(f"pure_callback: callback must be callable, got {type(callback).__name__} {callback!r}")
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"pure_callback: vmap_method must be one of {', '.join(map(repr, VMAP_METHODS))}, got "
                     f"{vmap_method!r}")
  leaves, treedef = tree.flatten((args, kwargs))
  where = [i for i, v in enumerate(leaves) if isinstance(v, Array) or isinstance(v, (np.ndarray, np.generic))]
  want, want_tree = tree.flatten(result_shape_dtypes)
  results = tuple((tuple(w.shape), w.dtype) for w in (abstractify(w, "pure_callback") for w in want))

  def fn(vals: list) -> list:
    full = list(leaves)
    for i, v in zip(where, vals): full[i] = v
    a, kw = tree.unflatten(treedef, full)
    got, got_tree = tree.flatten(callback(*a, **kw))
    if got_tree != want_tree:
      raise TypeError(f"pure_callback: the callback returned a result of structure {got_tree}, but "
                      f"result_shape_dtypes has structure {want_tree}")
    return got

  call = HostCall(fn, results, f"pure_callback({getattr(callback, '__name__', 'callback')})", vmap_method)
  arrays = [to_array(leaves[i], fn="pure_callback") for i in where]
  if not any(a.is_traced for a in arrays):
    out = [to_array(v, fn="pure_callback") for v in call([np.asarray(a) for a in arrays])]
  else:
    out = [Array(u) for u in UOp.multi(Ops.CALLBACK, tuple(a.uop for a in arrays), call)]
  return tree.unflatten(want_tree, out)


VMAP_METHODS = (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


def custom_gradient(fun: Callable) -> Callable:
  """fun, which returns (value, vjp_rule), as a function returning value whose derivative is the rule's, as
  jax.custom_gradient. The rule takes the cotangent of the value and returns one cotangent per argument (or the
  only one). tracegrad keeps the arguments and calls fun again in the backward pass to get the rule.

  >>> @tracegrad.custom_gradient
  ... def f(x): return tnp.sin(x), lambda g: g * 3.0
  >>> tracegrad.grad(f)(0.0)
  Array(3., dtype=float32, weak_type=True)
  """
  @custom_vjp
  def wrapped(*args):
    return fun(*args)[0]

  def fwd(*args): return fun(*args)[0], args

  def bwd(args, ct):
    cts = fun(*args)[1](ct)
    return cts if isinstance(cts, (tuple, list)) else (cts,)

  wrapped.defvjp(fwd, bwd)
  return wrapped


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
  """The transpose of the linear function fun, whose arguments look like primals (arrays or ShapeDtypeStructs): a
  function of an output cotangent returning the tuple of input cotangents, as jax.linear_transpose.

  >>> tracegrad.linear_transpose(lambda x: 2.0 * x, tnp.zeros(2))(tnp.ones(2))
  (Array([2., 2.], dtype=float32),)
  """
  zeros = tree.map(lambda p: _zeros_like(abstractify(p, "linear_transpose")), primals)
  for z in tree.leaves(zeros):
    if not z.dtype.is_float:
      raise TypeError(f"linear_transpose: the primals must be floating point, got {z.dtype.name}")

  def transposed(out_cotangent):
    return tuple(vjp(fun, *zeros)[1](out_cotangent))
  return transposed


def _zeros_like(s: ShapeDtypeStruct) -> Array:
  return to_array(np.zeros(s.shape, s.dtype.np), fn="linear_transpose")


def _blocks_to_array(fn: str, shape, sharding, blocks: dict, dtype) -> Array:
  """An Array of `shape` whose devices hold `blocks` ({device: block}) as `sharding` lays it out."""
  shape = tuple(shape)
  if isinstance(sharding, SingleDeviceSharding):
    block = next(iter(blocks.values()))
    return to_array(block, None if dtype is None else dtypes.as_dtype(dtype, fn), fn=fn)
  if not isinstance(sharding, NamedSharding):
    raise TypeError(f"{fn}: sharding must be a NamedSharding or SingleDeviceSharding, got {sharding!r}")
  indices = sharding.devices_indices_map(shape)
  for d, b in blocks.items():
    want = tuple(len(range(*sl.indices(n))) for sl, n in zip(indices[d], shape))
    if tuple(b.shape) != want:
      raise ValueError(f"{fn}: {d!r}'s block should have shape {want} for shape {shape} laid out by {sharding}, got "
                       f"{tuple(b.shape)}")
  dt = dtypes.canonicalize(dtypes.as_dtype(dtype if dtype is not None else next(iter(blocks.values())).dtype, fn))
  return Array._sharded(ShardedBuffers({d: np.asarray(b, dt.np) for d, b in blocks.items()}, shape, dt, sharding))


def _local(sharding, shape) -> dict:
  if isinstance(sharding, SingleDeviceSharding): return {sharding.device: tuple(slice(None) for _ in shape)}
  if not isinstance(sharding, Sharding): raise TypeError(f"sharding must be a Sharding, got {sharding!r}")
  mine = set(run.local_devices())
  return {d: i for d, i in sharding.devices_indices_map(tuple(shape)).items() if d in mine}


def make_array_from_callback(shape, sharding, data_callback: Callable, dtype=None) -> Array:
  """The Array of `shape` laid out by `sharding` whose block on each of this process's devices is
  data_callback(index), index the tuple of slices of the global array it holds (as jax.make_array_from_callback).

  >>> mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  >>> s = tracegrad.sharding.NamedSharding(mesh, tracegrad.P("i"))
  >>> tracegrad.make_array_from_callback((3,), s, lambda index: np.arange(3.0)[index])
  Array([0., 1., 2.], dtype=float32)
  """
  blocks = {d: np.asarray(data_callback(index)) for d, index in _local(sharding, shape).items()}
  return _blocks_to_array("make_array_from_callback", shape, sharding, blocks, dtype)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None) -> Array:
  """The Array of `shape` laid out by `sharding` from each of this process's devices' blocks, given in the order of
  sharding.devices_indices_map(shape) (tracegrad's arrays do not say which device holds them).

  >>> mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  >>> s = tracegrad.sharding.NamedSharding(mesh, tracegrad.P("i"))
  >>> tracegrad.make_array_from_single_device_arrays((2,), s, [tnp.ones(2)])
  Array([1., 1.], dtype=float32)
  """
  local = list(_local(sharding, shape))
  arrays = list(arrays)
  if len(arrays) != len(local):
    raise ValueError(f"make_array_from_single_device_arrays: got {len(arrays)} arrays for the {len(local)} devices "
                     f"of this process in {sharding}")
  return _blocks_to_array("make_array_from_single_device_arrays", shape, sharding,
                          {d: np.asarray(a) for d, a in zip(local, arrays)}, dtype)


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
  """The Array laid out by `sharding` from this process's data; with one process the data is the whole array.

  >>> mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  >>> s = tracegrad.sharding.NamedSharding(mesh, tracegrad.P("i"))
  >>> tracegrad.make_array_from_process_local_data(s, np.ones(2, np.float32)).shape
  (2,)
  """
  data = np.asarray(local_data)
  if distributed.process_count() > 1:
    raise NotImplementedError("make_array_from_process_local_data: with several processes, build the array with "
                              "make_array_from_callback")
  if global_shape is not None and tuple(global_shape) != data.shape:
    raise ValueError(f"make_array_from_process_local_data: with one process global_shape must be the data's shape "
                     f"{data.shape}, got {tuple(global_shape)}")
  return device_put(data, sharding)


def _policy(name: str, doc: str) -> Callable:
  def policy(prim, *args, **params) -> bool: return name in ("everything_saveable", "dots_saveable")
  policy.__name__ = policy.__qualname__ = name
  policy.__doc__ = doc
  return policy


def _names_policy(name: str) -> Callable:
  def make(*names, **kwargs) -> Callable: return _policy(name, f"The policy {name}{names}.")
  make.__name__ = make.__qualname__ = name
  return make


checkpoint_policies = types.SimpleNamespace(
  **{n: _policy(n, f"jax.checkpoint_policies.{n}") for n in
     ("everything_saveable", "nothing_saveable", "dots_saveable", "checkpoint_dots", "dots_with_no_batch_dims_saveable",
      "checkpoint_dots_with_no_batch_dims")},
  **{n: _names_policy(n) for n in
     ("save_only_these_names", "save_any_names_but_these", "save_anything_except_these_names",
      "save_and_offload_only_these_names", "offload_dot_with_no_batch_dims", "save_from_both_policies")})
checkpoint_policies.__doc__ = ("The policy names of jax.checkpoint_policies. tracegrad.checkpoint accepts each and "
                               "recomputes every intermediate value whatever the policy (nothing_saveable's choice): "
                               "values and derivatives are the same, only the work differs.")
