"""jit: trace once per argument signature, compile the Graph for the default device, and reuse both.

Inside another trace a jitted function inlines its Graph, so jit composes with every other transform.

>>> f = tracegrad.jit(lambda x: x * 2)
>>> f(tnp.arange(3))
Array([0, 2, 4], dtype=int32)
>>> print(f.lower(tnp.arange(3)).as_text())
{ lambda a:i32[3]. let
    b:i32[3] = broadcast[3] 2
    c:i32[3] = mul a b
  in (c) }
"""
from __future__ import annotations

import functools
import inspect
import time
import types
import weakref
from typing import Callable, Sequence


from .. import run
from .. import tree as tree_util
from ..config import config
from ..array import Array, to_array
from ..ir import Buffer, Graph, Ops, UOp
from ..parallel import spmd
from ..parallel.sharding import NamedSharding, P
from ..trace import trace
from ..viz import record
from . import shard
from .vmap import _broadcast_prefix, _per_leaf


def _nums(x) -> tuple[int, ...]: return (x,) if isinstance(x, int) else tuple(x)


class Compiled:
  """A jitted function compiled for one signature: call it with arguments of that signature. `kernels` lists the
  generated kernels (each with its `.source`), empty when the graph runs on the reference device."""

  def __init__(self, jitted: "Jitted", graph: Graph, key):
    self._jitted, self.graph, self._key = jitted, graph, key
    self.executable = run.executable(graph, search=jitted.search)
    self._entries: dict = {}

  @property
  def kernels(self) -> list:
    return list(self.executable.program.kernels) if self.executable.program is not None else []

  def as_text(self) -> str: return self.executable.source or str(self.graph)

  def __call__(self, *args, **kwargs):
    key, arrs, where = self._jitted._signature(args, kwargs)
    if _graph_key(key) != self._key:
      raise TypeError(f"{self._jitted.name}: this compiled function takes arguments of the signature it was compiled "
                      f"for; {_reason(self._key, _graph_key(key))}")
    entry = self._entries.get(key)
    if entry is None: entry = self._entries[key] = self._jitted._entry(key, arrs, args, kwargs, where, self.graph)
    return entry(arrs)


class Lowered:
  """A jitted function traced for one signature: `as_text()` prints its graph, `compile()` compiles it."""

  def __init__(self, jitted: "Jitted", graph: Graph, key):
    self._jitted, self.graph, self._key = jitted, graph, key

  def as_text(self) -> str: return str(self.graph)
  def compile(self) -> Compiled: return Compiled(self._jitted, self.graph, self._key)


def _where() -> tuple:
  """The backend and the settings a trace depends on (config.trace_key): a change of either traces again."""
  return run.default_backend(), config.trace_key


def _graph_key(key) -> tuple:
  """The part of a call's key that decides its graph: the tree, each leaf's (shape, dtype, weak type), the static
  arguments and the backend (not whether a leaf is traced or laid out over a mesh)."""
  tree, avals, statics, backend = key
  return tree, tuple([v[:3] for v in avals]), statics, backend


def _inlined(g: Graph) -> Callable:
  """Calls inside another transform: g's nodes join the enclosing trace."""
  def call(arrs: list[Array]):
    return tree_util.unflatten(g.out_tree, [Array(o, w) for o, w in zip(g(*[a.uop for a in arrs]), g.out_weak)])
  return call


def _compiled(g: Graph, ex: run.Executable) -> Callable:
  """Calls on concrete Arrays: the executable runs on their buffers; on a GPU backend the outputs stay in its memory
  (and are read where they are when they come back as inputs)."""
  tree, weak = g.out_tree, g.out_weak
  if ex.resident:
    def call(arrs: list[Array]):
      outs = ex.run_buffers([a._uop.arg if a._uop.op is Ops.BUFFER else Buffer(a._value().view()) for a in arrs])
      return tree_util.unflatten(tree, [Array(UOp.buffer(v), w) for v, w in zip(outs, weak)])
  else:
    def call(arrs: list[Array]):
      outs = ex.run([h[0] if (h := a._held) is not None else u.arg.contiguous() if (u := a._u) is not None and
                     u.op is Ops.BUFFER else a._value() for a in arrs])
      return tree_util.unflatten(tree, [Array(UOp.buffer(v), w) for v, w in zip(outs, weak)])
  return call


