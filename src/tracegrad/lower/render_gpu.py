"""Kernel IR to GPU source: one kernel function per Kernel, in OpenCL C or CUDA C, which differ only in the small
table TARGETS (thread indices, barriers, address spaces, qualifiers and the prelude's head). Expressions, loads,
stores, reductions and the helpers (half types, math) are render_c's, so every target computes the same values.

Each point of a parallel kernel's outer loops is one work item (global id = the points in row-major order); its
reduction and epilogue run in that item. A reduction with few outer points and many inner ones runs as a work-group
per outer point (`group`): each item folds a stride of the inner points, then the group combines its partial results
through local (shared) memory with barriers. A sequential kernel runs as one item. An item adds up a long float sum
in short blocks, each summed on its own, and adds their sums as render_c does. The host runs the Program's control flow
(devices/gpu.py) with the launch sizes `launches` gives.

The kernel's actions (lower/opt.py) change the mapping: `local` sizes the groups, `group` turns the work-group
reduction on or off, `upcast` and `upcast_rows` give an item a tile of points of the last two loops (the loop
variables substituted and simplified per point, so what points share is computed once, and aligned runs of
consecutive elements load and store as one vector), `grid` launches a 2-d grid, and `stage` has its groups copy
the rows and columns their items share into local memory, chunk by chunk. A kernel without actions gets
opt.gpu_default's: a register tile for a big matmul-like kernel.

>>> from tracegrad.ir import UOp, dtypes
>>> from tracegrad.lower.kernel import Kernel, Loop, Store
>>> i, x = UOp.param((), dtypes.int64), UOp.param((4,), dtypes.float32)
>>> src, _ = render_kernel(Kernel("neg", (x,), (Loop(i, 4),), (Store(x, i, -x.gather(i.reshape((1,)))),)), "opencl")
>>> print(src)
__kernel void neg(__global float *restrict b0) {
  const int64_t gid = (int64_t)get_global_id(0);
  if (gid >= 4) return;
  const int64_t i0 = gid;
  float v0 = b0[i0];
  float v1 = -v0;
  b0[i0] = v1;
}
"""
from __future__ import annotations

import math
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ..devices.base import Program
from ..ir import Ops, UOp, dtypes, substitute
from .kernel import Control, Kernel, Loop, Store
from . import render_mma
from .opt import gpu_default, grouped, stage_loads, stage_shape
from .render_c import CTYPE, HELPERS, LOAD, MEMTYPE, REDUCE_ALU, STORE, _Body, _emit_reduce, _emit_store, _loop, \
    _order, add_error, add_exactly, block_loop, c_name, combine, is_product, open_blocks, reduce_identity, \
    render_const, sum_plan
from .symbolic import _linear, simplify

_INTS = """typedef {i8} int8_t; typedef short int16_t; typedef int int32_t; typedef {i64} int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; typedef {u64} uint64_t;
"""

OPENCL_HEAD = """#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
""" + _INTS.format(i8="char", i64="long", u64="unsigned long") + r"""
#define TG_BITCAST(T, S, x) (((union { S s; T t; }){.s = (x)}).t)
#define TG_INLINE static inline
#define TG_CLZLL(x) ((int)clz((ulong)(x)))
#define TG_FMAF(a, b, c) fma(a, b, c)
#define TG_FMA(a, b, c) fma(a, b, c)
#define TG_FMAF_EXACT(a, b, c) fma(a, b, c)
#define TG_FMA_EXACT(a, b, c) fma(a, b, c)
#define sqrtf sqrt
#define floorf floor
#define fmodf fmod
#define powf pow
#define atan2f atan2
TG_INLINE uint32_t tg_fbits(float f) { return as_uint(f); }
TG_INLINE float tg_ffrom(uint32_t u) { return as_float(u); }
TG_INLINE uint64_t tg_dbits(double d) { return as_ulong(d); }
TG_INLINE double tg_dfrom(uint64_t u) { return as_double(u); }
"""

