"""Batching: vmap. One batching rule per primitive, in BATCH_RULES.

A batched node's twin carries the batch on axis 0. A rule sees the node `u` and `c`: c.b[i] is the twin of source i
(None when that source is not batched), c.full(i) the twin or the source broadcast along a new axis 0, c.size the
batch size. It returns u's twin (for an op with several results, the list of its results' twins).

>>> tracegrad.vmap(lambda x: x @ x)(tnp.ones((4, 3))).shape
(4,)
"""
from __future__ import annotations

import contextlib
from typing import Callable

import numpy as np
import optree

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Graph, Ops, PatternMatcher, UOp, UPat, dtypes, substitute, toposort
from ..ir.ops import BINARY, COLLECTIVE, UNARY, HostCall
from ..run import concrete
from ..trace import ShapeDtypeStruct, named_axis, tap_outputs, trace
from ..viz import record
from . import build as B


class _Ctx:
  __slots__ = ("u", "b", "size", "name")

  def __init__(self, u: UOp, b: tuple, size: int, name: str | None = None):
    self.u, self.b, self.size, self.name = u, b, size, name

  def full(self, i: int) -> UOp:
    s = self.u.src[i]
    return self.b[i] if self.b[i] is not None else s.broadcast((self.size, *s.shape))


def _same(c, u): return UOp(u.op, u.dtype, tuple(c.full(i) for i in range(len(u.src))), u.arg)
def _axes(c, u): return UOp(u.op, u.dtype, (c.full(0),), tuple(a + 1 for a in u.arg))


def _broadcast(c, u):
  x = c.full(0)
  lead = len(u.arg) - u.src[0].ndim
  return x.reshape((c.size,) + (1,) * lead + u.src[0].shape).broadcast((c.size, *u.arg))


def _with_batch_column(c, idx: UOp) -> UOp:
  col = UOp.iota(idx.shape[:-1] + (1,), 0, idx.dtype)
  return UOp.concat([col, idx], idx.ndim - 1)


def _gather(c, u):
  if c.b[0] is None: return u.src[0].gather(c.b[1])
  return c.b[0].gather(_with_batch_column(c, c.full(1)))


def _scatter(c, u):
  return c.full(0).scatter(_with_batch_column(c, c.full(1)), c.full(2), u.arg)


# ---- ops with sub-graphs ----

def batch_graph(g: Graph, which: list[bool], size: int, force: list[bool] | bool = True) -> tuple[Graph, list[bool]]:
  """g with the inputs marked in `which` batched on a new axis 0, and whether each output is batched; outputs
  marked in `force` (True: all) are batched even when they do not depend on a batched input."""
  params = [UOp.param((size, *p.shape), p.dtype) if w else p for p, w in zip(g.inputs, which)]
  twins = batch_nodes(list(g.outputs), {p: q for p, q, w in zip(g.inputs, params, which) if w}, size)
  force = [force] * len(twins) if isinstance(force, bool) else force
  outs, flags = [], []
  for o, t, f in zip(g.outputs, twins, force):
    outs.append(t if t is not None else o.broadcast((size, *o.shape)) if f else o)
    flags.append(t is not None or f)
  return Graph(tuple(params), tuple(outs)), flags


def _callback(c, u):
  """One call per element (sequential), or one call on the batched values: unbatched operands with a leading axis of
  size 1 (expand_dims) or broadcast to the batch (broadcast_all), as jax.pure_callback's vmap_method says."""
  call, n = u.arg, c.size
  method = call.vmap_method
  if method is None:
    raise NotImplementedError(f"vmap: {call.name} has vmap_method=None; pass vmap_method='sequential' (one call per "
                              f"element), 'expand_dims' or 'broadcast_all' (one call on the batch) to map it")
  if method.startswith("sequential"):
    def fn(vals):
      per = [call([v[i] for v in vals]) for i in range(n)]
      return [np.stack(r) for r in zip(*per)] if per else [np.zeros(r.shape, r.dtype.np) for r in results]
    ops = [c.full(i) for i in range(len(u.src))]
  else:
    fn = call.fn
    ops = [c.full(i) if method != "expand_dims" or b is not None else s.reshape((1, *s.shape))
           for i, (b, s) in enumerate(zip(c.b, u.src))]
  results = tuple(((n, *sh), d) for sh, d in call.results)
  return UOp.multi(Ops.CALLBACK, tuple(ops), HostCall(fn, results, call.name, method))


