"""Tracing: run a Python function on abstract placeholders and record the Graph it builds."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np

from . import tree as tree_util
from .array import KNOWN, Array, to_array
from .ir import Graph, Ops, UOp, dtypes
from .viz import record


class ShapeDtypeStruct:
  """The abstract value of an array: shape and dtype (as jax.ShapeDtypeStruct)."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type: bool = False):
    self.shape, self.dtype, self.weak_type = tuple(shape), dtypes.as_dtype(dtype, "ShapeDtypeStruct"), weak_type

  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return int(np.prod(self.shape))
  def __repr__(self) -> str:
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{', weak_type=True' if self.weak_type else ''})"
  def __eq__(self, o): return isinstance(o, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (o.shape, o.dtype, o.weak_type)
  def __hash__(self): return hash((self.shape, self.dtype, self.weak_type))


def abstractify(x, fn: str) -> ShapeDtypeStruct:
  if isinstance(x, ShapeDtypeStruct): return x
  if isinstance(x, Array): return ShapeDtypeStruct(x.shape, x.dtype, x.weak_type)
  a = to_array(x, fn=fn)
  return ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)


def trace(f: Callable, args: Sequence, kwargs: dict | None = None, fn: str = "make_graph",
          known: bool = False, taps: list | None = None, step: bool = True) -> tuple[Graph, Any]:
  """The Graph of f(*args, **kwargs) over fresh placeholders for every array leaf; also f's output pytree. With
  `known`, the placeholders stand for the arguments' values while f runs (array.KNOWN): Python control flow on
  values computed from them works, as under JAX's grad and jvp outside jit, and the graph follows the branch taken.
  Given a `taps` list, the values that host callbacks (tap) read become outputs after f's, and `taps` receives
  (run, number of values) per callback in order, for the caller to run once those outputs are known. With `step`,
  VIZ shows the graph as a step (not for the bodies of composites, custom rules and control flow)."""
  kwargs = kwargs or {}
  leaves, in_tree = tree_util.flatten((tuple(args), kwargs))
  avals = [abstractify(x, fn) for x in leaves]
  params = [UOp.param(a.shape, a.dtype) for a in avals]
  placeholders = [Array(p, a.weak_type) for p, a in zip(params, avals)]
  a2, k2 = tree_util.unflatten(in_tree, placeholders)
  outer = None
  if known:
    values = {p: to_array(x, fn=fn).uop for p, x in zip(params, leaves) if not isinstance(x, ShapeDtypeStruct)}
    outer = KNOWN.set({**KNOWN.get(), **values})
  _TAPS.append([])
  try:
    out = f(*a2, **k2)
  finally:
    recorded = _TAPS.pop()
    if outer is not None: KNOWN.reset(outer)
  out_leaves, out_tree = tree_util.flatten(out)
  outs = []
  for i, o in enumerate(out_leaves):
    if not isinstance(o, (Array, int, float, bool, np.ndarray, np.generic)):
      raise TypeError(f"{fn}: output leaf {i} of {getattr(f, '__name__', 'the function')} is a {type(o).__name__}, "
                      f"not an array; return arrays or numbers (pytrees of them)")
    outs.append(to_array(o, fn=fn))
  if recorded and taps is not None:
    taps += [(run, len(arrays)) for run, arrays in recorded]
    outs += [a for _, arrays in recorded for a in arrays]
  elif recorded and fn.startswith("jit("):   # the tapped values become outputs; unflattening them runs the taps
    out_tree = tree_util.structure(_Tapped(out, [arrays for _, arrays in recorded], tuple(r for r, _ in recorded)))
    outs += [a for _, arrays in recorded for a in arrays]
  elif recorded and fn in _TAPS_RUN_AT_ONCE and not any(isinstance(x, ShapeDtypeStruct) for x in leaves):
    _run_now(Graph(tuple(params), tuple(a.uop for _, arrays in recorded for a in arrays), None, None, (), ()),
             recorded, [to_array(x, fn=fn) for x in leaves])
  g = Graph(tuple(params), tuple(o.uop for o in outs), in_tree, out_tree,
            tuple(a.weak_type for a in avals), tuple(o.weak_type for o in outs))
  if step:
    name = fn if "(" in fn else f"{fn} {getattr(f, '__name__', '')}".rstrip()
    record.step(f"trace {name}", g.outputs, g.inputs)
  return g, out


# ---- host callbacks (tracegrad.debug): recorded while tracing, run where the values are known ----

_TAPS: list[list] = []   # per trace in progress, innermost last: (run, traced Arrays) that tap() recorded
_TAPS_RUN_AT_ONCE = ("vjp", "jvp", "linearize")   # traces of concrete arguments, run once: their taps run at its end