_BUFFER, _CONST = Ops.BUFFER, Ops.CONST


def _direct_key(args: tuple):
  """(key, arrays) for a call whose positional arguments (or their pytree leaves) are all concrete Arrays held in
  buffers or constants: the key holds the backend, the tree when there is one, and each leaf's shape, dtype and weak
  type; the arrays are the buffers' values. None for any other call."""
  key, arrays = [run.default_backend(), config.trace_key], []
  leaves = _flat_leaves(args, key)
  for a in leaves:
    if type(a) is not Array: return None
    if (held := a._held) is not None:   # a compiled call's output, not yet read
      data, dtype = held
      key += data.shape, dtype.name, a.weak_type
      arrays.append(data)
      continue
    if a._shards is not None or (op := (u := a._u).op) is not _BUFFER and op is not _CONST: return None
    key += u.shape, u.dtype.name, a.weak_type   # a name: its hash is kept, a DType's is computed
    arrays.append(u.arg.contiguous() if op is _BUFFER else a._value())   # a constant's value is remembered
  return tuple(key), arrays


def _flat_leaves(args: tuple, key: list) -> list:
  """args' leaves, in the order pytrees flatten them, adding their structure to key: without flattening a pytree
  when each argument is an Array or a dict, tuple or list of Arrays (a parameter dict: the common call)."""
  leaves = []
  for a in args:
    t = type(a)
    if t is Array:
      leaves.append(a)
      continue
    if t is dict:
      try:
        names = sorted(a)   # as pytrees order a dict's entries (str keys)
      except TypeError:
        break
      key.append(("dict", *names))
      for n in names:
        if type(n) is not str or type(v := a[n]) is not Array: break
        leaves.append(v)
      else: continue
      break
    if t is tuple or t is list:
      key.append((t, len(a)))
      for v in a:
        if type(v) is not Array: break
        leaves.append(v)
      else: continue
    break
  else:
    return leaves
  del key[2:]
  leaves, tree = tree_util.flatten(args)
  key.append(tree)
  return leaves


def _direct(g: Graph, ex: run.Executable) -> Callable | None:
  """A call on the `_direct_key` path: the buffers' arrays straight into the compiled program and its outputs into
  Arrays; None where the executable keeps outputs in a device's memory or runs on interp."""
  if (runner := ex.runner) is None: return None
  out = [(o.dtype, w) for o, w in zip(g.outputs, g.out_weak)]
  tree = g.out_tree
  if tree.is_leaf():
    (dtype, weak), = out
    return lambda arrays: Array._of(runner(arrays)[0], dtype, weak)
  return lambda arrays: tree_util.unflatten(tree, [Array._of(v, d, w) for v, (d, w) in zip(runner(arrays), out)])


def _static_args(fun: Callable, nums: tuple[int, ...], names: tuple[str, ...]) -> tuple[tuple, tuple, dict]:
  """static_argnums and static_argnames completed from fun's signature, as JAX does (a parameter named static is
  static when passed by position too, and one numbered static when passed by name), and each static number's
  parameter name."""
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):   # no signature to read (some builtins)
    return nums, names, {}
  positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  by_name = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  nums = nums + tuple(positional.index(n) for n in names if n in positional and positional.index(n) not in nums)
  named = {i: positional[i] for i in nums if 0 <= i < len(positional) and positional[i] in by_name}
  return nums, names + tuple(n for n in named.values() if n not in names), named


# the caches of every jit of one function with the same options (two jit(f) share their traces, as in JAX)
_SHARED: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()


