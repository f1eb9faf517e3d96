"""shard: a program over global arrays rewritten into the one program every device of a mesh runs on its own blocks
(SPMD), with the collectives its layouts need. One partitioning rule per primitive, in SHARD_RULES.

Every node gets a Layout: the mesh axes splitting each of its dimensions, and the mesh axes over which each
device's value is still a partial result (after a sum over a split dimension, say) that a collective has to combine.
A rule sees the node `u` and `c`: c.lay[i] is source i's layout, c.get(i, layout) source i's local value in the
layout asked for (converted with an all-reduce, reduce-scatter, all-gather, all-to-all or a slice at the device's
position, as needed). It returns u's local value and layout (a list of them for an op with several results).
Partial results are combined as late as possible, so a sharded contraction whose result is wanted sharded ends in
a reduce-scatter rather than an all-reduce.

>>> mesh = Mesh(np.array(tracegrad.devices()[:1]), ("i",))
>>> g = tracegrad.make_graph(lambda a, b: a @ b)(np.ones((4, 2), np.float32), np.ones((2, 3), np.float32))
>>> local, outs = partition(g, mesh, [NamedSharding(mesh, P("i")), NamedSharding(mesh, P())])
>>> [p.shape for p in local.inputs], outs[0].mesh == mesh
([(4, 2), (2, 3)], True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import run
from ..array import Array
from ..ir import Graph, Ops, PatternMatcher, UOp, UPat, dtypes, toposort
from ..ir.ops import BINARY, COLLECTIVE, UNARY
from ..parallel import spmd
from ..parallel.sharding import Mesh, NamedSharding, P, ShardedBuffers, spec_axes
from ..viz import record
from . import build as B

__all__ = ["Layout", "partition", "run_on_mesh"]


@dataclass(frozen=True)
class Layout:
  """dims[d]: the mesh axes splitting dimension d (major first); partial: the mesh axes over which the devices'
  values still have to be combined by `kind` (sum, max or min) to give the value."""
  dims: tuple[tuple[str, ...], ...]
  partial: tuple[str, ...] = ()
  kind: str = "sum"

  def full(self) -> "Layout": return Layout(self.dims)
  def with_dims(self, dims) -> "Layout": return Layout(tuple(dims), self.partial, self.kind)


def _lay(dims, partial=(), kind: str = "sum") -> Layout:
  return Layout(tuple(dims), tuple(partial), kind if partial else "sum")


def replicated(ndim: int) -> Layout: return Layout(((),) * ndim)


class _Partitioner:
  def __init__(self, mesh: Mesh):
    self.mesh = mesh
    self.sizes = mesh.shape
    self.local: dict = {}      # global node -> its local value (a list for ops with several results)
    self.layout: dict = {}     # global node -> its Layout
    self.converted: dict = {}  # (node, Layout) -> local value in that layout

  def parts(self, names) -> int: return math.prod(self.sizes[a] for a in names)
  def block(self, shape, lay: Layout) -> tuple: return tuple(n // self.parts(d) for n, d in zip(shape, lay.dims))
  def ordered(self, axes) -> tuple: return tuple(a for a in self.mesh.axis_names if a in set(axes))

  def run(self, outputs: list[UOp]) -> None:
    for u in toposort(outputs):
      if u in self.layout: continue
      out = SHARD_RULES.rewrite(u, _Ctx(self, u))
      if out is None: raise NotImplementedError(f"shard: no partitioning rule for {u.op.name.lower()}")
      if isinstance(out, list):
        self.local[u], self.layout[u] = out, None
      else:
        self.local[u], self.layout[u] = out

  # ---- conversions between layouts ----

  def convert(self, u: UOp, want: Layout) -> UOp:
    """u's local value laid out as `want`."""
    if self.layout[u] == want: return self.local[u]
    key = (u, want)
    if key not in self.converted:
      if not want.partial and u.op in (Ops.IOTA, Ops.BROADCAST): self.converted[key] = self._rebuild(u, want)
      else: self.converted[key] = self._reshard(self.local[u], self.layout[u], want)
    return self.converted[key]

  def _rebuild(self, u: UOp, want: Layout) -> UOp:
    """A broadcast or an iota built directly in the layout wanted: no data moves."""
    shape = self.block(u.shape, want)
    if u.op is Ops.BROADCAST:
      src = u.src[0]
      lead = u.ndim - src.ndim
      dims = [want.dims[lead + i] if n == u.shape[lead + i] else () for i, n in enumerate(src.shape)]
      return self.convert(src, _lay(dims)).broadcast(shape)
    _, axis = u.arg
    out = UOp.iota(shape, axis, u.dtype)
    if not want.dims[axis]: return out
    start = (self.position(want.dims[axis]) * UOp.const(dtypes.int32, shape[axis])).cast(u.dtype)
    return out + start.broadcast(shape)

  def position(self, names) -> UOp:
    """This device's block index along a dimension split over `names` (an int32 scalar)."""
    k = UOp.const(dtypes.int32, 0)
    for a in names:
      if self.sizes[a] > 1: k = k * UOp.const(dtypes.int32, self.sizes[a]) + _axis_index(a, self.sizes[a])
    return k

  def _reshard(self, x: UOp, have: Layout, want: Layout) -> UOp:
    cur = [list(d) for d in have.dims]
    goal = [list(d) for d in want.dims]
    if (have.partial, have.kind) != (want.partial, want.kind):
      for a in have.partial:   # a sum wanted split along a dimension is a reduce-scatter; anything else an all-reduce
        d = next((d for d in range(len(cur)) if have.kind == "sum" and goal[d][:len(cur[d]) + 1] == cur[d] + [a]
                  and not any(a in c for c in cur)), None)
        if d is None:
          x = self._collective(x, Ops.ALL_REDUCE, a, have.kind)
        else:
          x = self._collective(x, Ops.REDUCE_SCATTER, a, d, True)
          cur[d].append(a)
    moved = True
    while moved:   # an axis leaving one dimension for another: all-to-all
      moved = False
      for d, names in enumerate(cur):
        if not names or goal[d][:len(names)] == names: continue
        a = names[-1]
        e = next((e for e in range(len(cur)) if e != d and goal[e][:len(cur[e]) + 1] == cur[e] + [a]), None)
        if e is None: continue
        x = self._collective(x, Ops.ALL_TO_ALL, a, e, d)
        names.pop()
        cur[e].append(a)
        moved = True
    for d, names in enumerate(cur):   # axes no longer wanted on a dimension: all-gather, minor first
      while goal[d][:len(names)] != names:
        a = names.pop()
        x = self._collective(x, Ops.ALL_GATHER, a, d, True)
    for d, names in enumerate(cur):   # axes newly wanted: each device keeps its block, major first
      for a in goal[d][len(names):]:
        if self.sizes[a] > 1: x = _take_block(x, d, a, self.sizes[a])
    return x

  def _collective(self, x: UOp, op: Ops, a: str, *arg) -> UOp:
    """op over mesh axis a (nothing to do over an axis of one device)."""
    return UOp(op, x.dtype, (x,), (a, self.sizes[a], *arg)) if self.sizes[a] > 1 else x