def tap(run: Callable, arrays: list[Array]) -> None:
  """run(arrays) once the arrays' values are known: now when none is traced; else recorded in the innermost trace.
  A trace under jit makes them extra outputs and runs them after each call of the compiled program, in the order
  they were recorded; under grad, jvp and linearize they run once on the primal values; vmap, scan and cond make
  them outputs and tap again what they compute (once per element, step or branch taken, see their `taps=`), and a
  while_loop body calls them from the loop (a CALLBACK node); inside other traces of abstract values (make_jaxpr,
  a while_loop's condition) they do not run."""
  if not any(a.is_traced for a in arrays): run(arrays)
  elif _TAPS: _TAPS[-1].append((run, list(arrays)))


class _Tapped:
  """A traced function's output with the values its taps read: its unflattening returns the output alone, running
  the taps (or recording them in an enclosing trace) when it is given Arrays."""

  def __init__(self, out, values: list, runs: tuple): self.out, self.values, self.runs = out, values, runs


def _unflatten_tapped(runs: tuple, children):
  out, values = children
  for run, arrays in zip(runs, values):
    if all(isinstance(a, Array) for a in arrays): tap(run, list(arrays))
  return out


tree_util.register_pytree_node(_Tapped, lambda t: ((t.out, t.values), t.runs), _unflatten_tapped)


def tap_outputs(taps: list, values: list[Array], each: Callable[[Callable, list[Array]], None]) -> None:
  """Tap again, in order, each (run, n) that trace(taps=) collected, on its n of `values` (the traced function's
  extra outputs, as the caller computed them), through each(run, arrays)."""
  it = iter(values)
  for run, n in taps:
    arrays = [next(it) for _ in range(n)]
    tap(lambda arrs, run=run: each(run, arrs), arrays)


def _run_now(g: Graph, taps: list, args: list[Array]) -> None:
  vals = iter(Array(u) for u in g(*[a.uop for a in args]))
  for run, arrays in taps: tap(run, [next(vals) for _ in arrays])


def _split_static(args: tuple, static_argnums: Sequence[int], fn: str):
  n = len(args)
  static = sorted({(i + n if i < 0 else i) for i in static_argnums})
  for i in static:
    if not 0 <= i < n: raise ValueError(f"{fn}: static_argnums {tuple(static_argnums)} is out of range for {n} arguments")
  return static


def make_graph(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., Graph]:
  """A function that traces f on the abstract values of its arguments and returns the Graph (like make_jaxpr).

  >>> print(tracegrad.make_graph(lambda x: tnp.sin(x) * 2)(tnp.ones(3)))
  { lambda a:f32[3]. let
      b:f32[3] = sin a
      ...
  """
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  def graph_of(*args, **kwargs) -> Graph:
    static = _split_static(args, static_argnums, "make_graph")
    dyn = [a for i, a in enumerate(args) if i not in static]

    def g(*dargs, **kw):
      it = iter(dargs)
      return f(*[args[i] if i in static else next(it) for i in range(len(args))], **kw)

    return trace(g, dyn, kwargs, "make_graph")[0]

  return graph_of


class ClosedJaxpr:
  """A traced function as jax.make_jaxpr gives it: prints as its graph; `jaxpr`, `consts`, `in_avals`, `out_avals`
  and `eqns` (the graph's nodes past its inputs, in order) as JAX's."""

  def __init__(self, graph: Graph):
    self.graph = graph
    self.jaxpr, self.literals = self, []

  @property
  def consts(self) -> list: return [Array(u) for u in self.graph.closed()[1]]
  @property
  def in_avals(self) -> list:
    return [ShapeDtypeStruct(u.shape, u.dtype, w) for u, w in zip(self.graph.inputs, self.graph.in_weak)]
  @property
  def out_avals(self) -> list:
    return [ShapeDtypeStruct(u.shape, u.dtype, w) for u, w in zip(self.graph.outputs, self.graph.out_weak)]
  @property
  def eqns(self) -> list: return [u for u in self.graph.nodes() if u.op is not Ops.PARAM]
  @property
  def invars(self) -> list: return list(self.graph.inputs)
  @property
  def outvars(self) -> list: return list(self.graph.outputs)

  def pretty_print(self, **_options) -> str: return str(self.graph)
  def __str__(self) -> str: return str(self.graph)
  __repr__ = __str__


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), axis_env=None, return_shape: bool = False,
               abstracted_axes=None) -> Callable:
  """A function that traces fun on its arguments' abstract values and returns a ClosedJaxpr, as jax.make_jaxpr
  (with return_shape=True, also the output as ShapeDtypeStructs).

  >>> print(tracegrad.make_jaxpr(lambda x: tnp.cos(x) + 1.0)(1.0))
  { lambda a:f32[]. let
      b:f32[] = cos a
      c:f32[] = add b 1.0
    in (c) }
  """
  graph_of = make_graph(fun, static_argnums)

  def jaxpr_of(*args, **kwargs):
    g = graph_of(*args, **kwargs)
    jaxpr = ClosedJaxpr(g)
    if not return_shape: return jaxpr
    return jaxpr, tree_util.unflatten(g.out_tree, jaxpr.out_avals)

  jaxpr_of.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'function')})"
  return jaxpr_of