def _cond(c, u):
  branches = u.arg
  which = [x is not None for x in c.b[1:]]
  if c.b[0] is None:
    new = tuple(batch_graph(b, which, c.size)[0] for b in branches)
    return UOp.multi(Ops.COND, (u.src[0], *(c.b[i + 1] if w else u.src[i + 1] for i, w in enumerate(which))), new)
  ops = [c.b[i + 1] if w else u.src[i + 1] for i, w in enumerate(which)]
  outs = [batch_graph(b, which, c.size)[0](*ops) for b in branches]
  idx = c.b[0].alu(Ops.MAX, B.zeros(c.b[0])).alu(Ops.MIN, B.const(c.b[0], len(branches) - 1))
  res = outs[-1]
  for k in range(len(branches) - 2, -1, -1):
    hit = B.eq(idx, B.const(idx, k))
    res = [hit.reshape(hit.shape + (1,) * (o.ndim - 1)).broadcast(o.shape).where(o, r) for o, r in zip(outs[k], res)]
  return res


def _scan(c, u):
  body, n_consts, n_carry, length, reverse = u.arg
  which = [x is not None for x in c.b]
  wc, wcar, wx = which[:n_consts], which[n_consts:n_consts + n_carry], which[n_consts + n_carry:]
  ny = len(body.outputs) - n_carry
  while True:
    _, flags = batch_graph(body, wc + wcar + wx, c.size, wcar + [True] * ny)
    if flags[:n_carry] == wcar: break
    wcar = [a or b for a, b in zip(wcar, flags[:n_carry])]
  g, _ = batch_graph(body, wc + wcar + wx, c.size, wcar + [True] * ny)
  consts = [c.b[i] if w else u.src[i] for i, w in enumerate(wc)]
  carry = [c.full(n_consts + i) if w else u.src[n_consts + i] for i, w in enumerate(wcar)]
  xs = [B.moveaxis(c.b[n_consts + n_carry + i], 0, 1) if w else u.src[n_consts + n_carry + i] for i, w in enumerate(wx)]
  res = UOp.multi(Ops.SCAN, (*consts, *carry, *xs), (g, n_consts, n_carry, length, reverse))
  out_carry = [r if w else r.broadcast((c.size, *r.shape)) for r, w in zip(res[:n_carry], wcar)]
  return out_carry + [B.moveaxis(y, 1, 0) for y in res[n_carry:]]


def _any(pred: UOp) -> UOp: return pred.reduce(Ops.REDUCE_MAX, (0,)).reshape(())


def _while(c, u):
  cond, body, n_consts = u.arg
  which = [x is not None for x in c.b]
  wc, wcar = which[:n_consts], which[n_consts:]
  while True:
    _, pflag = batch_graph(cond, wc + wcar, c.size, False)
    if pflag[0]: new = [True] * len(wcar)
    else: new = [a or b for a, b in zip(wcar, batch_graph(body, wc + wcar, c.size, wcar)[1])]
    if new == wcar: break
    wcar = new
  consts = [c.b[i] if w else u.src[i] for i, w in enumerate(wc)]
  carry = [c.full(n_consts + i) if w else u.src[n_consts + i] for i, w in enumerate(wcar)]
  cg, pflag = batch_graph(cond, wc + wcar, c.size, False)
  bg, _ = batch_graph(body, wc + wcar, c.size, wcar)
  if pflag[0]:  # lanes finish at different steps: run while any lane runs, and hold the finished ones
    ins = tuple(UOp.param(p.shape, p.dtype) for p in bg.inputs)
    p = cg(*ins)[0]
    outs = [p.reshape((c.size,) + (1,) * (s.ndim - 1)).broadcast(s.shape).where(s, x)
            for s, x in zip(bg(*ins), ins[n_consts:])]
    bg = Graph(ins, tuple(outs))
    cg = Graph(cg.inputs, (_any(cg.outputs[0]),))
  res = UOp.multi(Ops.WHILE, (*consts, *carry), (cg, bg, n_consts))
  return [r if w else r.broadcast((c.size, *r.shape)) for r, w in zip(res, wcar)]