CUDA_HEAD = _INTS.format(i8="signed char", i64="long long", u64="unsigned long long") + r"""
#define _Bool bool
#define TG_INLINE static __device__ __forceinline__
template <class T, class S> TG_INLINE T tg_bitcast(S s) { T t; memcpy(&t, &s, sizeof t); return t; }
#define TG_BITCAST(T, S, x) tg_bitcast<T, S>(x)
#define TG_CLZLL(x) __clzll((long long)(x))
#define TG_FMAF(a, b, c) fmaf(a, b, c)
#define TG_FMA(a, b, c) fma(a, b, c)
#define TG_FMAF_EXACT(a, b, c) fmaf(a, b, c)
#define TG_FMA_EXACT(a, b, c) fma(a, b, c)
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
TG_INLINE uint32_t tg_fbits(float f) { return __float_as_uint(f); }
TG_INLINE float tg_ffrom(uint32_t u) { return __uint_as_float(u); }
TG_INLINE uint64_t tg_dbits(double d) { return (uint64_t)__double_as_longlong(d); }
TG_INLINE double tg_dfrom(uint64_t u) { return __longlong_as_double((long long)u); }
"""


@dataclass(frozen=True)
class Target:
  head: str
  kernel: str      # a kernel function's qualifiers and return type
  space: str       # a buffer parameter's address space
  restrict: str
  gid: tuple       # this item's global index along launch dimensions 0 and 1, the group's index, the item's in its group
  group: str       # (of a 1-d group; lid2: of a 2-d one, row-major)
  lid: str
  lid2: str
  local: str       # the qualifier of group-shared memory
  barrier: str
  vector: dict     # the vector type of each element type of memory, without its width
  vload: str       # a vector load: {t} type with width, {w} width, {p} pointer to its first element
  vstore: str      # a vector store of {v} (the components, comma-separated) at {p}


_VECTOR = {"float": "float", "double": "double", "int8_t": "char", "uint8_t": "uchar", "int16_t": "short",
           "uint16_t": "ushort", "int32_t": "int", "uint32_t": "uint", "int64_t": "long", "uint64_t": "ulong"}

TARGETS = {
  "opencl": Target(OPENCL_HEAD, "__kernel void", "__global ", "restrict",
                   ("(int64_t)get_global_id(0)", "(int64_t)get_global_id(1)"), "(int64_t)get_group_id(0)",
                   "(int64_t)get_local_id(0)", "(int64_t)(get_local_id(1) * get_local_size(0) + get_local_id(0))", "__local", "barrier(CLK_LOCAL_MEM_FENCE);", _VECTOR, "vload{w}(0, {p})",
                   "vstore{w}(({t})({v}), 0, {p});"),
  "cuda": Target(CUDA_HEAD, 'extern "C" __global__ void', "", "__restrict__",
                 ("((int64_t)blockIdx.x * blockDim.x + threadIdx.x)", "((int64_t)blockIdx.y * blockDim.y + threadIdx.y)"),
                 "(int64_t)blockIdx.x", "(int64_t)threadIdx.x", "(int64_t)(threadIdx.y * blockDim.x + threadIdx.x)", "__shared__", "__syncthreads();",
                 {**_VECTOR, "int64_t": "longlong", "uint64_t": "ulonglong"}, "*(const {t} *)({p})",
                 "*({t} *)({p}) = make_{t}({v});"),
}

LOCAL = 64            # work items of a group: a plain kernel's, and a grouped reduction's
SUM_BLOCK = 16        # steps of a long float sum an item adds in turn before it adds their sum exactly (numpy's pairwise
                      # sum adds 16 in turn)
PRODUCT_BLOCK = 128   # ... of a sum of products (a matmul's: fewer extra operations), or a staged one (a multiple of
                      # every stage chunk)
VECTOR_BYTES = 16     # the widest vector load or store
COMPONENTS = "xyzw"