def eval_shape(f: Callable, *args, **kwargs):
  """The output of f as a pytree of ShapeDtypeStruct, found by tracing, with nothing computed.

  >>> tracegrad.eval_shape(lambda x: x.sum(0), tnp.ones((2, 3)))
  ShapeDtypeStruct(shape=(3,), dtype=float32)
  """
  g, out = trace(f, args, kwargs, "eval_shape", known=True)   # a branch on a concrete argument's value follows it
  structs = [ShapeDtypeStruct(o.shape, o.dtype, w) for o, w in zip(g.outputs, g.out_weak)]
  return tree_util.unflatten(g.out_tree, structs)


# ---- named composites: a function of primitives kept whole in the graph under its name ----

def composite(name: str, fun: Callable, *args, transposes: tuple | None = None, **static):
  """fun(*args, **static), where an argument is traced, as one COMPOSITE node named `name`: a graph prints it as
  `name`, lowering and differentiation expand its body, vmap batches it. On concrete arguments fun simply runs.
  `static` are hashable keyword arguments (axes, flags) the body is traced with. `transposes`, one entry per
  argument, gives reverse mode a rule `rule(ct, *args, **static) -> that argument's cotangent` in place of the body's
  own (None: the body's); fun must then close over no traced value.

  >>> print(tracegrad.make_graph(lambda x: composite("double", lambda v: v * 2, x))(tnp.ones(2)))
  { lambda a:f32[2]. let
      b:f32[2] = double a
    in (b) }
  """
  arrs = [a if isinstance(a, Array) else to_array(a, fn=name) for a in args]
  if not any(a.is_traced for a in arrs): return fun(*arrs, **static)
  avals = tuple((a.shape, a.dtype, a.weak_type) for a in arrs)
  static_items = tuple(sorted(static.items()))
  g, free = _composite_graph(name, fun, static_items, avals)
  if transposes is not None and (free or len(transposes) != len(arrs)):
    raise ValueError(f"composite: {name} has {len(arrs)} arguments and {len(transposes)} transposes, and may close "
                     f"over no traced value when it has them (it closes over {len(free)})")
  rules = () if transposes is None else (tuple(transposes), static_items)
  outs = UOp.multi(Ops.COMPOSITE, (*free, *(a.uop for a in arrs)), (g, name, *rules))
  return tree_util.unflatten(g.out_tree, [Array(o, w) for o, w in zip(outs, g.out_weak)])


def _composite_body(name: str, fun: Callable, static: tuple, avals: tuple) -> tuple[Graph, list[UOp]]:
  """fun's closed Graph on placeholders of avals, and the outside values it closes over."""
  g, _ = trace(lambda *xs: fun(*xs, **dict(static)), [ShapeDtypeStruct(*a) for a in avals], fn=name, step=False)
  return g.closed()


_BODIES: dict = {}   # (name, fun, statics, avals) -> the body Graph, for bodies that close over no traced value
_BODIES_KEPT = 1024


def _composite_graph(name: str, fun: Callable, static: tuple, avals: tuple) -> tuple[Graph, list[UOp]]:
  """As _composite_body, the same Graph for the same function, statics and avals (so equal calls share one node);
  traced afresh when a static argument is not hashable."""
  key = (name, fun, static, avals)
  try:
    hash(key)
  except TypeError:
    key = None
  if key is not None and (g := _BODIES.get(key)) is not None: return g, []
  g, free = _composite_body(name, fun, static, avals)
  if key is not None and not free:
    if len(_BODIES) >= _BODIES_KEPT: del _BODIES[next(iter(_BODIES))]
    _BODIES[key] = g
  return g, free


# ---- named axes (vmap(axis_name=), shard_map): what collectives traced inside them span ----

_AXES: list[tuple[str, int]] = []   # the named axes in scope while a function is traced, innermost last


@contextlib.contextmanager
def named_axis(name: str, size: int):
  """While tracing under vmap(axis_name=name) or shard_map: collectives over `name` span `size` lanes."""
  _AXES.append((name, size))
  try: yield
  finally: _AXES.pop()


def axis_size(name, fn: str) -> int:
  """The size of the named axis in scope; NameError, from `fn`, when no enclosing transform binds it."""
  if not isinstance(name, str): raise TypeError(f"{fn}: an axis name must be a string, got {name!r}")
  for n, size in reversed(_AXES):
    if n == name: return size
  bound = [n for n, _ in _AXES]
  raise NameError(f"{fn}: unbound axis name {name!r}; a collective needs an enclosing vmap(f, axis_name={name!r}) or "
                  f"shard_map over a mesh axis of that name (names in scope: {bound})")
