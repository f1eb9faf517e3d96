"""Scheduling: a Graph becomes a Program of kernels (lower/kernel.py).

A node gets a buffer of its own (is materialised) when it is an input, a constant, an output, a reduction, a
scatter, an optimization barrier, or when several nodes use it; everything else is computed inside the kernel of
the node that uses it, at the index that node asks for. Movement ops never copy: RESHAPE, BROADCAST, PERMUTE, PAD,
SLICE, FLIP and CONCAT only change the index a value is read at, so a broadcast is never materialised.

>>> import tracegrad, tracegrad.numpy as tnp
>>> prog = schedule(tracegrad.make_graph(lambda x: tnp.exp(x * 2).sum())(tnp.ones((4, 8))))
>>> len(prog.kernels)
1
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from ..ir import Graph, Ops, PatternMatcher, UOp, UPat, dtypes, graph_rewrite_many, substitute, toposort
from ..ir.ops import ELEMENTWISE, REDUCE, HostCall
from ..ir.uop import key_arg
from ..ir.shapes import multi_avals
from ..devices import host_linalg
from ..devices.base import BufferSpec, Program
from ..viz import record
from .complex_split import ComplexUnsupported, split_complex
from .locality import near_readers
from .kernel import PACK_SUFFIX, Control, Kernel, Loop, Phase, Reduce, Store, acc_dtype
from .render_c import BLOCKS, REDUCE_ALU, combine, conjuncts, dot_blocked, interchanged, is_product, panel_load, \
  panels_read, phase_loops, reduce_identity, transposed_panels, widest_lanes
from .symbolic import Simplifier, _linear, coefficient, simplify

I64 = dtypes.int64
CONTROL_FLOW = frozenset({Ops.COND, Ops.SCAN, Ops.WHILE, Ops.CALLBACK, Ops.LINALG})   # items between kernels
VIEWS = frozenset({Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE, Ops.PAD, Ops.SLICE, Ops.FLIP})
REINDEX = VIEWS | {Ops.CONCAT, Ops.GATHER, Ops.SCATTER}   # users that read their source at other indices
# one step of these, needed by several kernels, is recomputed in each rather than stored and loaded back (x - mean, a
# scale, a mask); not where read through a view, which could repeat it for every element a broadcast makes
CHEAP = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.NEG, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE,
                   Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.CAST, Ops.BITCAST})
# but not a chain of more than CHEAP_CHAIN of them (a normal draw's inverse error function, its multiply-adds
# emulated exactly: some 2000 steps, which each kernel reading the draws repeated, compiled four times in one)
CHEAP_CHAIN = 64
# nor one of at least WIDE_BYTES that reads WIDE_LOADS or more buffers as big as a WIDE_BYTES one: each kernel that
# recomputed it read them all again from memory (ResNet-8's batch norm backward, whose masked cotangent of a residual
# sum read 6 arrays of 2 MB in each of its 3 passes: 2.3 -> 0.8 ms for its reductions)
WIDE_BYTES, WIDE_LOADS = 1 << 20, 4
# nor one that reads MANY_LOADS or more buffers of MANY_BYTES or more, itself as big: a deep network's residual stream,
# the sum of every layer's output so far, read whole by each of its consumers (a 12-layer GPT's: up to 18 arrays of
# 256 KB read by one kernel, each of them read again by the kernels of each later layer: kernels 46.1 -> 44.1 ms)
MANY_BYTES, MANY_LOADS = 64 << 10, 8
INDEX_MAPS = 16   # a node a kernel would compute at more index maps than this is stored once instead


# an elementwise value of at least STEPS operations, repeated at least REPEATS times by a broadcast into a reduction,
# is stored once instead
STEPS, REPEATS = 3, 8
TRANSCENDENTAL = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.COS, Ops.POW, Ops.ATAN2})
PACK_MIN = 8   # a sum's last output loop and innermost reduction loop both this long at least, for packing to pay
PACK_MAX_RATIO = 4   # and the packed operand at most this many times the output's size
TILE = 16   # a packing copy's tiles: TILE x TILE elements
TRANSPOSE_BLOCK = 128   # a transposed copy of a rows' operand (_read_across) runs its tiles in blocks of this many
# an operand of register blocks that steps along their reduction by a stride whose cache lines fall in ALIASED_SETS of
# the L1 cache's 64 sets or fewer (rows 2 KB apart: a weight gradient x.T @ dy of 512 or 1024 features) is copied
# with its rows PAD_BYTES longer, where more of the reduction's steps than those sets' lines hold (8 ways each) would
# evict each other; only an operand read again by PAD_MIN_REUSE or more points of the output
ALIASED_SETS, PAD_BYTES, PAD_MIN_REUSE = 4, 64, 64
STACK_MAX = 16   # parts of a concatenation computed as one store each at most
SCATTER_INDEX_STEPS = 8   # a scatter's indices found by a lookup in more steps than this are stored before it


class Unsupported(NotImplementedError):
  """The graph holds an op the compiled backends do not run yet (control flow); callers run it on interp."""


# ---- before scheduling: calls are inlined, stop_gradient is the identity ----

def _inline(m: UOp, p: UOp) -> UOp:
  fun = m.arg if m.op is Ops.REMAT else m.arg[0]
  return fun(*m.src)[p.arg]


INLINE = PatternMatcher([
  (UPat((Ops.DETACH, Ops.SHARDING_CONSTRAINT), src=(UPat.var("x"),)), lambda x: x),
  (UPat(Ops.PROJ, src=(UPat((Ops.CUSTOM_JVP, Ops.CUSTOM_VJP, Ops.REMAT, Ops.COMPOSITE), name="m"),), name="p"),
   _inline),
])


# ---- and repeated values are reduced without a loop over their copies ----

def _padded(b: UOp) -> tuple[int, ...]: return (1,) * (b.ndim - b.src[0].ndim) + b.src[0].shape


def _under_broadcast(u: UOp) -> UOp | None:
  """An elementwise op of broadcasts that all repeat along some axis: the op without those copies, broadcast."""
  if any(s.op is not Ops.BROADCAST for s in u.src): return None
  pads = [_padded(s) for s in u.src]
  common = tuple(1 if all(p[i] == 1 for p in pads) else n for i, n in enumerate(u.shape))
  if common == u.shape: return None
  src = tuple(s.src[0].reshape(p).broadcast(common) for s, p in zip(u.src, pads))
  return UOp(u.op, u.dtype, src, u.arg).broadcast(u.shape)


def _reduce_broadcast(r: UOp, b: UOp) -> UOp | None:
  """A sum, max or min over axes along which b repeats its source: reduced over the source's other axes (and for a
  sum, times the number of copies, in r's dtype: an int32 sum of 2**32 ones wraps to 0 as adding them would)."""
  if r.op is Ops.REDUCE_PROD or (r.op is Ops.REDUCE_SUM and r.dtype.is_bool) or b.size == 0: return None
  x, s = b.src[0], _padded(b)
  rep = [a for a in r.arg if s[a] == 1 and b.shape[a] > 1]
  count = 1 if r.op is not Ops.REDUCE_SUM else dtypes.count_value(r.dtype, math.prod(b.shape[a] for a in rep))
  if not rep or count is None: return None
  out = x.reshape(s).reduce(r.op, [a for a in r.arg if a not in rep])
  if count != 1: out = out * UOp.const(r.dtype, count, out.shape)
  return out.broadcast(r.shape)


FOLD = PatternMatcher([
  (UPat(ELEMENTWISE, name="u"), _under_broadcast),
  (UPat(REDUCE, src=(UPat(Ops.BROADCAST, name="b"),), name="r"), _reduce_broadcast),
])


# ---- and a sum read only through a transpose is computed in the transposed order ----

def _permuted_reduce(uses: dict, p: UOp, s: UOp, r: UOp) -> UOp | None:
  """permute(reshape(reduce(x))), the reshape dropping the reduced unit axes, as the reduce of x permuted likewise,
  when nothing else reads the reduce: its kernel then stores what its reader reads in place (a weight's gradient
  for the update p - lr * g, not its transpose read at a stride). A reshape that also splits kept axes moves too
  where x's innermost axis is summed (a convolution filter's gradient, OIHW inside, computed in the HWIO its update
  reads, so that the channels-last gradient it sums is read along the output's last axis, as vectors); a sum along
  another axis keeps the order its innermost one gives it (a convolution's positions, along which its windows
  run)."""
  axes = list(r.arg)
  kept = [i for i in range(r.ndim) if i not in axes]
  if uses.get(r, 1) != 1 or uses.get(s, 1) != 1: return None   # one made by a rewrite above has that one reader
  shape, into = [r.shape[i] for i in kept if r.shape[i] != 1], [n for n in s.shape if n != 1]
  if shape != into and not (r.ndim - 1 in axes and _splits(shape, into)): return None
  x = r.src[0].permute(axes + kept)
  x = x.reshape(x.shape[:len(axes)] + s.shape).permute(list(range(len(axes))) + [len(axes) + i for i in p.arg])
  return x.reduce(r.op, range(len(axes))).reshape(p.shape)


def _splits(shape, into) -> bool:
  """Whether reshaping `shape` to `into` (neither with axes of size 1) only splits axes: each axis of `into` then
  reads one axis of `shape` at an affine index, with no division."""
  a, b = list(shape), list(into)
  while a and b:
    group = b.pop(0)
    while group < a[0] and b: group *= b.pop(0)
    if group != a.pop(0): return False
  return not a and not b


TRANSPOSED_SUMS = PatternMatcher([
  (UPat(Ops.PERMUTE, src=(UPat(Ops.RESHAPE, src=(UPat(REDUCE, name="r"),), name="s"),), name="p"), _permuted_reduce),
])


def _uses(outputs) -> dict:
  """How many nodes read each node (an output counts as a reader)."""
  uses: dict = {}
  for u in toposort(list(outputs)):
    for v in set(u.src): uses[v] = uses.get(v, 0) + 1
  for o in outputs: uses[o] = uses.get(o, 0) + 1
  return uses


def _readers(order) -> dict:
  """The nodes that read each node of `order` (sources before users), each reader once."""
  users: dict = {u: [] for u in order}
  for u in order:
    for s in set(u.src): users[s].append(u)
  return users


def _i(v: int) -> UOp: return UOp.const(I64, v)


def _ravel(idx, shape) -> UOp:
  flat = _i(0)
  for i, n in zip(idx, shape): flat = flat * _i(n) + i
  return flat


def _unravel(flat: UOp, shape) -> list[UOp]:
  if 0 in shape: return [_i(0)] * len(shape)  # nothing is ever read from an empty array
  out, stride = [], math.prod(shape)
  for n in shape:
    stride //= n
    out.append(flat.alu(Ops.IDIV, _i(stride)).alu(Ops.MOD, _i(n)) if n > 1 else _i(0))
  return out


def _clamp(i: UOp, n: int) -> UOp: return i.alu(Ops.MAX, _i(0)).alu(Ops.MIN, _i(max(n - 1, 0)))
def _in(i: UOp, lo: int, hi: int) -> UOp: return _i(lo - 1).alu(Ops.CMPLT, i).alu(Ops.AND, i.alu(Ops.CMPLT, _i(hi)))