class _GPUBody(_Body):
  """render_c's statements without its OpenMP pragmas, with vector loads of the buffers in `vector` (ones the
  kernel never stores to) and vector stores of a tile's results."""

  sum_block, sum_lanes = SUM_BLOCK, 0   # an item's blocks are short, and keep one partial sum

  def __init__(self, k: Kernel, target: Target):
    super().__init__(k)
    self.target, self.vector = target, frozenset()

  @contextmanager
  def block(self, header: str, pragma: str | None = None):
    with super().block(header): yield

  def _runs(self, items: dict, buf: UOp):
    """Aligned runs of consecutive indexes among items ({index: item}) of one vector buffer: (width, index of the
    first, the run's items); the index of each run's first item is a multiple of its width wherever the loop
    variables are."""
    groups: dict[frozenset, dict[int, object]] = {}
    for index, item in items.items():
      terms, c = _linear(index)
      groups.setdefault(frozenset(terms.items()), {})[c] = (index, item)
    for terms, by in groups.items():
      taken = set()
      for w in (4, 2):
        if w * buf.dtype.itemsize > VECTOR_BYTES or any(c % w for _, c in terms): continue
        for c in sorted(by):
          if c % w or any(c + i not in by or c + i in taken for i in range(w)): continue
          taken.update(range(c, c + w))
          yield w, by[c][0], [by[c + i][1] for i in range(w)]

  def _vector_type(self, buf: UOp, w: int) -> str:
    return f"{self.target.vector['uint8_t' if buf.dtype.is_bool else MEMTYPE[buf.dtype]]}{w}"

  def preload(self, roots) -> None:
    """Name each aligned run of loads below roots that read consecutive elements of a `vector` buffer as the
    components of one vector load."""
    loads: dict[UOp, dict[UOp, UOp]] = {}
    for u in _order(roots, self.names):
      if u.op is Ops.GATHER and u.src[0] in self.vector: loads.setdefault(u.src[0], {})[u.src[1].src[0]] = u
    for buf, items in loads.items():
      for w, first, run in self._runs(items, buf):
        idx = self.emit([first])[0]
        name, self.count, vt = f"v{self.count}", self.count + 1, self._vector_type(buf, w)
        self.line(f"const {vt} {name} = {self.target.vload.format(t=vt, w=w, p=f'{self.bufs[buf]} + {idx}')};")
        for i, g in enumerate(run):
          self.names[g] = f"{LOAD[buf.dtype]}({name}.{COMPONENTS[i]})" if buf.dtype in LOAD else f"{name}.{COMPONENTS[i]}"
          self.reads[g] = frozenset({buf})

  def store_all(self, stores: list[Store]) -> None:
    """The stores of a tile; when none of them reads a buffer they write or writes where another does, aligned runs
    of plain stores to consecutive elements go as one vector store each."""
    roots = [u for s in stores for u in (s.index, s.value) + ((s.valid,) if s.valid is not None else ())]
    self.preload(roots)
    written, places = {s.buf for s in stores}, [(s.buf, s.index) for s in stores]
    if len(set(places)) < len(places) or any(u.op is Ops.GATHER and u.src[0] in written for r in roots for u in r.toposort()):
      for s in stores: _emit_store(self, s)
      return
    plain: dict[UOp, dict[UOp, Store]] = {}
    for s in stores:
      if s.mode is None and s.valid is None: plain.setdefault(s.buf, {})[s.index] = s
    done = set()
    for buf, items in plain.items():
      for w, first, run in self._runs(items, buf):
        idx, *vals = self.emit([first] + [s.value for s in run])
        if buf.dtype in STORE: vals = [f"{STORE[buf.dtype]}({v})" for v in vals]
        self.line(self.target.vstore.format(t=self._vector_type(buf, w), w=w, v=", ".join(vals),
                                            p=f"{self.bufs[buf]} + {idx}"))
        done.update(run)
    for s in stores:
      if s not in done: _emit_store(self, s)


def _split(b: _Body, flat: str, loops, prefix: str) -> None:
  """Name each loop's variable from one row-major index over them."""
  stride = math.prod(l.extent for l in loops)
  for j, l in enumerate(loops):
    stride //= l.extent
    e = flat if stride == 1 else f"{flat} / {stride}"
    if j: e = f"({e}) % {l.extent}" if stride > 1 else f"{e} % {l.extent}"
    b.line(f"const int64_t {prefix}{j} = {e};")
    b.names[l.var] = f"{prefix}{j}"