def _caches(fun: Callable, options: tuple) -> tuple[dict, dict, dict, dict]:
  try:
    per = _SHARED.setdefault(fun, {})
    return per.setdefault(options, ({}, {}, {}, {}))
  except TypeError:   # a function that cannot be weakly referenced, or options that cannot be hashed
    return {}, {}, {}, {}


class Jitted:
  """The result of jit(fun): a callable that traces fun once per signature and runs the compiled graph.

  A call takes one path: its signature (`_signature`), the entry cached for it (`_entry`: the graph inlined into an
  enclosing trace, its executable on the default device, or its partitioned program on a mesh), and that entry's
  run."""

  def __init__(self, fun: Callable, static_argnums, static_argnames, donate_argnums, search: int | None = None,
               in_shardings=None, out_shardings=None):
    functools.update_wrapper(self, fun)
    if search is not None and (not isinstance(search, int) or search < 0):
      raise ValueError(f"jit: search is a beam width, an int >= 0 (0: none), got {search!r}")
    self.search = search
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    self.given = _nums(static_argnums)
    self.fun, (self.static, self.names, self._named) = fun, _static_args(fun, self.given, names)
    self.name = f"jit({getattr(fun, '__name__', 'function')})"
    self.in_shardings, self.out_shardings = in_shardings, out_shardings
    # graph key -> the traced Graph; call key -> what runs a call of that key; _direct_key -> what runs such a call
    self.cache, self._entries, self._direct, self._undirect = _caches(fun, (self.static, self.names, search,
                                                                            in_shardings, out_shardings))
    for what, tree in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
      for s in tree_util.leaves(tree):
        if s is not None and not isinstance(s, NamedSharding):
          raise TypeError(f"{self.name}: {what} must hold NamedShardings (or None), got {s!r}; lay an array out with "
                          f"NamedSharding(mesh, P(...))")

  def __get__(self, obj, objtype=None):
    """As a method: the instance is its first argument (static when static_argnums includes 0)."""
    return self if obj is None else types.MethodType(self, obj)

  def __call__(self, *args, **kwargs):
    if config._values["jax_disable_jit"]: return self.fun(*args, **kwargs)   # tracegrad.disable_jit
    if self._direct and not kwargs and (direct := _direct_key(args)) is not None and \
       (call := self._direct.get(direct[0])) is not None:
      return call(direct[1])
    key, arrs, where = self._signature(args, kwargs)
    entry = self._entries.get(key)
    if entry is None: entry = self._entry(key, arrs, args, kwargs, where)
    out = entry(arrs)
    if key in self._undirect: self._make_direct(key, args)   # the run computed the lazy leaves it read
    return out

  def _make_direct(self, key, args: tuple) -> None:
    """The direct path (`_direct_key`) for calls like `args` to `key`'s compiled entry, once each of their leaves is
    held in a buffer or a constant; until then (an optimizer state's lazy zeros, which a first call computes) the
    entry waits in `_undirect` for the next call."""
    if (direct := _direct_key(args)) is None: return
    if (waiting := self._undirect.pop(key, None)) is not None and (call := _direct(*waiting)) is not None:
      self._direct[direct[0]] = call

  def _signature(self, args: tuple, kwargs: dict):
    """(key, the dynamic argument leaves as Arrays, where they sit among the arguments). The key holds the tree, each
    leaf's (shape, dtype, weak type, whether it is traced, its NamedSharding or None), the static arguments and the
    backend."""
    if self.static or kwargs:
      n = len(args)
      if any(not -n <= i < n and self._named.get(i) not in kwargs for i in self.given):
        raise ValueError(f"{self.name}: static_argnums {self.given} is out of range for {n} positional arguments")
      idx = sorted({i % n for i in self.static if -n <= i < n})
      statics = tuple((i, args[i]) for i in idx) + tuple((k, kwargs[k]) for k in self.names if k in kwargs)
      for at, v in statics:
        try:
          hash(v)
        except TypeError:
          raise TypeError(f"{self.name}: static argument {at!r} is a {type(v).__name__}, which is not hashable; "
                          f"pass a tuple (or another hashable value), or make it a traced argument") from None
      dyn = tuple(a for i, a in enumerate(args) if i not in idx)
      dkw = {k: v for k, v in kwargs.items() if k not in self.names}
      leaves, tree = tree_util.flatten((dyn, dkw))
    else:   # the common call: positional arguments only
      idx, statics, dyn, dkw = [], (), args, {}
      leaves, tree = tree_util.flatten(args)
    arrs = [x if type(x) is Array else to_array(x, fn=self.name) for x in leaves]
    avals = tuple([(a.shape, a.dtype, a.weak_type, False, a._shards.sharding) if a._shards is not None else
                   (u.shape, u.dtype, a.weak_type, u.traced, None) if (u := a._u) is not None else
                   (a.shape, a.dtype, a.weak_type, False, None) for a in arrs])
    return (tree, avals, statics, _where()), arrs, (idx, dyn, dkw)

  def _entry(self, key, arrs: list[Array], args: tuple, kwargs: dict, where, graph: Graph | None = None) -> Callable:
    """What runs calls of `key`, made (tracing and compiling on a miss) and kept while its graph is reusable."""
    g = graph if graph is not None else self._graph(_graph_key(key), args, kwargs, where)
    if any(v[3] for v in key[1]):
      entry = _inlined(g)
    else:
      layout = self._in_layouts(g, arrs, len(args), where)
      ex = run.executable(g, search=self.search) if layout is None else None
      entry = self._on_mesh(g, *layout) if layout is not None else _compiled(g, ex)
      if ex is not None and not self.static and not kwargs and self.cache.get(_graph_key(key)) is g:
        self._undirect[key] = (g, ex)
        self._make_direct(key, args)
    if graph is None and self.cache.get(_graph_key(key)) is g: self._entries[key] = entry
    return entry

  def _graph(self, gkey, args: tuple, kwargs: dict, where) -> Graph:
    """The graph of a graph key: traced on the first call of that key, then cached (unless it closes over another
    trace's values)."""
    g = self.cache.get(gkey)
    if g is not None: return g
    idx, dyn, dkw = where
    n = len(args)

    fun = self.fun
    if config._values["tracegrad_typecheck"]:
      from ..typing import typechecked
      fun = typechecked(fun)

    def f(*d, **kw):
      it = iter(d)
      full = [args[i] if i in idx else next(it) for i in range(n)]
      return fun(*full, **kw, **{k: v for k, v in kwargs.items() if k in self.names})

    t0 = time.perf_counter()
    with record.recording(self.name) as rec:
      g, _ = trace(f, dyn, dkw, fn=self.name)
    record.bind(g, rec)
    why = "first call" if not self.cache else _reason(next(reversed(self.cache)), gkey)
    run.debug(1, f"trace {self.name}: {1e3 * (time.perf_counter() - t0):.1f} ms ({why})")
    if not g.closed()[1]: self.cache[gkey] = g
    return g

  def _in_layouts(self, g: Graph, arrs: list[Array], nargs: int, where):
    """The mesh and each input's NamedSharding (in_shardings, else the sharding the array has, else replicated), or
    None when no input, output or sharding constraint in g lays anything out over a mesh."""
    idx, dyn, dkw = where
    spec = self.in_shardings
    if spec is None or isinstance(spec, NamedSharding):
      given = [spec] * len(arrs)
    else:
      if not isinstance(spec, (tuple, list)) or len(spec) != nargs:
        raise ValueError(f"{self.name}: in_shardings must be one NamedSharding or a tuple with one entry per "
                         f"positional argument ({nargs} here), got {spec!r}")
      mine = tuple(spec[i] for i in range(nargs) if i not in idx)
      given = _broadcast_prefix(mine, dyn, f"{self.name}: in_shardings {spec!r} is not a tree prefix of the arguments")
      given += [None] * (len(arrs) - len(given))
    chosen = [s if s is not None else a._shards.sharding if a._shards is not None and
              isinstance(a._shards.sharding, NamedSharding) else None for s, a in zip(given, arrs)]
    constraints = [u.arg for u in g.nodes() if u.op is Ops.SHARDING_CONSTRAINT]
    meshes = {s.mesh: None for s in chosen + tree_util.leaves(self.out_shardings) + constraints if s is not None}
    if not meshes: return None
    if len(meshes) > 1:
      raise ValueError(f"{self.name}: the inputs and outputs are laid out over different meshes {list(meshes)}; put "
                       f"them on one mesh (device_put(x, NamedSharding(mesh, ...)))")
    mesh = next(iter(meshes))
    for i, (s, a) in enumerate(zip(given, arrs)):
      if s is not None: s.check(a.shape, f"{self.name}: in_shardings for argument leaf {i}")
    return mesh, [s or NamedSharding(mesh, P()) for s in chosen]

  def _on_mesh(self, g: Graph, mesh, ins: list[NamedSharding]) -> Callable:
    """Calls laid out over a mesh: g partitioned into the program every device runs on its blocks."""
    shell = tree_util.unflatten(g.out_tree, [0] * len(g.outputs))
    outs = _per_leaf(self.out_shardings, shell, NamedSharding,
                     f"{self.name}: out_shardings {self.out_shardings!r} is not a tree prefix of the outputs")
    for i, (s, o) in enumerate(zip(outs, g.outputs)):
      if s is not None: s.check(o.shape, f"{self.name}: out_shardings for output leaf {i}")
    local, outs = shard.partition(g, mesh, ins, outs)
    run.debug(1, f"shard {self.name} over {mesh}:\n{local}")
    plan = spmd.Plan(local, run.executable)
    return lambda arrs: tree_util.unflatten(g.out_tree, shard.run_on_mesh(plan, mesh, arrs, ins, outs))

  def lower(self, *args, **kwargs) -> Lowered:
    """The traced graph for these arguments' signature."""
    key, _, where = self._signature(args, kwargs)
    gkey = _graph_key(key)
    return Lowered(self, self._graph(gkey, args, kwargs, where), gkey)

  def clear_cache(self) -> None:
    self.cache.clear()
    self._entries.clear()
    self._direct.clear()
    self._undirect.clear()


