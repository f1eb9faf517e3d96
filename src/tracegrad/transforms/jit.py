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
import time
from typing import Callable, Sequence


from .. import run
from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Buffer, Graph, Ops, UOp
from ..parallel import spmd
from ..parallel.sharding import NamedSharding, P
from ..trace import trace
from . import shard
from .vmap import _broadcast_prefix, _per_leaf


def _nums(x) -> tuple[int, ...]: return (x,) if isinstance(x, int) else tuple(x)


class Compiled:
  """A jitted function compiled for one signature: call it with arguments of that signature. `kernels` lists the
  generated kernels (each with its `.source`), empty when the graph runs on the reference device."""

  def __init__(self, jitted: "Jitted", graph: Graph, key):
    self._jitted, self.graph, self._key = jitted, graph, key
    self.executable = run.executable(graph, search=jitted.search)

  @property
  def kernels(self) -> list:
    return list(self.executable.program.kernels) if self.executable.program is not None else []

  def as_text(self) -> str: return self.executable.source or str(self.graph)

  def __call__(self, *args, **kwargs):
    key, arrs, where = self._jitted._signature(args, kwargs)
    if key != self._key:
      raise TypeError(f"{self._jitted.name}: this compiled function takes arguments of the signature it was compiled "
                      f"for; {_reason(self._key, key)}")
    return self._jitted._dispatch(self.graph, key, arrs, len(args), where)


class Lowered:
  """A jitted function traced for one signature: `as_text()` prints its graph, `compile()` compiles it."""

  def __init__(self, jitted: "Jitted", graph: Graph, key):
    self._jitted, self.graph, self._key = jitted, graph, key

  def as_text(self) -> str: return str(self.graph)
  def compile(self) -> Compiled: return Compiled(self._jitted, self.graph, self._key)


def _call(ex: run.Executable, arrs: list[Array]) -> list:
  """The outputs of a compiled graph for concrete Arrays: numpy arrays, or on a GPU backend Buffers left in its
  memory (read where they are when they come back as inputs)."""
  if ex.resident:
    return ex.run_buffers([a._uop.arg if a._uop.op is Ops.BUFFER else Buffer(a._value().view()) for a in arrs])
  return ex.run([a._uop.arg.data if a._uop.op is Ops.BUFFER else a._value() for a in arrs])