class _KernelBuilder:
  """Builds the scalar expression of nodes at index tuples, for one kernel."""

  def __init__(self, sched: "_Scheduler", ranges: dict[UOp, int]):
    self.s, self.ranges, self.memo, self.bufs = sched, ranges, {}, {}
    self.simplify = sched.simplifier
    sched.simplifier.bounds.ranges.update(ranges)
    self.reduced: dict[UOp, UOp] = {}   # a reduction computed in this kernel: its accumulator

  def buf(self, n: int) -> UOp:
    if n not in self.bufs:
      spec = self.s.buffers[n]
      self.bufs[n] = UOp.param((spec.size,), spec.dtype)
    return self.bufs[n]

  def ix(self, u: UOp) -> UOp: return self.simplify(u)

  def load(self, n: int, flat: UOp) -> UOp: return self.buf(n).gather(self.ix(flat).reshape((1,)))

  def _equal_loops(self, ok: UOp | None) -> dict[UOp, UOp] | None:
    """{a: b} where `ok` says two loop variables are equal (a - b == 0) and b runs over no more than a does: the
    padded value `ok` selects is then read with b for a, its index simplified as where they are equal (a diagonal
    padded into a flat plane: its row's element at (i * n + j) // (n + 1) becomes i, with no division), and still in
    bounds where they are not."""
    if ok is None or ok.op is not Ops.CMPEQ or ok.src[1].op is not Ops.CONST or ok.src[1].arg != 0: return None
    d = ok.src[0]
    if d.op is not Ops.SUB or not all(v in self.ranges for v in d.src): return None
    a, b = d.src if self.ranges[d.src[1]] <= self.ranges[d.src[0]] else d.src[::-1]
    return {a: b}

  def value(self, root: UOp, idx: tuple, own: bool = False) -> UOp:
    """root's value at idx, rendering its sources (iteratively: the graph may be deep). With own=False, a
    materialised root is loaded from its buffer."""
    stack = [(root, tuple(idx), self._gen(root, tuple(idx), own), None)]
    while True:
      u, at, gen, send = stack[-1]
      try:
        req = gen.send(send)
      except StopIteration as stop:
        stack.pop()
        self.memo[(u, at, own and len(stack) == 0)] = stop.value
        if not stack: return stop.value
        stack[-1] = stack[-1][:3] + (stop.value,)
        continue
      child, cat = req
      cat = tuple(self.ix(i) for i in cat)
      key = (child, cat, False)
      if key in self.memo:
        stack[-1] = (u, at, gen, self.memo[key])
        continue
      stack[-1] = (u, at, gen, None)
      stack.append((child, cat, self._gen(child, cat, False), None))

  def _gen(self, u: UOp, idx: tuple, own: bool):
    if (u, idx, own) in self.memo: return self.memo[(u, idx, own)]
    if u in self.reduced: return self.reduced[u]
    if not own and u in self.s.bufnum: return self.load(self.s.bufnum[u], _ravel(idx, u.shape))
    op = u.op
    if op is Ops.CONST: return UOp.const(u.dtype, u.arg)
    if op is Ops.IOTA: return idx[u.arg[1]].cast(u.dtype)
    if op in ELEMENTWISE:
      srcs = []
      for s in u.src: srcs.append((yield s, idx))
      return UOp(op, u.dtype, tuple(srcs), u.arg)
    if op is Ops.OPTIMIZATION_BARRIER: return (yield u.src[0], idx)
    if op is Ops.RESHAPE: return (yield u.src[0], _unravel(_ravel(idx, u.shape), u.src[0].shape))
    if op is Ops.BROADCAST:
      s = u.src[0].shape
      lead = len(u.shape) - len(s)
      return (yield u.src[0], [_i(0) if n == 1 else idx[lead + k] for k, n in enumerate(s)])
    if op is Ops.PERMUTE:
      at = [None] * len(idx)
      for k, p in enumerate(u.arg): at[p] = idx[k]
      return (yield u.src[0], at)
    if op is Ops.SLICE: return (yield u.src[0], [_i(s) + i * _i(st) for i, (s, _, st) in zip(idx, u.arg)])
    if op is Ops.FLIP:
      return (yield u.src[0], [_i(n - 1) - i if k in u.arg else i for k, (i, n) in enumerate(zip(idx, u.shape))])
    if op is Ops.PAD:
      n = u.src[0].shape
      ok = None
      for i, (lo, hi), m in zip(idx, u.arg, n):
        if lo or hi:
          c = self.ix(_in(i, lo, lo + m))
          ok = c if ok is None else ok.alu(Ops.AND, c)
      at = [_clamp(i - _i(lo), m) if lo or hi else i for i, (lo, hi), m in zip(idx, u.arg, n)]
      if (same := self._equal_loops(ok)) is not None: at = [self.ix(substitute([i], same)[0]) for i in at]
      v = yield u.src[0], at
      return v if ok is None else ok.where(v, UOp.const(u.dtype, 0))
    if op is Ops.CONCAT:
      a, start, parts = u.arg, 0, []
      for s in u.src:
        n = s.shape[a]
        at = [_clamp(i - _i(start), n) if k == a else i for k, i in enumerate(idx)]
        parts.append(((yield s, at), start + n))
        start += n
      out = parts[-1][0]
      for v, end in reversed(parts[:-1]): out = self.ix(idx[a].alu(Ops.CMPLT, _i(end))).where(v, out)
      return out
    if op is Ops.GATHER:
      x, ind = u.src
      k, batch = ind.shape[-1], ind.ndim - 1
      cols = []
      for j in range(k):
        c = yield ind, list(idx[:batch]) + [_i(j)]
        cols.append(_clamp(c.cast(I64), x.shape[j]))
      return (yield x, cols + list(idx[batch:]))
    raise Unsupported(f"schedule: no kernel lowering for {op.name.lower()}")