def render_kernel(k: Kernel, target: str, name: str | None = None, restrict: bool = True,
                  tf32: frozenset = frozenset()) -> tuple[str, tuple]:
  """The kernel function of k for `target`, and its launch: (global items, items per group); `tf32` holds k's
  buffers that hold TensorFloat-32 values when it runs (render_mma.tf32_buffers)."""
  t = TARGETS[target]
  opts = dict(k.opts) if k.opts else gpu_default(k)
  b = _GPUBody(k, t)
  stored = {s.buf for p in k.steps() for s in (*p.stores, *(p.reduce.stores if p.reduce else ()))}
  params = ", ".join(f"{t.space}{'' if p in stored else 'const '}{'uint8_t' if p.dtype.is_bool else MEMTYPE[p.dtype]} "
                     f"*{t.restrict + ' ' if restrict else ''}{n}" for p, n in b.bufs.items())
  local = opts.get("local", LOCAL)
  if k.reduce is not None and (is_product(k.reduce.value) or opts.get("stage")): b.sum_block = PRODUCT_BLOCK
  if target == "cuda" and (mma := render_mma.plan(k, tf32)) is not None:   # tensor cores
    launch = render_mma.launch(k)
    render_mma.emit(b, k, mma)
  elif grouped(k, opts):
    launch = ((math.prod(l.extent for l in k.loops) * local,), (local,))
    _grouped_body(b, k, t, local)
  elif k.parallel and k.loops:
    b.vector = frozenset(k.bufs) - stored
    launch = _items(b, k, t, opts)
  else:   # one item runs it all
    launch = ((1,), (1,))
    with ExitStack() as loops:
      for j, l in enumerate(k.loops):
        b.names[l.var] = f"i{j}"
        loops.enter_context(b.block(_loop(f"i{j}", l.extent)))
      _emit_point(b, k)
  src = f"{t.kernel} {name or c_name(k.name)}({params}) {{\n" + "".join(l + "\n" for l in b.lines) + "}"
  return src, launch


def _emit_point(b: _Body, k: Kernel) -> None:
  """The phases, then the reduction, epilogue and stores, of one point of k's outer loops."""
  for p in k.phase_kernels():
    with b.block(""): _emit_point(b, p)   # its accumulator and values stay inside
  with ExitStack() as loops:
    if k.reduce is not None: _emit_reduce(b, k)
    for j, l in enumerate(k.epilogue):
      b.names[l.var] = f"e{j}"
      loops.enter_context(b.block(_loop(f"e{j}", l.extent)))
    for s in k.stores: _emit_store(b, s)