def _remat(c, u):
  return UOp.multi(Ops.REMAT, tuple(c.full(i) for i in range(len(u.src))), batch_graph(u.arg, [True] * len(u.src), c.size)[0])


def _composite(c, u):
  """The composite of the batched body, under the same name; unbatched operands stay unbatched. Transpose rules,
  written for the unbatched operands, are left behind: the batched body's own derivative stands in."""
  fun, name = u.arg[:2]
  which = [x is not None for x in c.b]
  g, _ = batch_graph(fun, which, c.size)
  return UOp.multi(Ops.COMPOSITE, tuple(c.b[i] if w else s for i, (s, w) in enumerate(zip(u.src, which))), (g, name))


def _closed_over_batched(c, n_free: int, what: str):
  if any(x is not None for x in c.b[:n_free]):
    raise NotImplementedError(f"vmap: a {what} function closes over a value that is being mapped; pass that value "
                              f"as an argument instead")


def _custom_jvp(c, u):
  fun, rule, in_tree, out_tree, n_free = u.arg
  _closed_over_batched(c, n_free, "custom_jvp")
  g = batch_graph(fun, [False] * n_free + [True] * (len(u.src) - n_free), c.size)[0]
  srcs = (*u.src[:n_free], *(c.full(i) for i in range(n_free, len(u.src))))
  return UOp.multi(Ops.CUSTOM_JVP, srcs, (g, vmap(rule), in_tree, out_tree, n_free))


def _custom_vjp(c, u):
  graph, fwd, bwd, in_tree, out_tree, n_free, res_tree = u.arg
  _closed_over_batched(c, n_free, "custom_vjp")
  g = batch_graph(graph, [False] * n_free + [True] * (len(u.src) - n_free), c.size)[0]
  srcs = (*u.src[:n_free], *(c.full(i) for i in range(n_free, len(u.src))))
  return UOp.multi(Ops.CUSTOM_VJP, srcs, (g, vmap(fwd), vmap(bwd), in_tree, out_tree, n_free, res_tree))


# ---- collectives: over this vmap's axis name they act across the batch; over another name they pass through ----

_REDUCE_OF = {"sum": Ops.REDUCE_SUM, "max": Ops.REDUCE_MAX, "min": Ops.REDUCE_MIN}


def _everywhere(c, v: UOp) -> UOp: return v.broadcast((c.size, *v.shape))