def _split_loops(loops, stores, reduce, ranges: dict) -> tuple:
  """Each loop whose variable the indices divide by a constant d that divides its extent (an axis merged from two: the
  heads and the head width of attention) split in two, var // d outside var % d, so that every index is linear in
  the loops and the renderer sees which loads run along which loop."""
  every = list(stores) + list(reduce.stores if reduce else ())
  roots = [x for st in every for x in (st.index, st.value, st.valid) if x is not None]
  if reduce: roots.append(reduce.value)
  extents = {l.var: l.extent for l in (*loops, *(reduce.loops if reduce else ()))}
  split: dict[UOp, int] = {}
  for u in toposort(roots):
    if u.op in (Ops.IDIV, Ops.MOD) and u.src[0] in extents and u.src[1].op is Ops.CONST and u.src[0] not in split:
      d, n = u.src[1].arg, extents[u.src[0]]
      if 1 < d < n and n % d == 0: split[u.src[0]] = d
  if not split: return loops, stores, reduce
  ranges, mapping = dict(ranges), {}

  def respan(ls):
    out = []
    for l in ls:
      if l.var not in split:
        out.append(l)
        continue
      d = split[l.var]
      hi, lo = UOp.param((), I64), UOp.param((), I64)
      ranges[hi], ranges[lo] = l.extent // d, d
      mapping[l.var] = hi * _i(d) + lo
      out += [Loop(hi, l.extent // d), Loop(lo, d)]
    return tuple(out)

  loops, rloops = respan(loops), respan(reduce.loops) if reduce else ()
  stores, reduce = _rewritten(stores, reduce, lambda u: simplify(substitute([u], mapping)[0], ranges), rloops)
  return _split_loops(loops, stores, reduce, ranges)   # a part may be divided again (an im2col row: channel, tap)


def _rewritten(stores, reduce: Reduce | None, new, rloops=None) -> tuple[list[Store], Reduce | None]:
  """stores and reduce with new(u) in place of every expression u they hold (an absent valid stays absent), the
  reduction over rloops where given."""
  re_store = lambda st: Store(st.buf, new(st.index), new(st.value), st.mode,
                              None if st.valid is None else new(st.valid))
  if reduce is not None:
    reduce = Reduce(reduce.op, reduce.acc, reduce.loops if rloops is None else rloops, new(reduce.value),
                    tuple(re_store(st) for st in reduce.stores))
  return [re_store(st) for st in stores], reduce


def _joint(a: Loop, b: Loop, exprs: list[tuple[UOp, bool]]) -> bool:
  """Whether loop a, just outside b, and b read memory only as one run of a.extent * b.extent: they appear in the
  expressions (each given with whether it is a store's index) only in indices, as b.extent * a + b times a constant."""
  dep: set[UOp] = set()
  for e, _ in exprs:
    for u in toposort([e]):
      if u is a.var or u is b.var or any(x in dep for x in u.src): dep.add(u)

  def linear(idx: UOp) -> bool:
    terms, _ = _linear(idx)
    return terms.get(a.var, 0) == b.extent * terms.get(b.var, 0) and \
      not any(t in dep for t in terms if t is not a.var and t is not b.var)

  stack, seen = [e for e, index in exprs if not index], set()
  while stack:
    u = stack.pop()
    if u in seen or u not in dep: continue
    seen.add(u)
    if u is a.var or u is b.var: return False   # used as a value (an iota's comparison)
    if u.op is Ops.GATHER:
      if not linear(u.src[1].src[0]): return False
      continue
    stack.extend(u.src)
  return all(linear(e) for e, index in exprs if index)


def _fused(loops, exprs: list[UOp | None], indices: set[int], ranges: dict) -> tuple[tuple, list]:
  """loops with each pair of neighbours that read memory as one run (_joint) made one loop (its range added to
  `ranges`), and exprs (those at `indices` stores' indices) in its terms: a batch norm's sum over (64, 32, 32) runs as
  (64, 1024), whose innermost loop is long enough for the renderer's vector lanes."""
  loops, exprs = list(loops), list(exprs)
  pairs = lambda: [(e, i in indices) for i, e in enumerate(exprs) if e is not None]
  j = len(loops) - 1
  while j > 0:
    a, b = loops[j - 1], loops[j]
    if not _joint(a, b, pairs()):
      j -= 1
      continue
    m = UOp.param((), I64)
    ranges[m] = a.extent * b.extent
    exprs = [None if e is None else simplify(substitute([e], {a.var: _i(0), b.var: m})[0], ranges) for e in exprs]
    loops[j - 1:j + 1] = [Loop(m, a.extent * b.extent)]
    j = min(j, len(loops) - 1)
  return tuple(loops), exprs


def _exprs(stores) -> list:
  """The stores' (index, value, valid) expressions in a row, for _fused; _restored reads them back."""
  return [x for st in stores for x in (st.index, st.value, st.valid)]


def _restored(stores, flat) -> list[Store]:
  """The stores with their expressions replaced by flat's (as _exprs lists them)."""
  return [Store(st.buf, *flat[3 * i:2 + 3 * i], st.mode, flat[2 + 3 * i]) for i, st in enumerate(stores)]


def _fuse_inner_loops(stores, reduce: Reduce | None, epilogue, ranges: dict) -> tuple:
  """The reduction's loops and the epilogue's, each fused where they read memory as one run (_fused)."""
  if reduce is not None and len(reduce.loops) > 1:
    flat = [reduce.value] + _exprs(reduce.stores)
    rloops, flat = _fused(reduce.loops, flat, set(range(1, len(flat), 3)), ranges)
    reduce = Reduce(reduce.op, reduce.acc, rloops, flat[0], tuple(_restored(reduce.stores, flat[1:])))
  if len(epilogue) > 1:
    epilogue, flat = _fused(epilogue, _exprs(stores), set(range(0, 3 * len(stores), 3)), ranges)
    stores = _restored(stores, flat)
  return stores, reduce, epilogue


VECTOR_MIN = 64   # floats in the widest register block's row (AVX-512's four registers)


SHORT_LOOP = 8   # a loop this short outside a contraction's last one (a window's taps along an axis) may join it


def _fuse_outer_loops(loops, stores, reduce: Reduce | None, ranges: dict) -> tuple:
  """A contraction's last loop, when shorter than a register block's width (VECTOR_MIN), fused with the one outside
  it where everything reads and writes them as one run (_fused): a convolution's windows' gradient over (h, w) runs
  as one loop of h * w positions, wide enough for the register blocks' vectors. Then, while the last loop is not a
  whole number of those widths and the one outside it is SHORT_LOOP steps or fewer, those two too: a channels-last
  strided convolution's taps' cotangent, 3 x 96 columns (blocks of 64 and a cut one of 32 for each of the 3) made
  one loop of 288 (4 blocks and one cut), ran 12% faster on AVX-512. Other loops stay as they are, so that sibling
  kernels still share their loops and merge."""
  if reduce is None or len(loops) < 2 or any(st.mode for st in stores) or reduce.value.op is not Ops.MUL:
    return loops, stores, reduce
  if loops[-1].extent < VECTOR_MIN: loops, stores, reduce = _fused_pair(loops, stores, reduce, ranges, len(loops) - 2)
  while len(loops) >= 2 and loops[-1].extent % VECTOR_MIN and loops[-2].extent <= SHORT_LOOP:
    n = len(loops)
    loops, stores, reduce = _fused_pair(loops, stores, reduce, ranges, n - 2)
    if len(loops) == n: break
  return loops, stores, reduce


def _fused_pair(loops, stores, reduce: Reduce, ranges: dict, j: int) -> tuple:
  """A sum's loops j and j + 1 made one loop where everything reads and writes them as one run (_fused)."""
  base = 3 * len(stores)   # the stores' expressions, then the reduction's value and its stores'
  flat = _exprs(stores) + [reduce.value] + _exprs(reduce.stores)
  indices = set(range(0, base, 3)) | set(range(base + 1, len(flat), 3))
  pair, flat = _fused(loops[j:j + 2], flat, indices, ranges)
  if len(pair) == 2: return loops, stores, reduce
  reduce = Reduce(reduce.op, reduce.acc, reduce.loops, flat[base], tuple(_restored(reduce.stores, flat[base + 1:])))
  return (*loops[:j], *pair, *loops[j + 2:]), _restored(stores, flat[:base]), reduce


def _loads_deps(value: UOp) -> list[set[UOp]]:
  """The nodes each load of value's index reads (its loops' variables among them), a set per load."""
  return [set(u.src[1].src[0].toposort()) for u in value.toposort() if u.op is Ops.GATHER]


def _joined_rows(loops, stores, reduce: Reduce | None, ranges: dict) -> tuple:
  """A sum of products whose two loops before the last are read only by the operand that does not move with the
  last (the rows'), and as one run by everything, with those two made one loop: a strided convolution's taps'
  cotangent, its input channels by taps (32 x 9), then runs in blocks of rows over all 288 of them, whole blocks
  that share each step's columns, rather than over the 32 channels alone, once per tap."""
  if reduce is None or reduce.op is not Ops.REDUCE_SUM or len(loops) < 3 or any(st.mode for st in stores) or \
     not is_product(reduce.value):
    return loops, stores, reduce
  reads = _loads_deps(reduce.value)
  cols = set().union(*(d for d in reads if loops[-1].var in d))
  if loops[-3].var in cols or loops[-2].var in cols or not any(loops[-2].var in d for d in reads):
    return loops, stores, reduce
  return _fused_pair(loops, stores, reduce, ranges, len(loops) - 3)


def _unclamped(st: Store) -> Store:
  """A scatter-add of where(inside, v, 0) at an index clamped to the target's edges, where `inside` says that each
  clamped term lies within them (a convolution's input gradient adding its windows' taps, the padding's masked): the
  store of v where inside holds, at the index unclamped. Each point then adds to its own element, in a loop gcc
  vectorises (the clamps mapped the edge's masked points onto one element, which kept every point in order)."""
  v = st.value
  if st.mode != "add" or v.op is not Ops.WHERE or v.src[2].op is not Ops.CONST or v.src[2].arg != 0: return st
  bounds = [(c.src, _linear(c.src[1] if c.src[0].op is Ops.CONST else c.src[0]))
            for c in conjuncts(v.src[0]) if c.op is Ops.CMPLT and Ops.CONST in (c.src[0].op, c.src[1].op)]

  def within(t: UOp, lo: int | None, hi: int | None) -> bool:
    """Whether the guard's compares of t plus a constant with constants keep t within [lo, hi)."""
    terms, at = _linear(t)
    below = [a.arg - (o - at) + 1 for (a, z), (tt, o) in bounds if a.op is Ops.CONST and tt == terms]
    above = [z.arg - (o - at) for (a, z), (tt, o) in bounds if z.op is Ops.CONST and a.op is not Ops.CONST
             and tt == terms]
    return (lo is None or any(b >= lo for b in below)) and (hi is None or any(b <= hi for b in above))
  clamps = {}
  for u in toposort([st.index]):   # max(min(t, hi - 1), 0), or either alone where the simplifier proved the other
    if u.op not in (Ops.MIN, Ops.MAX) or u.src[1].op is not Ops.CONST or u in clamps: continue
    inner = u.src[0]
    if u.op is Ops.MIN and inner.op is Ops.MAX and inner.src[1].op is Ops.CONST and inner.src[1].arg == 0:
      t, lo, hi = inner.src[0], 0, u.src[1].arg + 1
    elif u.op is Ops.MIN: t, lo, hi = inner, None, u.src[1].arg + 1
    elif u.src[1].arg == 0: t, lo, hi = inner, 0, None
    else: return st
    if not within(t, lo, hi): return st
    clamps[u] = t
    clamps.update({inner: inner.src[0]} if inner is not t else {})
  if not clamps: return st
  valid = v.src[0] if st.valid is None else st.valid.alu(Ops.AND, v.src[0])
  return Store(st.buf, substitute([st.index], clamps)[0], v.src[1], st.mode, valid)


def _packable(loops, reduce: Reduce) -> UOp | None:
  """The load of a float sum of products to pack: one contiguous along the innermost reduction loop that moves with
  the last output loop (the right operand of a matmul by a transposed matrix), when no load is contiguous along
  that output loop, so that nothing vectorises along it. Packed, the sum runs as register blocks along it. Only an
  operand not much larger than the output (a weight, not a batch of windows, whose dot products pay as they are)."""
  if reduce.op is not Ops.REDUCE_SUM or not reduce.acc.dtype.is_float or not loops or not reduce.loops: return None
  last, inner = loops[-1], reduce.loops[-1]
  if last.extent < PACK_MIN or inner.extent < PACK_MIN: return None
  found = None
  for u in reduce.value.toposort():
    if u.op is not Ops.GATHER: continue
    idx = u.src[1].src[0]
    along, across = coefficient(idx, last.var), coefficient(idx, inner.var)
    if along in (1, 2): return None
    if across == 1 and along not in (0, None) and found is None: found = u
  if found is None or (panels_read(loops, reduce) is found and transposed_panels(found, loops, reduce)): return None
  deps = set(found.src[1].src[0].toposort())
  size = math.prod(l.extent for l in (*loops, *reduce.loops) if l.var in deps)
  return found if size <= PACK_MAX_RATIO * math.prod(l.extent for l in loops) else None


def _aliasing(row: int) -> bool:
  """Whether rows `row` bytes apart start on lines in ALIASED_SETS of the L1 cache's sets or fewer."""
  return row > 0 and row % 64 == 0 and 64 // math.gcd(row // 64, 64) <= ALIASED_SETS


def _aliased(loops, reduce: Reduce) -> list[UOp]:
  """The loads of a sum of products in register blocks along its last loop (interchanged) to copy with longer rows
  (ALIASED_SETS): affine, contiguous along one loop, stepping along the reduction's innermost loop by rows whose lines
  share a few of the L1 cache's sets, and read again across the output. Not the columns' operand that is copied
  into panels anyway (panel_load)."""
  probe = Kernel("", (), tuple(loops), (), reduce)
  if reduce.op is not Ops.REDUCE_SUM or len(loops) < 2 or not interchanged(probe): return []
  inner, every = reduce.loops[-1], (*loops, *reduce.loops)
  if inner.extent <= ALIASED_SETS * 8: return []
  skip, out = panel_load(probe), []
  for u in reduce.value.toposort():
    if u.op is not Ops.GATHER or u is skip: continue
    steps = [coefficient(u.src[1].src[0], l.var) for l in every]
    if None in steps or 1 not in steps: continue
    if not _aliasing(abs(steps[-1]) * u.dtype.itemsize): continue   # rows along the reduction's innermost loop
    size = math.prod(l.extent for l, c in zip(every, steps) if c)
    if math.prod(l.extent for l, c in zip(loops, steps) if c == 0) >= PAD_MIN_REUSE and size <= u.src[0].shape[0]:
      out.append(u)   # read again across the output, and a copy no bigger than its buffer (no window repeated)
  return out


def _last_longer(order, load: UOp) -> list[int]:
  """The shape of a copy of what `load` reads at the points of `order`'s loops, its last run PAD_BYTES longer."""
  return [l.extent for l in order[:-1]] + [order[-1].extent + PAD_BYTES // load.dtype.itemsize]


def _read_across(load: UOp, loops, reduce: Reduce) -> bool:
  """Whether `load` is the rows' operand of register blocks, contiguous along their rows and strided along the sum
  (x.T @ g: a weight gradient's activations over positions). Read in place, each step of a block's sum reads a few
  values from a new line, pages apart; a copy aliased anyway (_aliased) is made transposed instead, each row's steps
  in a run as a matmul's left operand (a 2048-position weight gradient of 512 x 128: 205 -> 325 GFLOPS)."""
  if len(loops) < 2 or not reduce.loops: return False
  idx, (rows, last) = load.src[1].src[0], loops[-2:]
  deps = set(idx.toposort())
  return rows.var in deps and last.var not in deps and coefficient(idx, rows.var) == 1 and \
      coefficient(idx, reduce.loops[-1].var) not in (0, 1, None)


def _blocked_order(loops: list[Loop], stores, reduce: Reduce | None) -> list[Loop]:
  """The loops of a sum of products that neither of the renderer's register-blocked forms takes in their order, with
  one that an operand strided along the reduction reads contiguously moved last, where the blocks then take it (a
  channels-last transposed convolution's filter gradient, per phase: its output channels last). Its stores, once
  per output, then step along it; any other sum keeps its order."""
  if reduce is None or reduce.op is not Ops.REDUCE_SUM or len(loops) < 2 or not reduce.loops: return loops
  probe = lambda ls: Kernel("", (), tuple(ls), tuple(stores), reduce)
  if interchanged(probe(loops)) or dot_blocked(probe(loops)): return loops
  inner = reduce.loops[-1].var
  for u in reduce.value.toposort():
    if u.op is not Ops.GATHER or coefficient(idx := u.src[1].src[0], inner) in (0, 1, None): continue
    for l in loops[:-1]:
      if coefficient(idx, l.var) == 1 and interchanged(probe(order := [x for x in loops if x is not l] + [l])):
        return order
  return loops


def _contiguous_inner(loops, stores, reduce: Reduce | None) -> Reduce | None:
  """A reduction whose loads all step along its innermost loop, none contiguously, with the loop along which the
  most of them are contiguous moved innermost (a mean over a channels-last activation that a channels-first one is
  read as); any other, and any that the renderer's register blocks take, keeps its order."""
  if reduce is None or len(reduce.loops) < 2 or reduce.stores: return reduce
  probe = Kernel("", (), tuple(loops), tuple(stores), reduce)
  if interchanged(probe) or dot_blocked(probe): return reduce
  idxs = [u.src[1].src[0] for u in reduce.value.toposort() if u.op is Ops.GATHER]
  near = lambda l: sum(coefficient(i, l.var) == 1 for i in idxs)
  if not idxs or near(reduce.loops[-1]) or any(coefficient(i, reduce.loops[-1].var) in (0, None) for i in idxs):
    return reduce
  best = max(reduce.loops[:-1], key=near)
  if not near(best): return reduce
  return dataclasses.replace(reduce, loops=(*(l for l in reduce.loops if l is not best), best))


def _rows_second_last(loops: list[Loop], reduce: Reduce | None) -> list[Loop]:
  """The loops of a sum of products with the one the renderer's register blocks should take as rows second-last:
  one that only the operand not moving with the last loop reads (a query's position in attention scores, rather
  than the head both operands read), so that each block of rows shares its columns' loads; the longest such."""
  if reduce is None or reduce.op is not Ops.REDUCE_SUM or len(loops) < 3: return loops
  reads = _loads_deps(reduce.value)
  cols = [d for d in reads if loops[-1].var in d]
  rows = [d for d in reads if loops[-1].var not in d]
  if len(cols) != 1 or not rows: return loops
  def good(l: Loop) -> bool: return any(l.var in d for d in rows) and l.var not in cols[0]
  best = max((l for l in loops[:-1] if good(l)), key=lambda l: l.extent, default=None)
  if best is None or best is loops[-2] or (good(loops[-2]) and loops[-2].extent >= best.extent): return loops
  return [l for l in loops[:-1] if l is not best] + [best, loops[-1]]


# a sum of products over two loops whose rows loop is shorter than this takes the longer one as its rows instead
LONGER_ROWS_BELOW = 128


def _longer_rows(loops, stores, reduce: Reduce | None) -> list[Loop]:
  """A sum of products over two loops whose operands are each read along one of them and contiguously along the
  sum (x @ w.T; a channels-first filter gradient, its output gradient by its windows over the positions), with
  fewer rows than LONGER_ROWS_BELOW and more columns, with the two swapped: the column panels, each copied
  (transposed) once, then serve many blocks of rows rather than a few, and the other operand is read once for
  each of fewer panels (the CNN's conv2 filter gradient, 64 output channels by 288 taps and channels over 8192
  positions: 1.80 -> 1.21 ms in the step; its conv3's, 64 by 576 over 2048: 0.80 -> 0.53 ms). Only where the
  shorter loop fills the widest target's block row."""
  if reduce is None or reduce.op is not Ops.REDUCE_SUM or len(loops) != 2 or not reduce.acc.dtype.is_float or \
     not is_product(reduce.value) or any(st.mode for st in stores):
    return loops
  rows, cols = loops
  if not widest_lanes(reduce.acc.dtype) <= rows.extent < min(cols.extent, LONGER_ROWS_BELOW): return loops
  inner, reads = reduce.loops[-1].var, {(True, False): 0, (False, True): 0}
  for u in reduce.value.toposort():
    if u.op is not Ops.GATHER: continue
    idx = u.src[1].src[0]
    deps = set(idx.toposort())
    key = (rows.var in deps, cols.var in deps)
    if key == (True, True) or (key != (False, False) and coefficient(idx, inner) != 1): return loops
    if key in reads: reads[key] += 1
  return [cols, rows] if all(reads.values()) else loops


SHORT_SUM = 8   # a sum over at most this many points is written out as that many additions in its kernel's step


def _unrolled_sum(loops, stores, reduce: Reduce | None, epilogue) -> tuple:
  """A reduction over a few points (SHORT_SUM) that the register blocks do not take (nor after packing), written
  out in its outputs' expressions as its steps in its loop order, from the identity: the kernel is then
  elementwise, and vectorises along its last outer loop, where a loop of 3 steps per output ran one output at a time
  (the squared distances of 256 points in 3 dimensions: 0.42 -> 0.08 ms; attention scores over heads 4 wide: 1.2 ->
  0.4 ms; a scatter's gradient's test that both coordinates of each index are in bounds). The same steps in the
  same order."""
  if reduce is None or epilogue or reduce.stores or not loops or loops[-1].extent < SHORT_SUM or \
     math.prod(l.extent for l in reduce.loops) > SHORT_SUM:
    return stores, reduce
  probe = Kernel("", (), tuple(loops), tuple(stores), reduce)
  if interchanged(probe) or dot_blocked(probe) or _packable(loops, reduce) is not None: return stores, reduce
  total = UOp.const(reduce.acc.dtype, reduce_identity(reduce.op, reduce.acc.dtype))
  for point in itertools.product(*(range(l.extent) for l in reduce.loops)):
    at = {l.var: _i(i) for l, i in zip(reduce.loops, point)}
    total = combine(REDUCE_ALU[reduce.op], total, substitute([reduce.value], at)[0])
  return _rewritten(stores, None, lambda u: substitute([u], {reduce.acc: total})[0])


def _rows_used(extent: int) -> float:
  """The least share, over the targets, of a register block's rows that a rows loop of `extent` fills."""
  return min(extent / (-(-extent // rows) * rows) for rows in (t["TG_ROWS"] for t in BLOCKS.values()))


MERGED_BLOCKS = 3   # whole blocks of rows (of the widest target's) that merged rows loops make at least


def _merged_rows(loops, stores, reduce: Reduce | None, ranges: dict) -> tuple:
  """A sum of products that the register blocks run along its last loop (interchanged) but whose rows loop is
  shorter than any target's block of rows (a first layer's channels-last filter gradient: 3 input channels, in
  blocks of 8 rows) with its rows loop merged with the loops outside it that fill the blocks best (27 taps and
  channels): each step of the reduction then serves a whole block of rows, not 3 of them. Only loops that the
  columns' operand does not read (so that a block's rows still share its loads; not a batch of examples' filter
  gradients), and only into MERGED_BLOCKS blocks or more, which the threads share out evenly enough. The merged
  loop's range is added to `ranges`."""
  if reduce is None or len(loops) < 3 or loops[-2].extent >= min(t["TG_ROWS"] for t in BLOCKS.values()) or \
     not is_product(reduce.value) or not interchanged(Kernel("", (), tuple(loops), tuple(stores), reduce)):
    return loops, stores, reduce
  reads = _loads_deps(reduce.value)
  columns = set().union(*(d for d in reads if loops[-1].var in d))
  first = len(loops) - 2
  while first > 0 and loops[first - 1].var not in columns: first -= 1
  used = {j: _rows_used(math.prod(l.extent for l in loops[j:-1])) for j in range(first, len(loops) - 1)}
  j = max(used, key=lambda j: (used[j], j))
  if j == len(loops) - 2 or math.prod(l.extent for l in loops[j:-1]) < \
     MERGED_BLOCKS * max(t["TG_ROWS"] for t in BLOCKS.values()):
    return loops, stores, reduce
  group = loops[j:-1]
  m = UOp.param((), I64)
  ranges[m] = math.prod(l.extent for l in group)
  mapping, inner = {}, 1
  for l in reversed(group):
    q = m.alu(Ops.IDIV, _i(inner)) if inner > 1 else m
    mapping[l.var] = q.alu(Ops.MOD, _i(l.extent)) if l is not group[0] else q
    inner *= l.extent
  stores, reduce = _rewritten(stores, reduce, lambda u: simplify(substitute([u], mapping)[0], ranges))
  return [*loops[:j], Loop(m, ranges[m]), loops[-1]], stores, reduce


FAR_BYTES = 1024   # an access stepping this far or more along the innermost loop touches a page every few steps
LINE_BYTES = 64    # one stepping this far or more reads a cache line a step
L1_BYTES = 32768   # the lines of a transposed read spanning more than this along the innermost loop leave the L1 cache


def _access_strides(loops: list[Loop], stores):
  """Each loop's steps (in elements) of the kernel's stores then its loads, and their items' sizes; None where an
  index is not affine in the loops."""
  loads = [u for st in stores for u in st.value.toposort() if u.op is Ops.GATHER]
  steps = [(st.index, st.buf.dtype.itemsize) for st in stores] + [(u.src[1].src[0], u.dtype.itemsize) for u in loads]
  strides = {l.var: [coefficient(i, l.var) for i, _ in steps] for l in loops}
  if any(c is None for cs in strides.values() for c in cs): return None
  return strides, [size for _, size in steps]


def _transposed_order(loops: list[Loop], stores, found) -> list[Loop]:
  """The loops of an elementwise kernel that transposes (reads along one loop, writes along another): innermost, the
  loop along which the fewest accesses step FAR_BYTES or more (a transposed read of a channels-last activation,
  a page a step, moves inside; the write's steps stay within a page); then, second-last, a loop along which a read
  that the innermost one gathers a line a step runs contiguously, so that the lines it touches are used again from
  the L1 cache before they leave it (a strided convolution's windows of a channels-last input). Any other kernel
  keeps its order. `found`: _access_strides of the kernel."""
  if len(loops) < 2 or any(st.mode for st in stores) or found is None: return loops
  strides, sizes = found
  far = lambda l: sum(abs(c) * size >= FAR_BYTES for c, size in zip(strides[l.var], sizes))
  inner = min(loops, key=lambda l: (far(l), l is not loops[-1]))
  order = [l for l in loops if l is not inner]
  gathered = [j for j, c in enumerate(strides[inner.var]) if abs(c) * sizes[j] >= LINE_BYTES and j >= len(stores)]
  beside = next((l for l in reversed(order) if any(strides[l.var][j] == 1 for j in gathered)), None)
  if beside is not None: order = [l for l in order if l is not beside] + [beside]
  return order + [inner]


def _strides_a_line(value: UOp, loop: Loop) -> bool:
  """Whether a load of value steps a cache line or more along loop (a column, read down)."""
  return any(u.op is Ops.GATHER and (c := coefficient(u.src[1].src[0], loop.var)) is not None and
             abs(c) * u.dtype.itemsize >= LINE_BYTES for u in value.toposort())


def _tiled(loops, stores, found) -> tuple[tuple[Loop, ...], tuple]:
  """An elementwise kernel's last two loops in TILE x TILE tiles (_in_tiles) when an access steps a cache line or
  more along the last, spanning more than L1_BYTES, and runs contiguously along the second-last (a transpose):
  each tile's lines are used whole while they stay in the L1 cache (whose sets power-of-two strides share), and
  its pages in the TLB. Other kernels are left as they are. `found`: _access_strides of the kernel."""
  if len(loops) < 2 or any(st.mode for st in stores) or found is None: return loops, stores
  strides, sizes = found
  a, b = loops[-2:]
  if a.extent <= TILE or not any(abs(c) * size >= LINE_BYTES and abs(c) * size * b.extent > L1_BYTES and
                                 strides[a.var][j] == 1 for j, (c, size) in enumerate(zip(strides[b.var], sizes))):
    return loops, stores
  return _in_tiles(loops, stores)


def _in_tiles(loops, stores, block: int = TILE) -> tuple[tuple[Loop, ...], tuple]:
  """The loops' last two in TILE x TILE tiles, or half as wide where only those divide them (a padded row: 512 + 8),
  the tiles in block x block blocks where block divides them; and the stores in their terms."""
  if len(loops) < 2: return tuple(loops), tuple(stores)
  a, b = loops[-2:]
  tile = next((t for t in (TILE, TILE // 2) if not (a.extent % t or b.extent % t)), None)
  if tile is None: return tuple(loops), tuple(stores)
  sizes = (block, tile) if block > tile and not (a.extent % block or b.extent % block) else (tile,)
  tiled, at = list(loops[:-2]), {a.var: _i(0), b.var: _i(0)}
  for level in range(len(sizes) + 1):   # the blocks of both, then the tiles in a block, then the points in a tile
    for l in (a, b):
      bounds = (l.extent, *sizes, 1)
      v = UOp.param((), I64)
      tiled.append(Loop(v, bounds[level] // bounds[level + 1]))
      at[l.var] = at[l.var] + v * _i(bounds[level + 1])
  ranges = {l.var: l.extent for l in tiled}
  return tuple(tiled), tuple(_rewritten(stores, None, lambda u: simplify(substitute([u], at)[0], ranges))[0])


class _Scheduler:
  """`buffers` is shared with the enclosing schedule for a control-flow op's sub-graphs, whose outputs then get
  buffers of their own (fresh_outputs) even when they are inputs or constants."""

  def __init__(self, graph: Graph, buffers: list[BufferSpec] | None = None, fresh_outputs: bool = False):
    self.graph, self.fresh = graph, fresh_outputs
    self._vars: dict[tuple, UOp] = {}
    self.simplifier = Simplifier({})   # for every kernel: a loop variable has one extent
    self.alike: dict[tuple, tuple] = {}   # a region's structure: the kernels scheduled for it (_remember)
    self._iotas: dict[UOp, bool] = {}
    self.outs = list(graph.outputs)
    order = toposort(self.outs)
    self.buffers: list[BufferSpec] = [] if buffers is None else buffers
    self.bufnum: dict[UOp, int] = {}
    for p in graph.inputs: self._new(p)
    self.inputs = [self.bufnum[p] for p in graph.inputs]
    self.results: dict[UOp, tuple[int, ...]] = {}   # a control-flow op's result buffers, one per result
    for u in order:
      if u in self.bufnum: continue
      if u.op is Ops.BUFFER: self._new(u, np.ascontiguousarray(u.arg.data).reshape(-1))
      elif u.op is Ops.PARAM:
        raise ValueError(f"schedule: the graph uses a value from outside its inputs ({u.dtype}{list(u.shape)})")
      elif u.op in CONTROL_FLOW:
        self.results[u] = tuple(self._spec(math.prod(sh), dt) for sh, dt in multi_avals(u.op, u.src, u.arg))
      elif u.op is Ops.PROJ: self.bufnum[u] = self.results[u.src[0]][u.arg]
    keep = self._materialised(order)
    self.tail = self._tails(order, keep)
    keep -= set(self.tail.values())
    for u in order:
      if u in self.bufnum or u not in keep or u.op in CONTROL_FLOW: continue
      if u.op is Ops.RESHAPE and u.src[0] in self.bufnum: self.bufnum[u] = self.bufnum[u.src[0]]  # same bytes
      else: self._new(u)
    self.order = [u for u in order if u.op in CONTROL_FLOW or u in self.bufnum and
                  u.op not in (Ops.PARAM, Ops.BUFFER, Ops.PROJ) and
                  not (u.op is Ops.RESHAPE and self.bufnum[u] == self.bufnum.get(u.src[0]))]
    operands = {u: self._operands(u) for u in self.order if u.op not in CONTROL_FLOW}
    self.order = near_readers(self.order, operands.get, self.bufnum.get, lambda n: self.buffers[n].nbytes)
    self.kernels: list[Kernel | Control] = []
    self.calls: list[tuple[int, ...]] = []

  def _operands(self, u: UOp) -> set[int]:
    """The buffers u's kernel reads."""
    out, todo, seen = set(), list(u.src), set()
    while todo:
      if (s := todo.pop()) in seen: continue
      seen.add(s)
      if s in self.bufnum: out.add(self.bufnum[s])
      else: todo.extend(s.src)
    return out

  def _materialised(self, order: list[UOp]) -> set[UOp]:
    """Nodes that get a buffer: outputs, reductions, scatters, optimization barriers (but those _absorbed); nodes read
    at several indices (used by a movement op and something else); and nodes that several kernels would otherwise
    each recompute. A reduction whose only use is broadcast back over its own input's shape into one elementwise
    output (softmax's sums) gets no buffer: it runs in that output's kernel, which stores the output in a loop after
    the reduction (its epilogue)."""
    self.users = users = _readers(order)
    stored = (Ops.SCATTER, Ops.OPTIMIZATION_BARRIER, Ops.PARAM, Ops.BUFFER, Ops.PROJ)
    m = {u for u in order if u.op in REDUCE or u.op in stored}
    m |= {s for u in order if u.op in CONTROL_FLOW for s in u.src}   # control flow reads its operands from buffers
    m |= {self._base(u.src[1]) for u in order if u.op is Ops.SCATTER and self._searched(u.src[1])}
    m |= {o for o in self.outs if o.op is not Ops.CONST}
    m |= {self._base(u) for u in order if len(users[u]) > 1 and not self._cheap(u)
          and any(v.op in REINDEX for v in users[u])}
    m |= self._repeated_by_broadcasts(order)
    candidates = [r for r in order if r.op in REDUCE and r not in self.outs and self._broadcast_back(r) is not None]
    while True:
      self.epilogue = {}
      for r in candidates:
        if (o := self._epilogue_root(r, users, m)) is not None and o not in self.epilogue:
          self.epilogue[o] = r
      base = m - set(self.epilogue.values())
      while True:  # a node reached from two kernels' roots is computed once, into a buffer
        roots: dict[UOp, frozenset] = {}
        for u in reversed(order):
          roots[u] = frozenset().union(*(({v} if v in base else roots[v]) for v in users[u])) if users[u] else frozenset()
        shared = [u for u in order if u not in base and len(roots[u]) > 1 and u.op not in CONTROL_FLOW]
        more = {self._base(u) for u in shared if not (self._cheap(u) or u.op in CHEAP)}
        chain, wide = self._chains(order, base), self._wide(order, base)
        long = {u for u in shared if u.op in CHEAP and (chain[u] > CHEAP_CHAIN or u in wide)}
        more = (more | self._tops(order, base, long)) - base
        more |= self._recomputed(order, base | more) - base
        if not more: break
        base |= more
      if all(self._epilogue_root(r, users, base - {r}) is o for o, r in self.epilogue.items()):
        return base - self._absorbed(base)
      m = base | set(self.epilogue.values())
      candidates = [r for r in candidates if self._epilogue_root(r, users, base - {r}) is not None]

  def _tops(self, order: list[UOp], base: set[UOp], long: set[UOp]) -> set[UOp]:
    """The `long` nodes (cheap steps whose recomputing repeats too much) stored, from the top down: each one that
    two kernels' roots still reach once those above it are stored. One pass from the outputs, where cutting the tops
    only and looking again took a pass for each node of a long chain (a deep residual network's gradient: 108 passes
    over the graph for 150 layers)."""
    cut, roots = set(), {}
    for u in reversed(order):
      roots[u] = frozenset().union(*(({v} if v in base or v in cut else roots[v]) for v in self.users[u]))
      if u in long and len(roots[u]) > 1: cut.add(u)
    return cut

  def _recomputed(self, order: list[UOp], base: set[UOp]) -> set[UOp]:
    """Nodes that their kernel would compute at more than INDEX_MAPS index maps (one for each path of moves from
    the node to the kernel's stores), or more than two where they call transcendental functions: a scan's
    gradient, whose every level reads the one after it at two offsets, would recompute its first level 2^10 times
    over for 1024 points. Stored once instead (their bases)."""
    paths, out = {}, set()
    for u in reversed(order):
      if u in base or not self.users[u]:
        paths[u] = {()}
        continue
      p = set()
      for v in self.users[u]:
        q = {()} if v in base else paths[v]
        p |= {(v, *r) for r in q} if v.op in REINDEX else q
        if len(p) > INDEX_MAPS: break
      if len(p) > 2 and (len(p) > INDEX_MAPS or self._transcendental(u)) and not self._cheap(u):
        out.add(self._base(u))
        p = {()}
      paths[u] = p
    return out

  def _chains(self, order: list[UOp], base: set[UOp]) -> dict[UOp, int]:
    """For each node, how many CHEAP steps recomputing it repeats (up to CHEAP_CHAIN + 1): itself and the cheap steps
    it reads that have no buffer, counted along its longest path of them."""
    chain: dict[UOp, int] = {}
    for u in order:
      cheap = u.op in CHEAP and u not in base
      chain[u] = 1 + max((chain.get(s, 0) for s in u.src), default=0) if cheap else 0
      chain[u] = min(chain[u], CHEAP_CHAIN + 1)
    return chain

  def _wide(self, order: list[UOp], base: set[UOp]) -> set[UOp]:
    """Nodes of at least WIDE_BYTES that recomputing reads WIDE_LOADS or more buffers of that size (from stored
    nodes and inputs) for, or of at least MANY_BYTES that it reads MANY_LOADS or more buffers of that size for."""
    reads: dict[UOp, frozenset] = {}
    nbytes = lambda u: u.size * u.dtype.itemsize
    for u in order:
      if u in base or u.op in (Ops.PARAM, Ops.BUFFER):
        reads[u] = frozenset([u]) if nbytes(u) >= MANY_BYTES else frozenset()
      else: reads[u] = frozenset().union(*(reads[s] for s in u.src))
    wide = lambda u: nbytes(u) >= WIDE_BYTES and sum(nbytes(s) >= WIDE_BYTES for s in reads[u]) >= WIDE_LOADS
    return {u for u in order if u not in base and (wide(u) or nbytes(u) >= MANY_BYTES and len(reads[u]) >= MANY_LOADS)}

  def _absorbed(self, base: set[UOp]) -> set[UOp]:
    """Optimization barriers whose one user is a stored elementwise node (a strided convolution's input gradient,
    masked by a ReLU's backward): that node's kernel computes the barrier's value where it reads it, rather than a
    kernel of its own storing it for the next to read back."""
    return {u for u in base if u.op is Ops.OPTIMIZATION_BARRIER and u not in self.outs and len(self.users[u]) == 1
            and (v := self.users[u][0]).op in ELEMENTWISE and v in base}

  def _repeated_by_broadcasts(self, order: list[UOp]) -> set[UOp]:
    """Elementwise work of several steps that a broadcast repeats into a reduction (a contraction's operand: the
    backward pass's masked, normalised cotangent), or that calls transcendental functions (a rotary embedding's
    table of sines and cosines, repeated over batch and heads): stored once, rather than recomputed for every
    element the broadcast makes."""
    out = set()
    for b in order:
      if b.op is not Ops.BROADCAST or b.size < REPEATS * b.src[0].size: continue
      base = b.src[0]
      while base.op in (Ops.RESHAPE, Ops.PERMUTE): base = base.src[0]
      if base.op in ELEMENTWISE and self._steps(base) >= STEPS and not self._index_arithmetic(base) and \
         (self._transcendental(base) or self._feeds_reduction(b)): out.add(base)
    return out

  @staticmethod
  def _transcendental(u: UOp) -> bool:
    """Whether u's elementwise work (up to CHEAP_CHAIN steps of it) calls a transcendental function."""
    seen, stack = set(), [u]
    while stack and len(seen) < CHEAP_CHAIN:
      v = stack.pop()
      if v in seen or v.op not in ELEMENTWISE and v.op not in VIEWS: continue
      if v.op in TRANSCENDENTAL: return True
      seen.add(v)
      stack.extend(v.src)
    return False

  def _steps(self, u: UOp) -> int:
    """The elementwise nodes computing u from leaves, views and reductions (counted up to STEPS)."""
    seen, stack = set(), [u]
    while stack and len(seen) < STEPS:
      v = stack.pop()
      if v in seen or v.op not in ELEMENTWISE and v.op not in VIEWS: continue
      if v.op in ELEMENTWISE: seen.add(v)
      stack.extend(v.src)
    return len(seen)

  def _searched(self, u: UOp) -> bool:
    """Whether u (a scatter's indices) is found by more than SCATTER_INDEX_STEPS elementwise steps that include a
    lookup (a histogram's binary search over its edges). A scatter applies its updates in order, so such indices are
    computed before it, by a kernel whose iterations the threads and vectors share."""
    if self._cheap(u): return False
    seen, stack, lookup = set(), [u], False
    while stack:
      v = stack.pop()
      if v in seen or v.op not in ELEMENTWISE and v.op not in VIEWS and v.op is not Ops.GATHER: continue
      seen.add(v)
      lookup |= v.op is Ops.GATHER
      if lookup and len(seen) > SCATTER_INDEX_STEPS: return True
      stack.extend(v.src)
    return False

  def _feeds_reduction(self, u: UOp) -> bool:
    """Whether a reduction reads u through elementwise ops and views only."""
    seen, stack = set(), [u]
    while stack:
      v = stack.pop()
      if v in seen: continue
      seen.add(v)
      for w in self.users[v]:
        if w.op in REDUCE: return True
        if w.op in ELEMENTWISE or w.op in VIEWS or w.op is Ops.CONCAT: stack.append(w)
    return False

  def _tails(self, order: list[UOp], keep: set[UOp]) -> dict[UOp, UOp]:
    """Materialised elementwise nodes that read one reduction nothing else reads, at their own index, through
    elementwise steps of their own (a mean: a sum divided by n; a gradient step: p - lr * sum; a ReLU's backward:
    sum * (h > 0)), each with that reduction. The reduction gets no buffer, and its kernel stores the node's value
    after the sum."""
    out = {}
    for u in order:
      if u not in keep or u.op not in ELEMENTWISE or u in self.epilogue: continue
      if (r := self._tail_of(u, keep)) is not None and r not in out.values(): out[u] = r
    return out

  def _tail_of(self, u: UOp, keep: set[UOp]) -> UOp | None:
    """The reduction u would store after (_tails), or None. What else u reads (constants, inputs, other kernels'
    outputs, cheap work) it reads as any kernel does; the steps from u down to the reduction are u's alone, and are
    elementwise or reshapes that add or drop axes of one: u and the reduction then run the same loops."""
    squeezed = lambda v: tuple(n for n in v.shape if n != 1)
    region, stack, reds = set(), list(u.src), set()
    while stack:   # the work u's kernel computes itself, and the reductions that are read nowhere else
      s = stack.pop()
      if s in region or s in reds or self._cheap(s): continue
      if s in keep:
        if s.op in REDUCE and s not in self.outs and len(self.users[s]) == 1 and s not in self.epilogue.values() \
           and squeezed(s) == squeezed(u): reds.add(s)
        continue
      region.add(s)
      stack.extend(s.src)
    ok = lambda s: len(self.users[s]) == 1 and squeezed(s) == squeezed(u) and \
        (s.op in ELEMENTWISE or s.op is Ops.RESHAPE and squeezed(s.src[0]) == squeezed(s))

    def steps(r: UOp) -> set[UOp]:
      """The work in u's kernel that reads r."""
      path, todo = set(), [v for v in self.users[r] if v in region]
      while todo:
        if (v := todo.pop()) not in path:
          path.add(v)
          todo.extend(w for w in self.users[v] if w in region)
      return path
    # a reduction whose value other kernels need too (through a step they share) stays stored, read as a leaf
    found = [r for r in reds if all(ok(s) for s in steps(r))]
    return found[0] if len(found) == 1 else None

  def _broadcast_back(self, r: UOp) -> tuple[UOp, list[UOp]] | None:
    """The broadcast of r (or of cheap elementwise steps on r alone: a variance's reciprocal square root) back over
    r's input shape, when that is r's one use, and those steps; else None."""
    u, steps = r, []
    while len(self.users[u]) == 1 and (v := self.users[u][0]).op in ELEMENTWISE and v.shape == r.shape and \
        all(s is u or self._cheap(s) for s in v.src):
      u = v
      steps.append(v)
    if len(self.users[u]) != 1 or u in self.outs: return None
    b = self.users[u][0]
    return (b, steps) if b.op is Ops.BROADCAST and b.shape == r.src[0].shape else None

  def _epilogue_root(self, r: UOp, users, m) -> UOp | None:
    """The one elementwise output root that reads r, broadcast over r's input shape, at its own index; else None."""
    b, steps = self._broadcast_back(r)
    if b in m or any(u in m for u in steps): return None
    found, stack, seen = None, [b], set()
    while stack:
      u = stack.pop()
      if u in seen: continue
      seen.add(u)
      for v in users[u]:
        if v.op not in ELEMENTWISE or v.shape != u.shape: return None
        if v in m:
          if found not in (None, v) or v.op in REDUCE: return None
          found = v
        else: stack.append(v)
      if u in self.outs and u is not found: return None
    return found

  @staticmethod
  def _base(u: UOp) -> UOp:
    """The node a view reads (a broadcast is never given a buffer of its own: its source is)."""
    while u.op in VIEWS: u = u.src[0]
    return u

  def _cheap(self, u: UOp) -> bool:
    while u.op in VIEWS: u = u.src[0]
    return u.op in (Ops.CONST, Ops.IOTA, Ops.PARAM, Ops.BUFFER) or self._index_arithmetic(u) or self._stored_read(u) \
        or self._arange(u)

  def _stored_read(self, u: UOp) -> bool:
    """Whether u reads a buffer of its own (a barrier's, an input's) at indices computed from iotas alone: a
    convolution's windows of its padded input, which each kernel using them reads in place, rather than a copy of
    them (taps times the input) written once and read back."""
    if u.op is not Ops.GATHER: return False
    src = u.src[0]
    while src.op in VIEWS: src = src.src[0]
    return src.op in (Ops.OPTIMIZATION_BARRIER, Ops.PARAM, Ops.BUFFER) and self._index_arithmetic(u.src[1])

  def _index_arithmetic(self, u: UOp) -> bool:
    """Whether u is computed from iotas, constants and integer inputs alone (indices: a convolution's windows, a
    scatter's rows), which every kernel reading it recomputes, folded into its own index arithmetic, rather than
    loads of a copy."""
    if (known := self._iotas.get(u)) is not None: return known
    if u.op in (Ops.IOTA, Ops.CONST) or u.op in (Ops.PARAM, Ops.BUFFER) and u.dtype.is_int: known = True
    elif u.op in ELEMENTWISE or u.op in VIEWS or u.op in (Ops.CONCAT, Ops.GATHER):
      known = not u.dtype.is_float and all(self._index_arithmetic(s) for s in u.src)
    else: known = False
    self._iotas[u] = known
    return known

  def _arange(self, u: UOp) -> bool:
    """Whether u is a float conversion of index arithmetic, scaled and shifted by constants (an arange's values)."""
    while u.op in (Ops.ADD, Ops.MUL) and u.dtype.is_float and self._base(u.src[1]).op is Ops.CONST: u = u.src[0]
    return u.op is Ops.CAST and self._index_arithmetic(u.src[0])

  def _new(self, u: UOp, data=None) -> int:
    self.bufnum[u] = self._spec(u.size if data is None else data.size, u.dtype, data)
    return self.bufnum[u]

  def _spec(self, size: int, dtype, data=None) -> int:
    self.buffers.append(BufferSpec(size, dtype, data))
    return len(self.buffers) - 1

  def _loops(self, shape, role: str = "outer") -> tuple[list[Loop], list[UOp]]:
    """Loops over shape's axes longer than one, and the index of each axis. A loop's variable is the same for every
    kernel (by role, position and extent), so that equal index arithmetic is one node, simplified once."""
    loops, idx = [], []
    for n in shape:
      if n == 1: idx.append(_i(0))
      else:
        if (v := self._vars.get(key := (role, len(loops), n))) is None: v = self._vars[key] = UOp.param((), I64)
        loops.append(Loop(v, n))
        idx.append(v)
    return loops, idx

  def _emit(self, name: str, kb: _KernelBuilder, loops, stores, reduce=None, parallel=True, epilogue=()):
    if not epilogue: loops, stores, reduce = _split_loops(loops, stores, reduce, kb.ranges)
    stores, reduce, epilogue = _fuse_inner_loops(stores, reduce, epilogue, kb.ranges)
    if not epilogue: loops, stores, reduce = _fuse_outer_loops(loops, stores, reduce, kb.ranges)
    self.simplifier.bounds.ranges.update(kb.ranges)
    if parallel and not epilogue:
      loops, stores, reduce = _joined_rows(_blocked_order(loops, stores, reduce), stores, reduce, kb.ranges)
      loops = _longer_rows(_rows_second_last(loops, reduce), stores, reduce)
    if parallel: stores, reduce = _unrolled_sum(loops, stores, reduce, epilogue)
    if parallel and not epilogue:
      loops, stores, reduce = _merged_rows(loops, stores, reduce, kb.ranges)   # its merged loop's range added
      self.simplifier.bounds.ranges.update(kb.ranges)
    reduce = _contiguous_inner(loops, stores, reduce)
    if reduce is None and not epilogue:
      found = _access_strides(loops, stores)
      loops, stores = _tiled(_transposed_order(loops, stores, found), stores, found)
    if reduce is not None and parallel and not epilogue and (load := _packable(loops, reduce)) is not None:
      reduce = self._pack(name, kb, loops, reduce, load)
    if reduce is not None and parallel and not epilogue:
      for j, load in enumerate(_aliased(loops, reduce)):
        copy = self._transposed if _read_across(load, loops, reduce) else self._padded
        reduce = copy(f"{name}_{j}", kb, loops, reduce, load)
    nums = sorted(kb.bufs)
    self.kernels.append(Kernel(name, tuple(kb.bufs[n] for n in nums), tuple(loops), tuple(stores), reduce, parallel,
                               epilogue))
    self.calls.append(tuple(nums))

  def _pack(self, name: str, kb: _KernelBuilder, loops, reduce: Reduce, load: UOp) -> Reduce:
    """The reduction reading `load` from a copy of the values it reads, laid out with the last output loop's
    axis contiguous (a packed panel), copied in tiles."""
    deps = set(load.src[1].src[0].toposort())
    order = [l for l in (*loops[:-1], *reduce.loops, loops[-1]) if l.var in deps]
    return self._from_copy(name, kb, reduce, load, order, [l.extent for l in order], tiled=True)

  def _padded(self, name: str, kb: _KernelBuilder, loops, reduce: Reduce, load: UOp) -> Reduce:
    """The reduction reading `load` from a copy of the values it reads in their order in memory, each run along its
    contiguous loop PAD_BYTES longer (_aliased)."""
    idx = load.src[1].src[0]
    order = sorted((l for l in (*loops, *reduce.loops) if coefficient(idx, l.var)),
                   key=lambda l: -abs(coefficient(idx, l.var)))
    return self._from_copy(name, kb, reduce, load, order, _last_longer(order, load), tiled=False)

  def _transposed(self, name: str, kb: _KernelBuilder, loops, reduce: Reduce, load: UOp) -> Reduce:
    """The reduction reading `load` (_read_across) from a copy with each of its rows' steps of the sum in a run,
    PAD_BYTES longer (rows a power of two apart would share the L1 cache's sets, in the copy's tiles' writes and in
    the register blocks' reads)."""
    deps = set(load.src[1].src[0].toposort())
    order = [l for l in (*loops[:-1], *reduce.loops) if l.var in deps]
    return self._from_copy(name, kb, reduce, load, order, _last_longer(order, load), tiled=True,
                           block=TRANSPOSE_BLOCK)

  def _from_copy(self, name: str, kb: _KernelBuilder, reduce: Reduce, load: UOp, order, shape, tiled: bool,
                 block: int = TILE) -> Reduce:
    """The reduction reading `load` from a copy of the values it reads, the value at each point of `order`'s loops
    at that point's place in an array of `shape`: written by a kernel of its own just before (`name` and
    PACK_SUFFIX), in TILE x TILE tiles (in blocks of `block`) where `tiled`."""
    buf = load.src[0]
    n = self._spec(math.prod(shape), buf.dtype)
    copy = kb.buf(n)
    at = _ravel([l.var for l in order], shape)
    src = next(m for m, p in kb.bufs.items() if p is buf)
    stores = (Store(copy, at, load),)
    body = _in_tiles(order, stores, block) if tiled else (tuple(order), stores)
    self.kernels.append(Kernel(f"{name}{PACK_SUFFIX}", (buf, copy), *body))
    self.calls.append((src, n))
    from_copy = copy.gather(kb.ix(at).reshape((1,)))
    return dataclasses.replace(reduce, value=substitute([reduce.value], {load: from_copy})[0])

  def kernel_for(self, u: UOp):
    """The kernels computing u: those of an earlier node of the same structure (an alike layer's, _region) again, on
    u's buffers, or else scheduled afresh."""
    if REUSE_ALIKE and (region := _region(u, self.bufnum, self.buffers, self.tail, self.epilogue)) is not None:
      if (done := self.alike.get(region[0])) is not None: return self._again(done, region[1])
      k0, b0, n0, e0 = len(self.kernels), len(self.buffers), len(self.bufnum), len(self.epilogue)
      self._kernel_for(u)
      if len(self.bufnum) == n0 and len(self.epilogue) == e0: self._remember(region, k0, b0)
    else:
      self._kernel_for(u)

  def _remember(self, region: tuple, k0: int, b0: int):
    """The kernels from k0 on (and the buffers from b0 on, which they made) as what a region of this structure
    schedules to, each call's buffers as the region's (by first appearance) or the new ones."""
    made, new = [], self.buffers[b0:]
    if any(b.data is not None for b in new): return
    slots = {n: (True, i) for i, n in enumerate(region[1])} | {b0 + j: (False, j) for j in range(len(new))}
    for k, call in zip(self.kernels[k0:], self.calls[k0:]):
      if not isinstance(k, Kernel) or any(n not in slots for n in call): return
      made.append((k, tuple(slots[n] for n in call)))
    self.alike[region[0]] = (tuple((b.size, b.dtype) for b in new), tuple(made), len(f"k{k0}_"))

  def _again(self, done: tuple, nums: list[int]):
    """A remembered region's kernels on the buffers `nums`, named as their place in the program (the same nodes: a
    kernel's parameters stand for its call's buffers), and new buffers for those the region made."""
    specs, made, prefix = done
    made_nums = [self._spec(size, dtype) for size, dtype in specs]
    base = f"k{len(self.kernels)}_"
    for k, slots in made:
      self.kernels.append(dataclasses.replace(k, name=base + k.name[prefix:]))
      self.calls.append(tuple(nums[i] if ours else made_nums[i] for ours, i in slots))

  def _kernel_for(self, u: UOp):
    name = f"k{len(self.kernels)}_{u.op.name.lower()}"
    if u.size == 0: return
    n = self.bufnum[u]
    if u.op in REDUCE or u in self.tail:   # a reduction, or an elementwise tail stored after its reduction
      r = self.tail.get(u, u)
      x = r.src[0]
      loops, idx = self._loops(u.shape)
      _, at = self._loops(r.shape)   # the same loops, r's shape being u's up to axes of one
      rloops, ridx = self._loops(tuple(x.shape[a] if a in r.arg else 1 for a in range(x.ndim)), "reduce")
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops + rloops})
      full = [j if a in r.arg else i for a, (i, j) in enumerate(zip(at, ridx))]
      ad = acc_dtype(r.dtype)
      acc = UOp.param((), ad)
      value = kb.value(x, full).cast(ad)
      kb.reduced[r] = acc.cast(r.dtype)
      out = acc.cast(u.dtype) if r is u else kb.value(u, idx, own=True)
      store = Store(kb.buf(n), kb.ix(_ravel(idx, u.shape)), out)
      self._emit(name, kb, loops, [store], Reduce(r.op, acc, tuple(rloops), value))
    elif u.op is Ops.SCATTER:
      x, ind, upd = u.src
      loops, idx = self._loops(u.shape)
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops})
      self._emit(name + "_init", kb, loops, [Store(kb.buf(n), kb.ix(_ravel(idx, u.shape)), kb.value(x, idx))])
      loops, idx = self._loops(upd.shape)
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops})
      k, batch = ind.shape[-1], ind.ndim - 1
      cols, ok = [], None
      for j in range(k):
        c = kb.value(ind, list(idx[:batch]) + [_i(j)]).cast(I64)
        inside = kb.ix(_in(c, 0, x.shape[j]))
        ok = inside if ok is None else ok.alu(Ops.AND, inside)
        cols.append(_clamp(c, x.shape[j]))
      flat = kb.ix(_ravel(cols + list(idx[batch:]), x.shape))
      mode = None if u.arg == "set" else u.arg
      # leading loops whose index is the loop itself write disjoint rows (a convolution's batch and channels): the
      # threads share them out, each running the rest in order
      own = next((j for j in range(min(batch, k)) if kb.ix(cols[j]) is not idx[j]), min(batch, k))
      store = _unclamped(Store(kb.buf(n), flat, kb.value(upd, idx), mode, ok))
      if own: self._emit(name, kb, loops[:own], [store], epilogue=tuple(loops[own:]))
      else: self._emit(name, kb, loops, [store], parallel=False)
    elif u in self.epilogue:
      r = self.epilogue[u]
      loops, idx = self._loops(r.shape)
      rloops, ridx = self._loops(tuple(u.shape[a] if a in r.arg else 1 for a in range(u.ndim)), "reduce")
      eloops, eidx = self._loops(tuple(u.shape[a] if a in r.arg else 1 for a in range(u.ndim)), "epilogue")
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops + rloops + eloops})
      ad = acc_dtype(r.dtype)
      acc = UOp.param((), ad)
      rat = [x if a in r.arg else i for a, (i, x) in enumerate(zip(idx, ridx))]
      inner = kb.value(r.src[0], rat)
      if rloops and _strides_a_line(inner, rloops[-1]):   # a column's sums: summed across columns, then u alone
        del self.epilogue[u]
        self._new(r)
        self.kernel_for(r)
        self.kernel_for(u)
        return
      kb.reduced[r] = acc.cast(r.dtype)
      at = [e if a in r.arg else i for a, (i, e) in enumerate(zip(idx, eidx))]
      out, here = kb.buf(n), kb.ix(_ravel(at, u.shape))
      value, kept = kb.value(u, at, own=True), ()
      # the epilogue recomputes the reduced values (softmax: exp(x - max)): store them in the output as they are
      # summed and read them back instead
      again = substitute([inner], {a.var: b.var for a, b in zip(rloops, eloops)})[0]
      if inner.dtype is u.dtype and inner.op not in (Ops.GATHER, Ops.CONST) and again in set(toposort([value])):
        kept = (Store(out, kb.ix(_ravel(rat, u.shape)), inner),)
        value = substitute([value], {again: out.gather(here.reshape((1,)))})[0]
      self._emit(name, kb, loops, [Store(out, here, value)], Reduce(r.op, acc, tuple(rloops), inner.cast(ad), kept),
                 epilogue=tuple(eloops))
    elif _stacked(u):   # one store per part, each iteration computing the parts' shared work once
      a = u.arg
      loops, idx = self._loops(u.shape[:a] + (1,) + u.shape[a + 1:])
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops})
      at = lambda j: _ravel([*idx[:a], _i(j), *idx[a + 1:]], u.shape)
      self._emit(name, kb, loops, [Store(kb.buf(n), kb.ix(at(j)), kb.value(s, idx)) for j, s in enumerate(u.src)])
    else:
      loops, idx = self._loops(u.shape)
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops})
      self._emit(name, kb, loops, [Store(kb.buf(n), kb.ix(_ravel(idx, u.shape)), kb.value(u, idx, own=True))])

  def control(self, h: UOp):
    """A COND, SCAN or WHILE as a Control item over sub-programs scheduled into this schedule's buffers; a CALLBACK
    as one with no sub-program, its arg the HostCall and the operands' shapes; a LINALG as a CALLBACK into LAPACK
    (devices/host_linalg.py)."""
    def sub(g: Graph) -> Program:
      with record.quiet(): return _Scheduler(prepare(g), self.buffers, fresh_outputs=True).program()
    op = h.op
    if op is Ops.LINALG:
      avals = tuple(multi_avals(op, h.src, h.arg))
      call = HostCall(lambda vals, a=h.arg, av=avals: host_linalg.run(*a, vals, av), avals, f"linalg {h.arg[0]}",
                      borrows=True)
      op, bodies, arg = Ops.CALLBACK, (), (call, tuple(s.shape for s in h.src))
    elif h.op is Ops.CALLBACK: bodies, arg = (), (h.arg, tuple(s.shape for s in h.src))
    elif h.op is Ops.COND: bodies, arg = tuple(sub(g) for g in h.arg), ()
    elif h.op is Ops.SCAN: bodies, arg = (sub(h.arg[0]),), h.arg[1:]
    else: bodies, arg = (sub(h.arg[0]), sub(h.arg[1])), (h.arg[2],)
    operands = tuple(self.bufnum[s] for s in h.src)
    self.kernels.append(Control(f"c{len(self.kernels)}_{h.op.name.lower()}", op, operands, self.results[h], bodies, arg))
    self.calls.append(operands + self.results[h])

  def program(self) -> Program:
    for u in self.order: self.control(u) if u.op in CONTROL_FLOW else self.kernel_for(u)
    outputs, own = [], set(self.inputs) | {n for n, b in enumerate(self.buffers) if b.data is not None}
    for o in self.outs:
      if o not in self.bufnum: self._const_output(o)
      n = self.bufnum[o]
      if self.fresh and n in own: n = self._copy(o)
      outputs.append((n, o.shape))
    kernels, calls = merge_rows(*merge_elementwise(self.kernels, self.calls))
    if record.on() and not self.fresh: self._record(kernels, calls)
    return Program(kernels, calls, self.buffers, self.inputs, outputs)

  def _record(self, kernels: list, calls: list) -> None:
    """VIZ's schedule step: each node with the kernel that stores it, or (computed where it is read) of its first
    reader's."""
    writer = {n: k.name for k, nums in zip(kernels, calls)
              for n in (_written(k, nums) if isinstance(k, Kernel) else k.results)}
    owner = {u: writer[n] for u, n in self.bufnum.items() if n in writer}
    for u in reversed(toposort(self.outs)):
      if u in owner or u.op in (Ops.PARAM, Ops.BUFFER): continue
      reader = next((v for v in self.users.get(u, ()) if v in owner), None)
      if reader is not None: owner[u] = owner[reader]
    record.step(f"schedule: {len(kernels)} kernels", self.outs, [u for u in self.bufnum if u.op is Ops.PARAM], owner)

  def _copy(self, o: UOp) -> int:
    n = self._spec(o.size, o.dtype)
    if o.size:
      loops, idx = self._loops(o.shape)
      kb = _KernelBuilder(self, {l.var: l.extent for l in loops})
      self._emit(f"k{len(self.kernels)}_copy", kb, loops, [Store(kb.buf(n), kb.ix(_ravel(idx, o.shape)), kb.value(o, idx))])
    return n

  def _const_output(self, o: UOp):
    self._new(o)
    self.kernel_for(o)