def _reason(old, new) -> str:
  """Why a signature differs from another: the tree, a leaf's shape/dtype/weak type, a static value, the device."""
  (t0, a0, s0, d0), (t1, a1, s1, d1) = old, new
  if t0 != t1: return f"argument structure changed: {t0} -> {t1}"
  for i, (x, y) in enumerate(zip(a0, a1)):
    if x != y: return f"argument leaf {i} changed from {x[1]}{list(x[0])} to {y[1]}{list(y[0])}" + \
                      (" (weak type)" if x[:2] == y[:2] else "")
  if s0 != s1: return f"static arguments changed: {s0} -> {s1}"
  return f"device or settings (x64, random bits) changed: {d0} -> {d1}"


def jit(fun: Callable | None = None, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = (), search: int | None = None, in_shardings=None, out_shardings=None,
        **_options):
  """fun, traced once for each signature (tree structure, shapes, dtypes, static arguments, device) and run as one
  compiled program, as jax.jit. Usable as a decorator, with or without arguments. `search=N` runs a kernel search of
  beam width N on its kernels (default: TRACEGRAD_SEARCH; results are cached on disk).

  When an argument is laid out over a mesh (device_put with a NamedSharding) or in_shardings / out_shardings say
  so (a NamedSharding, or a tuple / pytree prefix of them, None for "as it comes"), the program is partitioned:
  every device runs it on its own blocks, with the collectives the layouts need, and each result stays in
  per-device blocks laid out by out_shardings (or as the program leaves it).

  >>> mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  >>> f = tracegrad.jit(lambda x: x.sum(0), in_shardings=NamedSharding(mesh, P("i")))
  >>> f(tnp.ones((4, 2))).sharding.spec
  PartitionSpec(None,)
  """
  make = lambda f: Jitted(f, static_argnums, static_argnames, donate_argnums, search, in_shardings, out_shardings)
  return make if fun is None else make(fun)