def _over_batch(c, u):
  x = c.full(0) if u.src else None
  if u.op is Ops.AXIS_INDEX: return UOp.iota((c.size,), 0, dtypes.int32)
  if u.op is Ops.ALL_REDUCE: return x.reduce(_REDUCE_OF[u.arg[2]], (0,)).broadcast(x.shape)
  if u.op is Ops.PPERMUTE:
    src_of = {d: s for s, d in u.arg[2]}
    zero = B.zeros(x.slice(((0, 1, 1), *((0, n, 1) for n in x.shape[1:]))))
    rows = [x.slice(((src_of[d], src_of[d] + 1, 1), *((0, n, 1) for n in x.shape[1:]))) if d in src_of else zero
            for d in range(c.size)]
    return UOp.concat(rows, 0)
  if u.op is Ops.ALL_TO_ALL:   # lane j's result: block j of each lane i's x along split, concatenated over i
    split, concat = u.arg[2], u.arg[3]
    n = x.shape[split + 1]
    y = x.reshape(x.shape[:split + 1] + (c.size, n // c.size) + x.shape[split + 2:])
    y = B.moveaxis(B.moveaxis(y, split + 1, 0), 1, concat + 1)
    return y.reshape(y.shape[:concat + 1] + (c.size * y.shape[concat + 2],) + y.shape[concat + 3:])
  axis, tiled = u.arg[2], u.arg[3]
  if u.op is Ops.ALL_GATHER:
    g = B.moveaxis(x, 0, axis)
    if tiled: g = g.reshape(g.shape[:axis] + (g.shape[axis] * g.shape[axis + 1],) + g.shape[axis + 2:])
    return _everywhere(c, g)
  total = x.reduce(Ops.REDUCE_SUM, (0,)).reshape(x.shape[1:])          # REDUCE_SCATTER
  if tiled: total = total.reshape(total.shape[:axis] + (c.size, total.shape[axis] // c.size) + total.shape[axis + 1:])
  return B.moveaxis(total, axis, 0)


def _collective(c, u):
  if u.arg[0] == c.name: return _over_batch(c, u)
  arg = u.arg if u.op in (Ops.ALL_REDUCE, Ops.PPERMUTE) else \
      (*u.arg[:2], u.arg[2] + 1, u.arg[3] + 1) if u.op is Ops.ALL_TO_ALL else (*u.arg[:2], u.arg[2] + 1, u.arg[3])
  return UOp(u.op, u.dtype, (c.full(0),), arg)


BATCH_RULES = PatternMatcher([
  (UPat(UNARY | BINARY | {Ops.WHERE, Ops.CAST, Ops.BITCAST, Ops.DETACH, Ops.OPTIMIZATION_BARRIER}, name="u"), _same),
  (UPat((Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN), name="u"), _axes),
  (UPat(Ops.RESHAPE, name="u"), lambda c, u: c.full(0).reshape((c.size, *u.arg))),
  (UPat(Ops.BROADCAST, name="u"), _broadcast),
  (UPat(Ops.PERMUTE, name="u"), lambda c, u: c.full(0).permute((0, *(p + 1 for p in u.arg)))),
  (UPat(Ops.PAD, name="u"), lambda c, u: c.full(0).pad(((0, 0), *u.arg))),
  (UPat(Ops.SLICE, name="u"), lambda c, u: c.full(0).slice(((0, c.size, 1), *u.arg))),
  (UPat(Ops.FLIP, name="u"), _axes),
  (UPat(Ops.CONCAT, name="u"), lambda c, u: UOp.concat([c.full(i) for i in range(len(u.src))], u.arg + 1)),
  (UPat(Ops.GATHER, name="u"), _gather),
  (UPat(Ops.SCATTER, name="u"), _scatter),
  (UPat(Ops.SHARDING_CONSTRAINT, name="u"), lambda c, u: UOp(u.op, u.dtype, (c.full(0),), u.arg.unsplit_front())),
  (UPat(Ops.PROJ, name="u"), lambda c, u: c.b[0][u.arg]),
  (UPat(Ops.COND, name="u"), _cond),
  (UPat(Ops.SCAN, name="u"), _scan),
  (UPat(Ops.WHILE, name="u"), _while),
  (UPat(Ops.REMAT, name="u"), _remat),
  (UPat(Ops.COMPOSITE, name="u"), _composite),
  (UPat(Ops.CUSTOM_JVP, name="u"), _custom_jvp),
  (UPat(Ops.CUSTOM_VJP, name="u"), _custom_vjp),
  (UPat(COLLECTIVE, name="u"), _collective),
  (UPat(Ops.CALLBACK, name="u"), _callback),
  (UPat(Ops.FFT, name="u"), _same),   # the batch axis leads; the transform runs along the last
  (UPat(Ops.LINALG, name="u"), lambda c, u: UOp.multi(Ops.LINALG, tuple(c.full(i) for i in range(len(u.src))), u.arg)),
])


_BATCHING: list[str | None] = []   # the axis name of each vmap whose graph is being batched, innermost last


def batch_nodes(outputs: list[UOp], batched: dict[UOp, UOp], size: int) -> list[UOp | None]:
  """The batched twin of each output (None where it does not depend on a batched node), given twins of some nodes
  below them (usually PARAMs)."""
  twin: dict = dict(batched)
  name = _BATCHING[-1] if _BATCHING else None
  for u in toposort(outputs):
    ours = u.op in COLLECTIVE and u.arg[0] == name    # acts across the batch even when its operand is the same in all
    if u in twin or not (ours or any(s in twin for s in u.src)): continue
    twin[u] = BATCH_RULES.rewrite(u, _Ctx(u, tuple(twin.get(s) for s in u.src), size, name))
    if twin[u] is None: raise NotImplementedError(f"vmap: no batching rule for {u.op.name.lower()}")
  return [twin.get(o) for o in outputs]


# ---- public API ----

def _fname(f) -> str: return getattr(f, "__name__", type(f).__name__)


def _leaf_axes(in_axes, args: tuple, fn: str) -> list:
  if isinstance(in_axes, list): in_axes = tuple(in_axes)
  if isinstance(in_axes, int) or in_axes is None: return [in_axes] * len(tree_util.leaves(args))
  if not isinstance(in_axes, tuple) or len(in_axes) != len(args):
    raise ValueError(f"{fn}: in_axes must be an int, None, or a tuple with one entry per positional argument "
                     f"({len(args)} here), got {in_axes!r}")
  return _broadcast_prefix(in_axes, args, f"{fn}: in_axes {in_axes!r} is not a tree prefix of the arguments")


_UNMAPPED = object()


def _per_leaf(prefix, full, whole, msg: str) -> list:
  """One entry per leaf of `full`: `prefix` itself for every leaf when it is None or a `whole` (a type), else the
  entries of `prefix` as a tree prefix of `full`."""
  if prefix is None or isinstance(prefix, whole): return [prefix] * len(tree_util.leaves(full))
  return _broadcast_prefix(prefix, full, msg)


def _broadcast_prefix(prefix, full, msg: str) -> list:
  """One entry of `prefix` per leaf of `full` (None in the prefix means "not mapped" for its whole subtree)."""
  marked = optree.tree_map(lambda a: _UNMAPPED if a is None else a, prefix, none_is_leaf=True, namespace=tree_util.NAMESPACE)
  try:
    got = optree.broadcast_prefix(marked, full, namespace=tree_util.NAMESPACE)
  except ValueError as e:
    raise ValueError(f"{msg}: {e}") from None
  return [None if a is _UNMAPPED else a for a in got]


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name: str | None = None, axis_size: int | None = None) -> Callable:
  """fun mapped over an axis of its arguments, as jax.vmap: in_axes says which axis of each argument is mapped
  (None: not mapped; keyword arguments are mapped on axis 0), out_axes where the mapped axis goes in each output.
  With axis_name, collectives over that name (lax.psum, all_gather, axis_index, ...) act across the mapped axis.

  >>> tracegrad.vmap(lambda a, b: a * b, in_axes=(0, None))(tnp.ones((3, 2)), tnp.arange(2.0)).shape
  (3, 2)
  """
  fn = f"vmap({_fname(fun)})"

  def mapped(*args, **kwargs):
    leaves = [to_array(x, fn=fn) for x in tree_util.leaves((args, kwargs))]
    axes = _leaf_axes(in_axes, args, fn) + [0] * len(tree_util.leaves(kwargs))  # keyword arguments map on axis 0
    paths = [p for p, _ in tree_util.leaves_with_raw_path(args)] + \
      [("kwargs", *p) for p, _ in tree_util.leaves_with_raw_path(kwargs)]
    sizes: dict[int, str] = {}
    norm = []
    for leaf, ax, path in zip(leaves, axes, paths):
      if ax is None:
        norm.append(None)
        continue
      if not isinstance(ax, int): raise TypeError(f"{fn}: in_axes entries must be ints or None, got {ax!r}")
      if not -leaf.ndim <= ax < leaf.ndim or leaf.ndim == 0:
        raise ValueError(f"{fn}: in_axes {ax} is out of range for argument {_path(path)} of shape {leaf.shape} "
                         f"(rank {leaf.ndim})")
      ax %= leaf.ndim
      norm.append(ax)
      sizes.setdefault(leaf.shape[ax], _path(path))
    if len(sizes) > 1:
      desc = ", ".join(f"{where} has size {n}" for n, where in sizes.items())
      raise ValueError(f"{fn}: mapped axes must all have the same size, but {desc}")
    if sizes and axis_size is not None and axis_size not in sizes:
      raise ValueError(f"{fn}: axis_size={axis_size} does not match the mapped size {next(iter(sizes))}")
    if not sizes and axis_size is None:
      raise ValueError(f"{fn}: no argument is mapped (in_axes is all None); pass axis_size to say the batch size")
    size = next(iter(sizes)) if sizes else axis_size
    avals = [ShapeDtypeStruct(l.shape[:a] + l.shape[a + 1:], l.dtype, l.weak_type) if a is not None else l
             for l, a in zip(leaves, norm)]
    a_avals, k_avals = tree_util.unflatten(tree_util.structure((args, kwargs)), avals)
    with named_axis(axis_name, size) if axis_name is not None else contextlib.nullcontext():
      g, _ = trace(fun, a_avals, k_avals, fn=fn, taps=(taps := []))
    _BATCHING.append(axis_name)
    try:
      twins = batch_nodes(list(g.outputs), {p: B.moveaxis(l.uop, a, 0) for p, l, a in zip(g.inputs, leaves, norm)
                                            if a is not None}, size)
    finally:
      _BATCHING.pop()
    record.step(fn, [t if t is not None else o for t, o in zip(twins, g.outputs)], g.inputs)
    args_map = {p: l.uop for p, l, a in zip(g.inputs, leaves, norm) if a is None}
    outs = concrete(substitute([t if t is not None else o for t, o in zip(twins, g.outputs)], args_map))
    n_out = len(outs) - sum(n for _, n in taps)
    oaxes = _out_axes(out_axes, g, n_out, fn) + [0] * (len(outs) - n_out)
    res = []
    for o, t, ax, w in zip(outs, twins, oaxes, g.out_weak):
      if ax is None:
        if t is not None:
          raise ValueError(f"{fn}: out_axes is None for an output that depends on a mapped argument; map it "
                           f"(out_axes=0) or make it independent of the mapped inputs")
        res.append(Array(o, w))
        continue
      if t is None: o = o.broadcast((size, *o.shape))
      nd = o.ndim
      if not -nd <= ax < nd: raise ValueError(f"{fn}: out_axes {ax} is out of range for an output of rank {nd - 1}")
      res.append(Array(B.moveaxis(o, 0, ax % nd), w))
    tap_outputs(taps, res[n_out:], lambda run, arrays: [run([a[i] for a in arrays]) for i in range(size)])
    return tree_util.unflatten(g.out_tree, res[:n_out])

  mapped.__name__ = fn
  return mapped


def _path(path) -> str:
  if path and path[0] == "kwargs": return path[1] + "".join(f"[{p!r}]" for p in path[2:])
  return "args" + "".join(f"[{p!r}]" for p in path)


def _out_axes(out_axes, g: Graph, n_out: int, fn: str) -> list:
  shell = tree_util.unflatten(g.out_tree, [0] * n_out)
  return _per_leaf(out_axes, shell, int, f"{fn}: out_axes {out_axes!r} is not a tree prefix of the outputs")