def _stacked(u: UOp) -> bool:
  """A concatenation of a few parts one long along its axis (a complex value's packed parts), which a kernel
  computes as one store per part, rather than a select between the parts at every element."""
  return u.op is Ops.CONCAT and len(u.src) <= STACK_MAX and all(s.shape[u.arg] == 1 for s in u.src)


# ---- after scheduling: elementwise kernels over one shape run as one (an optimizer's updates of one parameter) ----

MERGE_MAX = 8   # stores in one merged kernel at most
JOIN_REDUCE_POINTS = 4096   # outer points of a reduction that elementwise work may join (a row's statistics)


def _plain(k, reduce_ok: bool = False) -> bool:
  """An elementwise kernel (or with reduce_ok, also a reduction's over few points: the renderer's register blocks
  store point by point, unvectorised) over parallel loops, or none (scalar work: a step count's corrections, a
  loss's negation), with plain stores."""
  if not isinstance(k, Kernel) or k.epilogue or k.phases or not k.parallel: return False
  if k.reduce is not None and not (reduce_ok and math.prod(l.extent for l in k.loops) <= JOIN_REDUCE_POINTS):
    return False
  return all(s.mode is None and s.valid is None for s in k.stores)


def _written(k: Kernel, nums) -> set[int]:
  stored = {s.buf for p in k.steps() for s in p.stores}
  return {n for p, n in zip(k.bufs, nums) if p in stored}