def _axis_index(a: str, n: int) -> UOp: return UOp(Ops.AXIS_INDEX, dtypes.int32, (), (a, n))


def _take_block(x: UOp, d: int, a: str, n: int) -> UOp:
  """Block `axis_index(a)` of n along dimension d of x."""
  y = B.moveaxis(x.reshape(x.shape[:d] + (n, x.shape[d] // n) + x.shape[d + 1:]), d, 0)
  return y.gather(_axis_index(a, n).reshape((1,)))


class _Ctx:
  __slots__ = ("p", "u", "lay")

  def __init__(self, p: _Partitioner, u: UOp):
    self.p, self.u, self.lay = p, u, [p.layout.get(s) for s in u.src]

  def get(self, i: int, want: Layout) -> UOp: return self.p.convert(self.u.src[i], want)
  def natural(self, i: int) -> UOp: return self.p.local[self.u.src[i]]

  def merge(self, which, ndim: int, skip=(), forbid=()) -> list[tuple]:
    """One layout for several sources of one shape: each dimension takes the first split it finds among them
    (broadcasts and iotas, which any layout rebuilds for free, last), keeping each mesh axis on one dimension and
    off the axes in `forbid` (those a partial result is still spread over)."""
    dims, used = [()] * ndim, set(forbid)
    for i in sorted(which, key=lambda i: self.u.src[i].op in (Ops.BROADCAST, Ops.IOTA)):
      for d, names in enumerate(self.lay[i].dims):
        if names and not dims[d] and d not in skip and not used & set(names):
          dims[d] = names
          used |= set(names)
    return dims


# ---- rules ----

def _elementwise(c, u):
  axes, kind = _kept_partial(u, c.lay)
  dims = c.merge(range(len(u.src)), u.ndim, forbid=axes)
  srcs = [c.get(i, _lay(dims, axes, kind) if axes and c.lay[i].partial else _lay(dims)) for i in range(len(u.src))]
  return UOp(u.op, u.dtype, tuple(srcs), u.arg), _lay(dims, axes, kind)


def _kept_partial(u: UOp, lays: list) -> tuple:
  """The partial axes u's result may keep uncombined (the op distributes over the combination), else ()."""
  parts = [l for l in lays if l.partial]
  if not parts or any((l.partial, l.kind) != (parts[0].partial, parts[0].kind) for l in parts): return (), "sum"
  axes, kind, n, op = parts[0].partial, parts[0].kind, len(parts), u.op
  ok = op is Ops.DETACH or kind == "sum" and (
      op is Ops.NEG or (op in (Ops.ADD, Ops.SUB) and n == len(lays)) or (op is Ops.MUL and n == 1) or
      (op is Ops.DIV and n == 1 and lays[0].partial) or (op is Ops.WHERE and not lays[0].partial and n == 2)) or \
      (op is Ops.MAX and kind == "max") or (op is Ops.MIN and kind == "min")
  return (axes, kind) if ok else ((), "sum")


_KIND = {Ops.REDUCE_SUM: "sum", Ops.REDUCE_MAX: "max", Ops.REDUCE_MIN: "min"}


def _reduce(c, u):
  l, kind = c.lay[0], _KIND.get(u.op)
  out = [() if d in u.arg else n for d, n in enumerate(l.dims)]
  if kind is None:   # a product has no collective: gather the reduced dimensions
    return c.get(0, _lay(out)).reduce(u.op, u.arg), _lay(out)
  keep = l.partial if l.kind == kind else ()
  x = c.get(0, _lay(l.dims, keep, kind))
  split = [a for d in u.arg for a in l.dims[d]]
  return x.reduce(u.op, u.arg), _lay(out, c.p.ordered((*keep, *split)), kind)


def _reshape_dims(src_shape, out_shape, dims, p: _Partitioner) -> tuple[list, list]:
  """The splits a reshape keeps: in each group of dimensions it merges or splits, a split of the group's first
  input dimension carries over to its first output dimension when that divides; other splits are gathered."""
  need, got = [()] * len(src_shape), [()] * len(out_shape)
  ins = [i for i, n in enumerate(src_shape) if n != 1]
  outs = [j for j, n in enumerate(out_shape) if n != 1]
  i = j = 0
  while i < len(ins):
    gi, gj = [ins[i]], [outs[j]]
    pi, pj = src_shape[ins[i]], out_shape[outs[j]]
    i, j = i + 1, j + 1
    while pi != pj:
      if pi < pj: gi.append(ins[i]); pi *= src_shape[ins[i]]; i += 1
      else: gj.append(outs[j]); pj *= out_shape[outs[j]]; j += 1
    first = dims[gi[0]]
    if first and out_shape[gj[0]] % p.parts(first) == 0: need[gi[0]], got[gj[0]] = first, first
  return need, got


def _reshape(c, u):
  l = c.lay[0]
  need, got = _reshape_dims(u.src[0].shape, u.shape, l.dims, c.p)
  return c.get(0, l.with_dims(need)).reshape(c.p.block(u.shape, _lay(got))), l.with_dims(got)


def _broadcast(c, u):
  l, src = c.lay[0], u.src[0]
  lead = u.ndim - src.ndim
  dims = [()] * lead + [l.dims[i] if n == u.shape[lead + i] else () for i, n in enumerate(src.shape)]
  return c.natural(0).broadcast(c.p.block(u.shape, _lay(dims))), l.with_dims(dims)


def _whole(c, u, touched: set, keeps_partial: bool = True):
  """A movement op that reads along `touched` dimensions: those are gathered first; the others keep their split."""
  l = c.lay[0]
  want = _lay([() if d in touched else n for d, n in enumerate(l.dims)], *((l.partial, l.kind) if keeps_partial else ()))
  x = c.get(0, want)
  if u.op is Ops.SLICE:
    arg = tuple(s if d in touched else (0, x.shape[d], 1) for d, s in enumerate(u.arg))
    return x.slice(arg), want
  return UOp(u.op, u.dtype, (x,), u.arg), want


def _pad(c, u):
  touched = {d for d, pad in enumerate(u.arg) if pad != (0, 0)}
  return _whole(c, u, touched, keeps_partial=c.lay[0].kind == "sum")   # the zeros padded in add nothing to a sum


def _slice(c, u):
  return _whole(c, u, {d for d, s in enumerate(u.arg) if tuple(s) != (0, u.src[0].shape[d], 1)})


def _concat(c, u):
  axes, kind = c.lay[0].partial, c.lay[0].kind
  keep = axes and kind == "sum" and all((l.partial, l.kind) == (axes, kind) for l in c.lay)
  dims = c.merge(range(len(u.src)), u.ndim, skip={u.arg}, forbid=axes if keep else ())
  want = _lay(dims, axes, kind) if keep else _lay(dims)
  return UOp.concat([c.get(i, want) for i in range(len(u.src))], u.arg), want


def _gather(c, u):
  x, idx = c.lay
  k = u.src[1].shape[-1]
  if any(x.dims[:k]): return _gather_in_place(c, u, k)
  batch = list(idx.dims[:-1])
  used = {a for names in batch for a in names}
  trail = [() if used & set(names) else names for names in x.dims[k:]]
  # selecting entries commutes with combining them, unless the indices are split over the same axes
  keep = (x.partial, x.kind) if x.partial and not used & set(x.partial) else ()
  xs = c.get(0, _lay([()] * k + trail, *keep))
  ids = c.get(1, _lay(batch + [()]))
  return xs.gather(ids), _lay(batch + trail, *keep)


def _gather_in_place(c, u, k: int):
  """x split along the dimensions it is indexed by stays where it is: every device looks each index up in its own
  block and gives zero where the index is another device's, so the result is a partial sum over those axes."""
  x, idx = c.lay
  split = {a for names in x.dims[:k] for a in names}
  batch = [() if split & set(names) else names for names in idx.dims[:-1]]
  used = split | {a for names in batch for a in names}
  trail = [() if used & set(names) else names for names in x.dims[k:]]
  xs = c.get(0, _lay(list(x.dims[:k]) + trail))
  ids, valid = _local_indices(c, c.get(1, _lay(batch + [()])), u.src[0].shape, x.dims[:k], clamp=True)
  out = xs.gather(ids)
  valid = valid.reshape(valid.shape[:-1] + (1,) * (out.ndim - valid.ndim + 1)).broadcast(out.shape)
  return valid.where(out, B.zeros(out)), _lay(batch + trail, c.p.ordered(split))


def _local_indices(c, ids: UOp, shape, dims, clamp: bool) -> tuple[UOp, UOp | None]:
  """Indices into the first dimensions of an array of `shape` split as `dims`, made relative to this device's
  block (clamped into the whole array first when `clamp`), and whether each lands in the block (..., 1)."""
  cols, valid = [], None
  for d, names in enumerate(dims):
    col = ids.slice(tuple((0, n, 1) for n in ids.shape[:-1]) + ((d, d + 1, 1),))
    if clamp:
      col = col.alu(Ops.MAX, B.zeros(col)).alu(Ops.MIN, B.const(col, shape[d] - 1))
    if names:
      block = shape[d] // c.p.parts(names)
      col = col - (c.p.position(names) * UOp.const(dtypes.int32, block)).cast(col.dtype).broadcast(col.shape)
      ok = B.lt(B.const(col, -1), col).alu(Ops.AND, B.lt(col, B.const(col, block)))
      valid = ok if valid is None else valid.alu(Ops.AND, ok)
    cols.append(col)
  return UOp.concat(cols, ids.ndim - 1), valid


def _scatter(c, u):
  """x split along the dimensions it is indexed by is updated where it is (each device drops the indices outside
  its block, as the whole array drops those outside it). Otherwise updates split over devices by their batch
  dimensions scatter-add into each device's copy (x counted on the first device only): a partial sum over those
  axes. Other modes run on whole updates."""
  x, idx, upd = c.lay
  k, nb = u.src[1].shape[-1], u.src[1].ndim - 1
  head = list(x.dims[:k])
  trail, used = [], {a for names in head for a in names}
  for a, b in zip(x.dims[k:], upd.dims[nb:]):
    names = a or b
    trail.append(() if used & set(names) else names)
    used |= set(trail[-1])
  batch = [()] * nb
  if u.arg == "add" and not any(head):
    for d in range(nb):
      names = idx.dims[d] or upd.dims[d]
      if names and not used & set(names):
        batch[d] = names
        used |= set(names)
  split = c.p.ordered(a for names in batch for a in names)
  base = c.get(0, _lay(head + trail))
  if split:
    first = UOp.const(dtypes.bool_, True)
    for a in split:
      if c.p.sizes[a] > 1: first = first.alu(Ops.AND, B.eq(_axis_index(a, c.p.sizes[a]), UOp.const(dtypes.int32, 0)))
    base = first.broadcast(base.shape).where(base, B.zeros(base))
  ids = c.get(1, _lay(batch + [()]))
  if any(head): ids, _ = _local_indices(c, ids, u.src[0].shape, head, clamp=False)
  out = base.scatter(ids, c.get(2, _lay(batch + trail)), u.arg)
  return out, _lay(head + trail, split)


def _constraint(c, u):
  if u.arg.mesh != c.p.mesh:
    raise ValueError(f"with_sharding_constraint: {u.arg} is over another mesh than the program's {c.p.mesh}")
  want = _lay(spec_axes(u.arg.spec, u.ndim))
  return c.get(0, want), want


def _replicated(c, u):
  """Control flow (and a host callback) runs whole on every device: its operands are gathered and its results are
  replicated."""
  srcs = [c.get(i, replicated(s.ndim)) for i, s in enumerate(u.src)]
  return [(r, replicated(r.ndim)) for r in UOp.multi(u.op, tuple(srcs), u.arg)]


def _inline(c, u):
  """remat, custom derivatives and named composites only matter to differentiation (over) and printing: their function
  is partitioned in place."""
  graph = u.arg if u.op is Ops.REMAT else u.arg[0]
  outs = graph(*u.src)
  c.p.run(outs)
  return [(c.p.local[o], c.p.layout[o]) for o in outs]


def _collective(c, u):
  raise ValueError(f"jit with shardings: the program holds a {u.op.name.lower()} over axis {u.arg[0]!r}; collectives "
                   f"over named axes belong inside shard_map or vmap(axis_name=)")


def _leaf(c, u): return u, replicated(u.ndim)


SHARD_RULES = PatternMatcher([
  (UPat(UNARY | BINARY | {Ops.WHERE, Ops.CAST, Ops.BITCAST, Ops.DETACH, Ops.OPTIMIZATION_BARRIER}, name="u"),
   _elementwise),
  (UPat((Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN), name="u"), _reduce),
  (UPat(Ops.RESHAPE, name="u"), _reshape),
  (UPat(Ops.BROADCAST, name="u"), _broadcast),
  (UPat(Ops.PERMUTE, name="u"), lambda c, u: (UOp(u.op, u.dtype, (c.natural(0),), u.arg),
                                              c.lay[0].with_dims(c.lay[0].dims[p] for p in u.arg))),
  (UPat(Ops.PAD, name="u"), _pad),
  (UPat(Ops.SLICE, name="u"), _slice),
  (UPat(Ops.FLIP, name="u"), lambda c, u: _whole(c, u, set(u.arg))),
  (UPat(Ops.FFT, name="u"), lambda c, u: _whole(c, u, {u.ndim - 1}, keeps_partial=False)),
  (UPat(Ops.CONCAT, name="u"), _concat),
  (UPat(Ops.GATHER, name="u"), _gather),
  (UPat(Ops.SCATTER, name="u"), _scatter),
  (UPat(Ops.SHARDING_CONSTRAINT, name="u"), _constraint),
  (UPat(Ops.PROJ, name="u"), lambda c, u: c.natural(0)[u.arg]),
  (UPat((Ops.COND, Ops.SCAN, Ops.WHILE, Ops.CALLBACK, Ops.LINALG), name="u"), _replicated),
  (UPat((Ops.REMAT, Ops.CUSTOM_JVP, Ops.CUSTOM_VJP, Ops.COMPOSITE), name="u"), _inline),
  (UPat(COLLECTIVE, name="u"), _collective),
  (UPat((Ops.CONST, Ops.BUFFER, Ops.IOTA), name="u"), _leaf),
])


# ---- public ----

def partition(graph: Graph, mesh: Mesh, in_shardings: list[NamedSharding],
              out_shardings: list[NamedSharding | None] | None = None) -> tuple[Graph, list[NamedSharding]]:
  """The per-device program of `graph` for inputs laid out as in_shardings (one per input, over `mesh`), and each
  output's sharding: out_shardings where given, else the layout the program gives it (fully combined)."""
  p = _Partitioner(mesh)
  params = []
  for x, s in zip(graph.inputs, in_shardings):
    lay = _lay(spec_axes(s.spec, x.ndim))
    params.append(UOp.param(p.block(x.shape, lay), x.dtype))
    p.local[x], p.layout[x] = params[-1], lay
  p.run(list(graph.outputs))
  outs, shardings = [], []
  for o, s in zip(graph.outputs, out_shardings or [None] * len(graph.outputs)):
    want = p.layout[o].full() if s is None else _lay(spec_axes(s.spec, o.ndim))
    outs.append(p.convert(o, want))
    shardings.append(s or NamedSharding(mesh, P(*(names[0] if len(names) == 1 else names or None
                                                  for names in want.dims))))
  local = Graph(tuple(params), tuple(outs), graph.in_tree, graph.out_tree, graph.in_weak, graph.out_weak)
  record.step_for(graph, f"shard over {dict(mesh.shape)}", local.outputs, local.inputs)
  record.bind(local, record.bound(graph))
  return local, shardings


def run_on_mesh(plan: spmd.Plan, mesh: Mesh, args: list[Array], in_shardings: list[NamedSharding],
                out_shardings: list[NamedSharding], check_rep: str | None = None) -> list[Array]:
  """The per-device program `plan` run by this process's devices of `mesh` on their blocks of `args`; each output
  an Array whose blocks stay on their devices, laid out by its sharding (check_rep: see ShardedBuffers)."""
  local = set(run.local_devices())
  devices = [d for d in mesh.devices.flat if d in local]
  inputs = {d: [] for d in devices}
  for x, s in zip(args, in_shardings):
    shards = x._shards if x._shards is not None and x._shards.sharding == s else \
        ShardedBuffers.cut(np.asarray(x), x.dtype, s, local)
    for d in devices: inputs[d].append(shards.buffers[d][1])
  outs = spmd.execute(plan, mesh, inputs)
  g = plan.graph
  return [Array._sharded(ShardedBuffers({d: outs[d][i] for d in devices}, s.global_shape(o.shape), o.dtype, s,
                                        check_rep), weak)
          for i, (o, s, weak) in enumerate(zip(g.outputs, out_shardings, g.out_weak))]