def _items(b: _GPUBody, k: Kernel, t: Target, opts: dict) -> tuple:
  """Name the outer loop variables of this item (a tile of upcast points), emit its work, and give the launch."""
  local, g = opts.get("local", LOCAL), opts.get("grid", 0)
  ups = {len(k.loops) - 1: opts.get("upcast", 1), len(k.loops) - 2: opts.get("upcast_rows", 1)}
  loops = [Loop(UOp.param((), dtypes.int64), l.extent // ups[j]) if ups.get(j, 1) > 1 else l
           for j, l in enumerate(k.loops)]
  if g:
    rest, ly = math.prod(l.extent for l in loops[:-1]), local // g
    b.line(f"const int64_t gx = {t.gid[0]}, gy = {t.gid[1]};")
    b.line(f"if (gx >= {loops[-1].extent} || gy >= {rest}) return;")
    _split(b, "gy", loops[:-1], "i")
    b.line(f"const int64_t i{len(loops) - 1} = gx;")
    b.names[loops[-1].var] = f"i{len(loops) - 1}"
    launch = ((-(-loops[-1].extent // g) * g, -(-rest // ly) * ly), (g, ly))
  else:
    points = math.prod(l.extent for l in loops)
    b.line(f"const int64_t gid = {t.gid[0]};")
    b.line(f"if (gid >= {points}) return;")
    _split(b, "gid", loops, "i")
    launch = ((-(-points // local) * local,), (local,))
  stage = _Stage(b, k, t, opts, loops[-2].var, loops[-1].var) if opts.get("stage") else None
  if stage is None and all(l is m for l, m in zip(loops, k.loops)):
    _emit_point(b, k)
    return launch
  tile = [{}]
  for j, (l, m) in enumerate(zip(k.loops, loops)):
    if l is not m:
      tile = [{**p, l.var: m.var * UOp.const(dtypes.int64, ups[j]) + UOp.const(dtypes.int64, i)}
              for p in tile for i in range(ups[j])]
  _emit_tile(b, k, tile, {l.var: l.extent for l in loops}, stage)
  return launch


class _Stage:
  """A reduction whose last loop runs in chunks, the loads that a group shares (opt.stage_loads) copied into local
  arrays for each chunk by all its items together: `value` is the reduction's value reading them from there. The
  arrays are double-buffered: while the group computes on one half, each item holds its share of the next chunk in
  registers (loaded before the compute, stored to the other half after it), so one barrier per chunk suffices and
  the loads overlap the arithmetic."""

  def __init__(self, b: _GPUBody, k: Kernel, t: Target, opts: dict, rows: UOp, cols: UOp):
    r, i64 = k.reduce, dtypes.int64
    c = lambda v: UOp.const(i64, v)
    div = lambda x, n: x.alu(Ops.IDIV, c(n))
    mod = lambda x, n: x.alu(Ops.MOD, c(n))
    self.t, self.chunk, self.local = t, opts["stage"], opts.get("local", LOCAL)
    self.steps = r.loops[-1].extent
    g, ly = opts["grid"], self.local // opts["grid"]
    R, C, K = k.loops[-2].var, k.loops[-1].var, r.loops[-1].var
    self.kc, self.kk, self.kn, self.sel = (UOp.param((), i64) for _ in range(4))
    b.names[self.kc], b.names[self.kk], b.names[self.kn], b.names[self.sel] = "kc", "kk", "kn", "sel"
    row0 = (rows - mod(rows, ly)) * c(opts.get("upcast_rows", 1))   # the group's first row and column
    col0 = (cols - mod(cols, g)) * c(opts.get("upcast", 1))
    ranges = {rows: k.loops[-2].extent, cols: k.loops[-1].extent, self.kn: self.steps // self.chunk}
    b.line(f"const int64_t lid = {t.lid2};")
    self.copies, swap = [], {K: self.kc * c(self.chunk) + self.kk}
    for j, load in enumerate(stage_loads(k)):
      nr, nc = stage_shape(k, opts, load)
      arr, e = UOp.param((2 * nr * nc,), load.src[0].dtype), UOp.param((), i64)
      b.bufs[arr] = f"sh{j}"
      b.vector |= {arr}   # a tile's consecutive reads of it go as vectors too
      b.line(f"{t.local} {'uint8_t' if arr.dtype.is_bool else MEMTYPE[arr.dtype]} sh{j}[{2 * nr * nc}];")
      if R in load.src[1].src[0].toposort():
        at, here = {R: row0 + div(e, nc), K: self.kn * c(nc) + mod(e, nc)}, (R - row0) * c(nc) + self.kk
      else:
        at, here = {C: col0 + mod(e, nc), K: self.kn * c(nr) + div(e, nc)}, self.kk * c(nc) + (C - col0)
      index = simplify(substitute([load.src[1].src[0]], at)[0], {**ranges, e: nr * nc})
      self.copies.append((arr, e, index, load.src[0], nr * nc))
      swap[load] = arr.gather((here + self.sel * c(nr * nc)).reshape((1,)))
    self.value = substitute([r.value], swap)[0]

  def _each(self, b: _GPUBody, arr: UOp, e: UOp, size: int, body) -> None:
    """body(q) for each element e = lid + q * local of a chunk that is this item's, q counting them."""
    b.line("#pragma unroll")   # the registers of a chunk's share stay registers
    with b.block(f"for (int64_t q = 0; q < {-(-size // self.local)}; q++)"):
      b.line(f"const int64_t e = lid + q * {self.local};")
      b.names[e] = "e"
      with b.block(f"if (e < {size})"): body()

  def emit(self, b: _GPUBody, step, lo: str = "0", hi: str | None = None) -> None:
    """The chunks lo to hi: the first copied before the loop; in the loop, the next one's loads, the chunk's steps,
    the next one's stores into the other half, a barrier."""
    hi = hi or str(self.steps // self.chunk)
    with b.block(""):
      b.line(f"const int64_t kn = {lo};")
      for arr, e, index, buf, size in self.copies:
        self._each(b, arr, e, size, lambda: b.line(f"{b.bufs[arr]}[e] = {b.bufs[buf]}[{b.emit([index])[0]}];"))
    b.line(self.t.barrier)
    with b.block(f"for (int64_t kc = {lo}; kc < {hi}; kc++)"):
      b.line(f"const int64_t sel = (kc - ({lo})) & 1, kn = kc + 1;")
      held = [(f"pf{j}", MEMTYPE[arr.dtype] if not arr.dtype.is_bool else "uint8_t", -(-size // self.local))
              for j, (arr, _, _, _, size) in enumerate(self.copies)]
      for name, ctype, n in held: b.line(f"{ctype} {name}[{n}];")
      with b.block(f"if (kn < {hi})"):
        for (name, _, _), (arr, e, index, buf, size) in zip(held, self.copies):
          self._each(b, arr, e, size, lambda: b.line(f"{name}[q] = {b.bufs[buf]}[{b.emit([index])[0]}];"))
      with b.block(_loop("kk", self.chunk)): step()
      with b.block(f"if (kn < {hi})"):
        for (name, _, _), (arr, e, index, buf, size) in zip(held, self.copies):
          self._each(b, arr, e, size, lambda: b.line(f"{b.bufs[arr]}[(1 - sel) * {size} + e] = {name}[q];"))
      b.line(self.t.barrier)


def _emit_tile(b: _GPUBody, k: Kernel, tile: list[dict], ranges: dict, stage: _Stage | None = None) -> None:
  """The work of every point of `tile` (each a substitution of k's outer loop variables): one accumulator per
  point, their reduction steps emitted together (what the points share is computed once), then their stores."""
  r = k.reduce
  ranges = {**ranges, **{l.var: l.extent for l in (r.loops if r else ()) + k.epilogue}}
  if stage is not None: ranges.update({stage.kc: stage.steps // stage.chunk, stage.kk: stage.chunk, stage.sel: 2})

  def sub(u: UOp, m: dict) -> UOp:   # u at one point, its load indexes simplified (the rest is the compiler's)
    u = substitute([u], m)[0]
    if u.dtype is dtypes.int64 and not u.shape: return simplify(u, ranges)
    loads = [g for g in u.toposort() if g.op is Ops.GATHER]
    return substitute([u], {g.src[1]: simplify(g.src[1].src[0], ranges).reshape((1,)) for g in loads})[0]

  def sub_store(s: Store, m: dict) -> Store:
    return Store(s.buf, sub(s.index, m), sub(s.value, m), s.mode, None if s.valid is None else sub(s.valid, m))

  with ExitStack() as loops:
    if r is not None:
      ct, zero = CTYPE[r.acc.dtype], render_const(reduce_identity(r.op, r.acc.dtype), r.acc.dtype)
      accs = [UOp.param((), r.acc.dtype) for _ in tile]
      tile = [{**m, r.acc: a} for m, a in zip(tile, accs)]
      for j, a in enumerate(accs):
        b.line(f"{ct} acc{j} = {zero};")
        b.names[a] = f"acc{j}"
      value = r.value if stage is None else stage.value
      steps = [combine(REDUCE_ALU[r.op], a, sub(value, m)) for a, m in zip(accs, tile)]
      stores = [sub_store(s, m) for m in tile for s in r.stores]
      last, plan = len(r.loops) - 1, sum_plan(r, b.sum_block)

      def step():
        b.preload(steps)
        for a, v in zip(accs, b.emit(steps)): b.line(f"{b.names[a]} = {v};")
        for s in stores: _emit_store(b, s)

      def steps_of(j: int):   # the loops from j in, the last one (or the stage's chunks) running `step`
        with ExitStack() as inner:
          for i in range(j, last):
            inner.enter_context(b.block(block_loop(r, plan, i) if plan else _loop(f"r{i}", r.loops[i].extent)))
          if stage is not None:
            if plan and plan[0] == last: stage.emit(b, step, f"rb / {stage.chunk}", f"re / {stage.chunk}")
            else: stage.emit(b, step)
          elif r.loops:
            with b.block(block_loop(r, plan, last) if plan else _loop(f"r{last}", r.loops[last].extent)): step()
          else: step()

      for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
      if plan:   # a long float sum adds up blocks, each summed on its own, and carries the rounding error
        for i in range(len(accs)): b.line(f"{ct} comp{i} = {zero};")
        with ExitStack() as outer:
          open_blocks(b, r, plan, outer)
          for i, a in enumerate(accs):
            b.line(f"{ct} part{i} = {zero};")
            b.names[a] = f"part{i}"
          steps_of(plan[0])
          for i in range(len(accs)): b.line(add_exactly(f"acc{i}", f"comp{i}", f"part{i}", ct))
        for i in range(len(accs)): b.line(add_error(f"acc{i}", f"comp{i}"))
      else: steps_of(0)
      for i, a in enumerate(accs): b.names[a] = f"acc{i}"
    for j, l in enumerate(k.epilogue):
      b.names[l.var] = f"e{j}"
      loops.enter_context(b.block(_loop(f"e{j}", l.extent)))
    stores = [sub_store(s, m) for m in tile for s in k.stores]
    b.store_all(stores)


def _grouped_body(b: _Body, k: Kernel, t: Target, local: int) -> None:
  r = k.reduce
  ct = CTYPE[r.acc.dtype]
  steps = math.prod(l.extent for l in r.loops)
  b.line(f"const int64_t grp = {t.group}, lid = {t.lid};")
  _split(b, "grp", k.loops, "i")
  b.line(f"{t.local} {ct} part[{local}];")
  b.line(f"{ct} acc = {render_const(reduce_identity(r.op, r.acc.dtype), r.acc.dtype)};")
  b.names[r.acc] = "acc"
  span = b.sum_block * local
  if r.op is not Ops.REDUCE_SUM or not r.acc.dtype.is_float or steps <= span:
    with b.block(f"for (int64_t rr = lid; rr < {steps}; rr += {local})"):
      _split(b, "rr", r.loops, "r")
      b.line(f"acc = {b.emit([combine(REDUCE_ALU[r.op], r.acc, r.value)])[0]};")
  else:   # a long float sum: the item adds up blocks of its steps, each summed on its own, carrying the rounding error
    zero = render_const(0.0, r.acc.dtype)
    b.line(f"{ct} comp = {zero};")
    with b.block(f"for (int64_t rb = lid; rb < {steps}; rb += {span})"):
      b.line(f"const int64_t re = rb + {span} < {steps} ? rb + {span} : {steps};")
      b.line(f"{ct} blk = {zero};")
      b.names[r.acc] = "blk"
      with b.block(f"for (int64_t rr = rb; rr < re; rr += {local})"):
        _split(b, "rr", r.loops, "r")
        b.line(f"blk = {b.emit([combine(REDUCE_ALU[r.op], r.acc, r.value)])[0]};")
      b.line(add_exactly("acc", "comp", "blk", ct))
    b.names[r.acc] = "acc"
    b.line(add_error("acc", "comp"))
  b.line("part[lid] = acc;")
  b.line(t.barrier)
  mine, other = UOp.param((), r.acc.dtype), UOp.param((), r.acc.dtype)
  with b.block(f"for (int64_t s = {local // 2}; s > 0; s >>= 1)"):
    with b.block("if (lid < s)"):
      b.names[mine], b.names[other] = "part[lid]", "part[lid + s]"
      b.line(f"part[lid] = {b.emit([combine(REDUCE_ALU[r.op], mine, other)])[0]};")
    b.line(t.barrier)
  with b.block("if (lid == 0)"):
    b.line("acc = part[0];")
    for s in k.stores: _emit_store(b, s)


@dataclass
class GPUSource:
  """A Program's kernels as one source, and each Kernel's function name and launch (global items, group items)."""
  source: str
  launches: dict     # Kernel -> (function name, (global, local))


def render_program(prog: Program, target: str) -> GPUSource:
  """Every kernel of prog (and of its control flow's sub-programs) in one source for `target`, after the prelude."""
  functions, launches, seen = [], {}, set()

  def walk(p: Program):
    for k, nums, tf32 in zip(p.kernels, p.calls, render_mma.tf32_buffers(p.kernels, p.calls)):
      if isinstance(k, Control):
        for body in k.bodies: walk(body)
        continue
      name = c_name(k.name)
      while name in seen: name = f"{name}_{len(seen)}"
      seen.add(name)
      src, launch = render_kernel(k, target, name, restrict=len(set(nums)) == len(nums), tf32=tf32)
      functions.append(src)
      launches[k] = (name, launch)

  walk(prog)
  return GPUSource("\n\n".join([prelude(target), *functions]) + "\n", launches)


def prelude(target: str) -> str:
  """What every source for `target` starts with: its head and the shared helpers."""
  return TARGETS[target].head + HELPERS