def _in_terms_of(g: Kernel, gn, k: Kernel, kn, n: int) -> dict | None:
  """The substitution putting k's first n loops and its buffers in g's terms, when k writes nothing g uses."""
  if [l.extent for l in g.loops[:n]] != [l.extent for l in k.loops[:n]] or _written(k, kn) & set(gn): return None
  sub = {kl.var: gl.var for kl, gl in zip(k.loops[:n], g.loops)}
  gparam = dict(zip(gn, g.bufs))
  sub.update({p: gparam[n] for p, n in zip(k.bufs, kn) if n in gparam})
  return sub


def _buffers(g: Kernel, gn, k: Kernel, kn) -> tuple[tuple, tuple]:
  """The buffer parameters and numbers of g and k together, in buffer order."""
  nums = dict(zip(gn, g.bufs)) | {n: p for p, n in zip(k.bufs, kn) if n not in gn}
  order = sorted(nums)
  return tuple(nums[n] for n in order), tuple(order)


def _join_elementwise(g: Kernel, gn, k: Kernel, kn) -> tuple[Kernel, tuple] | None:
  """g with k's stores after its own in each iteration, when k can run there: the same loops, k reading what g
  writes only at the index g writes it, and k writing nothing g uses."""
  if not _plain(g, reduce_ok=True) or len(g.loops) != len(k.loops) or len(g.stores) + len(k.stores) > MERGE_MAX:
    return None
  if (sub := _in_terms_of(g, gn, k, kn, len(k.loops))) is None: return None
  at = {s.buf: s.index for s in g.stores}
  stores = [_substituted_store(s, sub) for s in k.stores]
  for s in stores:
    for u in toposort([s.value]):
      if u.op is Ops.GATHER and u.src[0] in at and u.src[1].src[0] is not at[u.src[0]]: return None
  bufs, nums = _buffers(g, gn, k, kn)
  return Kernel(g.name, bufs, g.loops, (*g.stores, *stores), g.reduce), nums