class Jitted:
  """The result of jit(fun): a callable that traces fun once per signature and runs the compiled graph."""

  def __init__(self, fun: Callable, static_argnums, static_argnames, donate_argnums, search: int | None = None,
               in_shardings=None, out_shardings=None):
    functools.update_wrapper(self, fun)
    if search is not None and (not isinstance(search, int) or search < 0):
      raise ValueError(f"jit: search is a beam width, an int >= 0 (0: none), got {search!r}")
    self.search = search
    self.fun, self.static = fun, _nums(static_argnums)
    self.names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    self.name = f"jit({getattr(fun, '__name__', 'function')})"
    self.cache: dict = {}
    self._fast: dict = {}   # (tree, leaf avals, backend) of plain calls -> (graph, executable)
    self.in_shardings, self.out_shardings = in_shardings, out_shardings
    for what, tree in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
      for s in tree_util.leaves(tree):
        if s is not None and not isinstance(s, NamedSharding):
          raise TypeError(f"{self.name}: {what} must hold NamedShardings (or None), got {s!r}; lay an array out with "
                          f"NamedSharding(mesh, P(...))")
    self._sharded: dict = {}   # (signature, input shardings) -> (mesh, per-device plan, output shardings)
    self._constraints: dict = {}   # graph -> the shardings its with_sharding_constraint nodes name

  def _signature(self, args: tuple, kwargs: dict):
    n = len(args)
    if any(not -n <= i < n for i in self.static):
      raise ValueError(f"{self.name}: static_argnums {self.static} is out of range for {n} positional arguments")
    idx = sorted({i % n for i in self.static})
    statics = tuple((i, args[i]) for i in idx) + tuple((k, kwargs[k]) for k in self.names if k in kwargs)
    for where, v in statics:
      try:
        hash(v)
      except TypeError:
        raise TypeError(f"{self.name}: static argument {where!r} is a {type(v).__name__}, which is not hashable; "
                        f"pass a tuple (or another hashable value), or make it a traced argument") from None
    dyn = tuple(a for i, a in enumerate(args) if i not in idx)
    dkw = {k: v for k, v in kwargs.items() if k not in self.names}
    leaves, tree = tree_util.flatten((dyn, dkw))
    arrs = [x if type(x) is Array else to_array(x, fn=self.name) for x in leaves]
    key = (tree, tuple([(a.shape, a.dtype, a.weak_type) for a in arrs]), statics, run.default_backend())
    return key, arrs, (idx, dyn, dkw)

  def _graph(self, args: tuple, kwargs: dict):
    key, arrs, (idx, dyn, dkw) = self._signature(args, kwargs)
    g = self.cache.get(key)
    if g is None:
      n = len(args)

      def f(*d, **kw):
        it = iter(d)
        full = [args[i] if i in idx else next(it) for i in range(n)]
        return self.fun(*full, **kw, **{k: v for k, v in kwargs.items() if k in self.names})

      t0 = time.perf_counter()
      g, _ = trace(f, dyn, dkw, fn=self.name)
      why = "first call" if not self.cache else _reason(next(reversed(self.cache)), key)
      run.debug(1, f"trace {self.name}: {1e3 * (time.perf_counter() - t0):.1f} ms ({why})")
      if not g.closed()[1]: self.cache[key] = g  # a graph that closes over another trace's values is not reusable
    return g, key, arrs, (idx, dyn, dkw)

  def _dispatch(self, g: Graph, key, arrs: list[Array], nargs: int, where):
    """Run g: laid out over a mesh when an input or output sharding says so, else on the default device."""
    if not any(a.is_traced for a in arrs):
      ins = self._in_layouts(g, arrs, nargs, where)
      if ins is not None: return self._run_sharded(g, key, arrs, *ins)
    return self._run(g, arrs)

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
    if g not in self._constraints:
      self._constraints[g] = [u.arg for u in g.nodes() if u.op is Ops.SHARDING_CONSTRAINT]
    meshes = {s.mesh: None for s in chosen + tree_util.leaves(self.out_shardings) + self._constraints[g]
              if s is not None}
    if not meshes: return None
    if len(meshes) > 1:
      raise ValueError(f"{self.name}: the inputs and outputs are laid out over different meshes {list(meshes)}; put "
                       f"them on one mesh (device_put(x, NamedSharding(mesh, ...)))")
    mesh = next(iter(meshes))
    for i, (s, a) in enumerate(zip(given, arrs)):
      if s is not None: s.check(a.shape, f"{self.name}: in_shardings for argument leaf {i}")
    return mesh, [s or NamedSharding(mesh, P()) for s in chosen]

  def _run_sharded(self, g: Graph, key, arrs: list[Array], mesh, ins: list[NamedSharding]):
    hit = self._sharded.get((key, tuple(ins)))
    if hit is None:
      shell = tree_util.unflatten(g.out_tree, [0] * len(g.outputs))
      outs = _per_leaf(self.out_shardings, shell, NamedSharding,
                       f"{self.name}: out_shardings {self.out_shardings!r} is not a tree prefix of the outputs")
      for i, (s, o) in enumerate(zip(outs, g.outputs)):
        if s is not None: s.check(o.shape, f"{self.name}: out_shardings for output leaf {i}")
      local, outs = shard.partition(g, mesh, ins, outs)
      run.debug(1, f"shard {self.name} over {mesh}:\n{local}")
      hit = self._sharded[(key, tuple(ins))] = (spmd.Plan(local, run.executable), outs)
    plan, outs = hit
    return tree_util.unflatten(g.out_tree, shard.run_on_mesh(plan, mesh, arrs, ins, outs))

  def _run(self, g: Graph, arrs: list[Array]):
    if any(a.uop.traced for a in arrs):  # inside another transform: inline
      outs = [Array(o, w) for o, w in zip(g(*[a.uop for a in arrs]), g.out_weak)]
    else:
      outs = [Array(UOp.buffer(v), w) for v, w in zip(_call(run.executable(g, search=self.search), arrs), g.out_weak)]
    return tree_util.unflatten(g.out_tree, outs)

  def __call__(self, *args, **kwargs):
    plain = not kwargs and not self.static and self.in_shardings is None and self.out_shardings is None
    if plain:   # the common call: positional concrete Arrays on one device, of a signature seen before
      leaves, tree = tree_util.flatten(args)
      if all(type(a) is Array and a._shards is None for a in leaves):
        hit = self._fast.get((tree, tuple([(a._uop.shape, a._uop.dtype, a.weak_type, a._uop.traced) for a in leaves]),
                              run.default_backend()))
        if hit is not None:
          g, ex = hit
          outs = [Array(UOp.buffer(v), w) for v, w in zip(_call(ex, leaves), g.out_weak)]
          return tree_util.unflatten(g.out_tree, outs)
    g, key, arrs, where = self._graph(args, kwargs)
    out = self._dispatch(g, key, arrs, len(args), where)
    if plain and self.cache.get(key) is g and not self._constraints.get(g):
      leaves, tree = tree_util.flatten(args)
      if all(type(a) is Array and not a.is_traced and a._shards is None for a in leaves):
        avals = tuple([(a._uop.shape, a._uop.dtype, a.weak_type, False) for a in leaves])
        self._fast[(tree, avals, key[3])] = (g, run.executable(g, search=self.search))
    return out

  def lower(self, *args, **kwargs) -> Lowered:
    """The traced graph for these arguments' signature."""
    g, key, _, _ = self._graph(args, kwargs)
    return Lowered(self, g, key)

  def clear_cache(self) -> None:
    self.cache.clear()
    self._fast.clear()
    self._sharded.clear()
    self._constraints.clear()


def _reason(old, new) -> str:
  """Why a signature differs from another: the tree, a leaf's shape/dtype/weak type, a static value, the device."""
  (t0, a0, s0, d0), (t1, a1, s1, d1) = old, new
  if t0 != t1: return f"argument structure changed: {t0} -> {t1}"
  for i, (x, y) in enumerate(zip(a0, a1)):
    if x != y: return f"argument leaf {i} changed from {x[1]}{list(x[0])} to {y[1]}{list(y[0])}" + \
                      (" (weak type)" if x[:2] == y[:2] else "")
  if s0 != s1: return f"static arguments changed: {s0} -> {s1}"
  return f"device changed: {d0} -> {d1}"


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