def _merge(kernels: list, calls: list, movable, join) -> tuple[list, list]:
  """Each kernel that is `movable` joined to the nearest earlier one that `join` accepts (giving the two as one),
  moved up past the kernels between: none of them writing what it reads, or using what it writes. A packing copy
  joins only the kernel just before it: moved up to the forward pass, a backward contraction's panel was cold by the
  time it was read, and the forward pack it joined wrote three panels where its own contraction read one (the GPT's
  attention contractions: 131 -> 145 GFLOPS at the slowest)."""
  out_k, out_c = [], []
  for k, kn in zip(kernels, calls):
    joined = False
    if movable(k):
      writes = _written(k, kn)
      reads = set(kn) - writes
      for j in range(len(out_k) - 1, max(len(out_k) - 2, -1) if k.packing else -1, -1):
        g, gn = out_k[j], out_c[j]
        if not isinstance(g, Kernel): break
        if not set(k.bufs).isdisjoint(g.bufs): k = _renewed(k)
        if (both := join(g, gn, k, kn)) is not None:
          out_k[j], out_c[j] = both
          joined = True
          break
        if _written(g, gn) & reads or set(gn) & writes: break
    if not joined:
      out_k.append(k)
      out_c.append(kn)
  return out_k, out_c


# the kernels of a region of the graph whose structure an earlier one had (an alike layer's) are that one's on its own
# buffers (_region, _Scheduler.kernel_for): the 12-layer GPT step's 1030 regions scheduled in 0.73 s, not 1.2; False
# schedules each afresh
REUSE_ALIKE = True


def _region(u: UOp, bufnum: dict, buffers: list, tail: dict, epilogue: dict) -> tuple | None:
  """(the structure of what u's kernel computes, the buffers it reads and writes): its nodes down to the stored ones
  it loads, in post-order, each stored one as the number of its buffer by first appearance (u's first) with its
  shape, dtype and buffer size; and whether u is a reduction's tail or an epilogue, and of which node. Alike layers
  of a network give regions of one structure. None for a node of no elements."""
  if u.size == 0: return None
  nums, ids, nodes, stack = {bufnum[u]: 0}, {}, [], [(u, False)]
  while stack:
    v, ready = stack.pop()
    if v in ids: continue
    stored = v is not u and v in bufnum
    if not ready and not stored:
      stack.append((v, True))
      stack.extend((s, False) for s in reversed(v.src) if s not in ids)
      continue
    if stored:
      n = bufnum[v]
      nodes.append((nums.setdefault(n, len(nums)), v.shape, v.dtype, buffers[n].size))
    else:
      nodes.append((v.op, v.dtype, v.shape, key_arg(v.op, v.arg), tuple(ids[s] for s in v.src)))
    ids[v] = len(nodes) - 1
  how = (buffers[bufnum[u]].size, ids.get(tail[u], -1) if u in tail else None,
         ids.get(epilogue[u], -1) if u in epilogue else None)
  return (tuple(nodes), how), list(nums)


def _renewed(k: Kernel) -> Kernel:
  """k with parameter nodes of its own for its buffers: a kernel joined to another (_merge) that holds the same
  nodes for other buffers (a kernel scheduled again for an alike region)."""
  roots: list[UOp] = []

  def collect(x):
    if isinstance(x, UOp): roots.append(x)
    elif isinstance(x, tuple): [collect(y) for y in x]
    elif dataclasses.is_dataclass(x): [collect(getattr(x, f.name)) for f in dataclasses.fields(x)]
  collect(k)
  new = dict(zip(roots, substitute(roots, {p: UOp.param(p.arg[1], p.dtype) for p in k.bufs})))

  def build(x):
    if isinstance(x, UOp): return new[x]
    if isinstance(x, tuple): return tuple(build(y) for y in x)
    if dataclasses.is_dataclass(x): return dataclasses.replace(x, **{f.name: build(getattr(x, f.name))
                                                                     for f in dataclasses.fields(x)})
    return x
  return build(k)


def merge_elementwise(kernels: list, calls: list) -> tuple[list, list]:
  """Each plain elementwise kernel joined to an earlier one over the same loops (elementwise, or a reduction's outer
  loops) that it can run beside, its stores after that kernel's in each iteration. An optimizer's moments and
  parameter of one shape are then one pass, and a row's statistics computed from its sums are stored with them."""
  return _merge(kernels, calls, _plain, _join_elementwise)


# ---- and kernels over the same rows run as phases of one (a layer norm's mean, variance and output) ----

PHASES_MAX = 6   # phases of one kernel at most


def _row_kernel(k) -> bool:
  """A kernel that can run as phases under its outer loops: parallel, plain stores, none of the renderer's register
  blocks or unrolled phase loops (those need the kernel's loops as they are: an interleave run as another kernel's
  phase picked among its parts at every element, unvectorised), and no actions chosen yet."""
  return isinstance(k, Kernel) and k.parallel and bool(k.loops) and not k.opts and not interchanged(k) and \
    not dot_blocked(k) and all(s.mode is None and s.valid is None for p in k.steps() for s in p.stores) and \
    phase_loops(k) is None


def _phases(k: Kernel, n: int) -> tuple[Phase, ...] | None:
  """k's steps as phases under its first n loops: a plain kernel's loops past n become its epilogue."""
  if len(k.loops) > n:
    return None if k.reduce is not None or k.epilogue or k.phases else (Phase(None, k.loops[n:], k.stores),)
  return tuple(Phase(p.reduce, p.epilogue, p.stores) for p in k.steps())


def _reads_in_step(p: Phase) -> list[tuple[UOp, tuple]]:
  """(node, the step's loops in scope there) for the reduction's value and stores, and for the step's stores."""
  out = []
  if p.reduce is not None:
    out += [(p.reduce.value, p.reduce.loops)]
    out += [(u, p.reduce.loops) for s in p.reduce.stores for u in (s.index, s.value)]
  return out + [(u, p.epilogue) for s in p.stores for u in (s.index, s.value)]


def _written_at(phases) -> dict[UOp, list[tuple[UOp, tuple]]]:
  """For each buffer the phases store to: (index, the step's loops in scope there) of each store."""
  out: dict = {}
  for p in phases:
    for s in (p.reduce.stores if p.reduce else ()): out.setdefault(s.buf, []).append((s.index, p.reduce.loops))
    for s in p.stores: out.setdefault(s.buf, []).append((s.index, p.epilogue))
  return out


def _join_rows(g: Kernel, gn, k: Kernel, kn) -> tuple[Kernel, tuple] | None:
  """g and k as one kernel over their common outer loops, k's steps after g's, when each of k's loads of what g
  writes reads an element g wrote at the same outer point: at g's index, or at it with k's loops there in place of
  g's loops of the same extents (a softmax's sum reading the exp its previous phase stored over the row)."""
  if not _row_kernel(g) or (not (g.reduce or g.epilogue or g.phases) and not (k.reduce or k.epilogue)): return None
  n = min(len(g.loops), len(k.loops))
  gp, sub = _phases(g, n), _in_terms_of(g, gn, k, kn, n)
  kp = _phases(k, n) if gp is not None and sub is not None else None
  if kp is None or len(gp) + len(kp) > PHASES_MAX: return None
  kp = tuple(_substituted(p, sub) for p in kp)
  written = _written_at(gp)
  for p in kp:
    for root, here in _reads_in_step(p):
      for u in toposort([root]):
        if u.op is Ops.GATHER and u.src[0] in written and not _same_element(u.src[1].src[0], here, written[u.src[0]]):
          return None
  bufs, nums = _buffers(g, gn, k, kn)
  *earlier, last = (*gp, *kp)
  return Kernel(g.name, bufs, g.loops[:n], last.stores, last.reduce, epilogue=last.epilogue,
                phases=tuple(earlier)), nums


def _same_element(index: UOp, here: tuple, stores: list[tuple[UOp, tuple]]) -> bool:
  for at, there in stores:
    if index is at: return True
    if [l.extent for l in here] == [l.extent for l in there] and here and \
       substitute([index], {a.var: b.var for a, b in zip(here, there)})[0] is at: return True
  return False


def _substituted_store(s: Store, sub: dict) -> Store:
  return Store(sub.get(s.buf, s.buf), *substitute([s.index, s.value], sub), s.mode, s.valid)


def _substituted(p: Phase, sub: dict) -> Phase:
  r = p.reduce
  if r is not None:
    r = Reduce(r.op, r.acc, r.loops, substitute([r.value], sub)[0], tuple(_substituted_store(s, sub) for s in r.stores))
  return Phase(r, p.epilogue, tuple(_substituted_store(s, sub) for s in p.stores))


def merge_rows(kernels: list, calls: list) -> tuple[list, list]:
  """Kernels over the same outer loops (rows) joined as phases of one, each row's phases run in order while the row
  is in cache: a layer norm's mean, variance and normalised output, a softmax's maximum, exponentials, sum and
  quotients."""
  return _merge(kernels, calls, _row_kernel, _join_rows)


# LINALG kinds whose factors a parameter turns off: (the parameter, the results it computes)
OPTIONAL_FACTORS = {"eigh": ("vectors", (0,)), "svd": ("compute_uv", (1, 2)), "qr": ("q", (0,))}


def unread_outputs_dropped(outs: list[UOp]) -> list[UOp]:
  """outs with each SCAN that stacks outputs nothing reads remade without them, so that its body no longer computes
  them (the backward scan of grad(loss)(params, xs) stacks the cotangents of xs, which loss's gradient drops), and
  each LINALG whose optional factors nothing reads remade without them (eigvalsh's eigenvectors: LAPACK then
  computes the eigenvalues alone)."""
  read: dict[UOp, set[int]] = {}
  for u in toposort(outs):
    if u.op is Ops.PROJ and u.src[0].op in (Ops.SCAN, Ops.LINALG): read.setdefault(u.src[0], set()).add(u.arg)
  swap = {}
  for u, used in read.items():
    if u.op is Ops.SCAN:
      body, n_consts, n_carry, length, reverse = u.arg
      keep = [i for i in range(len(body.outputs)) if i < n_carry or i in used]
      if len(keep) == len(body.outputs): continue
      new = UOp(Ops.SCAN, u.dtype, u.src, (Graph(body.inputs, tuple(body.outputs[i] for i in keep)), *u.arg[1:]))
    else:
      kind, params = u.arg
      name, factors = OPTIONAL_FACTORS.get(kind, (None, ()))
      if not factors or not dict(params).get(name, True) or used & set(factors): continue
      keep = [i for i in range(len(multi_avals(u.op, u.src, u.arg))) if i not in factors]
      new = UOp(Ops.LINALG, u.dtype, u.src, (kind, tuple(sorted({**dict(params), name: False}.items()))))
    swap |= {u.proj(i): new.proj(j) for j, i in enumerate(keep) if i in used}
  return substitute(outs, swap) if swap else outs


def _summed_across(b: UOp, users: dict) -> bool:
  """Whether a product read from b through views only is summed (a contraction's operand)."""
  seen, todo = set(), [b]
  while todo:
    u = todo.pop()
    for v in users.get(u, ()):
      if v in seen: continue
      seen.add(v)
      if v.op in (Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE): todo.append(v)
      elif v.op is Ops.MUL and any(r.op is Ops.REDUCE_SUM for r in users.get(v, ())): return True
  return False


def _barriers_padded(outs: tuple) -> tuple:
  """outs with each optimization barrier (an im2col's windows) whose rows alias (_aliasing), of more rows than those
  sets' lines hold, that a contraction reads, stored with its rows PAD_BYTES longer and read through a slice: the
  contraction reads it in place, where it copied it padded (the CNN step's conv2: a 4 MB copy of 380 us less)."""
  users = _readers(toposort(list(outs)))
  found = {}
  for b in users:
    if b.op is not Ops.OPTIMIZATION_BARRIER or any(b is o for o in outs) or b.ndim < 2 or not b.dtype.is_float: continue
    if not _aliasing(b.shape[-1] * b.dtype.itemsize) or b.shape[-2] <= ALIASED_SETS * 8: continue
    if not _summed_across(b, users): continue
    # one more line as one more row of lines: the copy's loops stay those of the rows (a convolution's positions,
    # 16 x 16), where a longer last loop was cut in two pieces with a division of its variable in the first
    *lead, n = b.shape
    line = PAD_BYTES // b.dtype.itemsize
    lines = b.src[0].reshape((*lead, n // line, line)).pad([(0, 0)] * len(lead) + [(0, 1), (0, 0)])
    wide = UOp(Ops.OPTIMIZATION_BARRIER, b.dtype, (lines,)).reshape((*lead, n + line))
    found[b] = wide.slice([(0, k, 1) for k in b.shape])
  return tuple(substitute(list(outs), found)) if found else outs


def prepare(graph: Graph) -> Graph:
  """graph as the scheduler takes it: calls inlined, stop_gradient gone, repeated values reduced without copies, the
  outputs of scans and factors of decompositions that nothing reads dropped, sums of transposes in the order they are
  read, and stored windows a contraction reads with rows that spread over the cache's sets (_barriers_padded)."""
  outs = unread_outputs_dropped(graph_rewrite_many(list(graph.outputs), INLINE + FOLD))
  record.step("lower: calls inlined, folded", outs, graph.inputs)
  g = Graph(graph.inputs, tuple(outs), graph.in_tree, graph.out_tree, graph.in_weak, graph.out_weak)
  try:
    split = split_complex(g)   # g itself when it holds no complex value
  except ComplexUnsupported as e:
    raise Unsupported(str(e)) from None
  if split is not g:
    graph, outs = split, graph_rewrite_many(list(split.outputs), FOLD)
    record.step("lower: complex values as pairs of reals", outs, graph.inputs)
  # top-down: a rule sees the sums below it as they were counted, not remade by rewrites under them
  outs = tuple(graph_rewrite_many(outs, TRANSPOSED_SUMS, _uses(outs), bottom_up=False))
  record.step("lower: sums of transposes rewritten", outs, graph.inputs)
  if (padded := _barriers_padded(outs)) is not outs:
    outs = padded
    record.step("lower: contractions' stored operands with longer rows", outs, graph.inputs)
  return Graph(graph.inputs, outs, graph.in_tree, graph.out_tree, graph.in_weak, graph.out_weak)


def schedule(graph: Graph, prepared: bool = False) -> Program:
  """The kernels (and control-flow items) that compute graph's outputs from its inputs (`prepared`: graph came from
  prepare already)."""
  return _Scheduler(graph if prepared else prepare(graph)).program()
