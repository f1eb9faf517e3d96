"""Tensor cores for the CUDA target: a matmul-like kernel over float16 or bfloat16 operands with a float32 sum runs as
warp-wide `mma.sync.aligned.m16n8k16` instructions, one over TensorFloat-32 operands as `m16n8k8` ones (sm_80 and
newer; Hopper runs them too).

A kernel qualifies (`plan`) when its reduction is one float32 sum over one loop K of a product x * y, each a half
value widened (a half buffer's load, or a float32 value rounded to a half type: `astype` fused into the matmul) or
each a float32 value exact in TensorFloat-32 (rounded to it, as lax.dot.tf32 does where JAX's GPUs would use it; the
load of a buffer a kernel stored such values in), x reading along the rows and K, y along K and the columns, no other
outer loop but batch loops in front, and the rows, columns and K multiples of 64, 64 and 16. A group of four warps
computes a 64 x 64 block of outputs, each warp 32 x 32 of it as 2 x 4 tiles of 16 x 8; every 16 steps of K a thread
packs the halves it holds of each operand (or takes the TensorFloat-32 values' bits), as the instruction's fragments
lay them out (row-major A, column-major B), into 32-bit registers. The stores, with what the kernel computes from
each sum, run per accumulator at its row and column. A GPU older than sm_80 compiles the same kernel with each
accumulator summed by float32 multiply-adds instead, so the launch stays the same everywhere (and the sums equal
the tensor cores' up to the order of the additions: the operands are already exact in their type). Compiled for
sm_90a (a Hopper GPU with TRACEGRAD_WGMMA=1) a half kernel's group is one warpgroup issuing wgmma.mma_async, x from
registers and y staged through shared memory (`_emit_wgmma`).

>>> import numpy as np, tracegrad, tracegrad.numpy as tnp
>>> from tracegrad.lower.schedule import schedule
>>> f = lambda a, b: tnp.matmul(a.astype(tnp.bfloat16), b.astype(tnp.bfloat16), preferred_element_type=tnp.float32)
>>> k = schedule(tracegrad.make_graph(f)(np.ones((128, 64), np.float32), np.ones((64, 128), np.float32))).kernels[0]
>>> print(plan(k).half)
bfloat16
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import Ops, UOp, dtypes
from .kernel import Control, Kernel
from .render_c import HALF, STORE, _Body, _emit_store

WARPS, BLOCK, WARP_TILE = 4, 64, 32   # warps of a group (2 x 2), outputs per group side, per warp side
MAX_GRID = 65535   # groups along a launch's second and third dimensions
M_TILES, N_TILES = WARP_TILE // 16, WARP_TILE // 8   # a warp's 16 x 8 tiles down and across
WGMMA = {dtypes.float16: "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
         dtypes.bfloat16: "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"}
INSTRUCTION = {dtypes.float16: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
               dtypes.bfloat16: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
               dtypes.float32: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}   # TensorFloat-32 operands
TF32_MASK = 0xFFFFE000   # the bits a float32 keeps rounded to TensorFloat-32's 10 fraction bits


def tf32_exact(u: UOp, bufs: frozenset = frozenset()) -> bool:
  """Whether u is a float32 value exact in TensorFloat-32, so that a tensor core multiplies it exactly: rounded to it
  (lax.reduce_precision's form: NaN kept, else the bits rounded and masked to 10 fraction bits), a load of a buffer
  in `bufs`, a constant it holds exactly, or a choice between such values (a padded window's zeros)."""
  if u.dtype is not dtypes.float32: return False
  if u.op is Ops.CONST: return float(np.float32(u.arg).view(np.uint32) & ~np.uint32(TF32_MASK)) == 0
  if u.op is Ops.GATHER: return u.src[0] in bufs
  if u.op is not Ops.WHERE: return False
  if u.src[2].op is Ops.BITCAST and (m := u.src[2].src[0]).op is Ops.AND and \
     any(s.op is Ops.CONST and s.arg == TF32_MASK for s in m.src):
    return True
  return tf32_exact(u.src[1], bufs) and tf32_exact(u.src[2], bufs)


def tf32_buffers(kernels, calls) -> list[frozenset]:
  """For each kernel of a program (in order, with its buffer numbers), its buffers that hold TensorFloat-32 values
  when it runs: stored so by an earlier kernel, and not stored otherwise since."""
  exact, out = set(), []
  for k, nums in zip(kernels, calls):
    if isinstance(k, Control):   # what its bodies store is not followed
      out.append(frozenset())
      exact.difference_update(nums)
      continue
    bufs = k.bufs
    out.append(frozenset(b for b, n in zip(bufs, nums) if n in exact))
    for step in k.steps():
      for st in (*step.stores, *(step.reduce.stores if step.reduce else ())):
        n = nums[bufs.index(st.buf)]
        if st.mode is None and tf32_exact(st.value, out[-1]): exact.add(n)
        else: exact.discard(n)
  return out


@dataclass(frozen=True)
class Plan:
  x: UOp          # the row operand's half value (rows, K)
  y: UOp          # the column operand's half value (K, columns)
  half: object    # their dtype
  rows: UOp
  cols: UOp
  k: UOp
  steps: int


def _operand(s: UOp, tf32: frozenset) -> UOp | None:
  """The value a tensor core takes for a factor s of the product: a half value s widens, or s itself when it is
  exact in TensorFloat-32 (computed so, or a load of a buffer in `tf32`); None for anything else."""
  if s.op is Ops.CAST and s.src[0].dtype in HALF: return s.src[0]
  if tf32_exact(s, tf32): return s
  return None


def plan(k: Kernel, tf32: frozenset = frozenset()) -> Plan | None:
  """The tensor-core plan of k, or None when it does not qualify (see the module's docstring); `tf32` holds the
  kernel's buffers that hold TensorFloat-32 values (tf32_buffers)."""
  r = k.reduce
  if r is None or not k.parallel or k.phases or k.epilogue or r.stores or k.opts or len(k.loops) < 2: return None
  if r.op is not Ops.REDUCE_SUM or r.acc.dtype is not dtypes.float32 or len(r.loops) != 1: return None
  v = r.value
  if v.op is not Ops.MUL or v.dtype is not dtypes.float32: return None
  halves = [_operand(s, tf32) for s in v.src]
  if None in halves or halves[0].dtype is not halves[1].dtype: return None
  rows, cols, kv = k.loops[-2].var, k.loops[-1].var, r.loops[0].var
  batch = {l.var for l in k.loops[:-2]}
  uses = lambda u: {x for x in u.toposort() if x.op is Ops.PARAM and x.shape == ()}
  (x, ux), (y, uy) = ((h, uses(h)) for h in halves)
  if ux - batch != {rows, kv}: (x, ux), (y, uy) = (y, uy), (x, ux)
  if ux - batch != {rows, kv} or uy - batch != {kv, cols}: return None
  if any(u.op is Ops.GATHER and u.src[0] in {s.buf for s in k.stores} for h in (x, y) for u in h.toposort()): return None
  if k.loops[-2].extent % BLOCK or k.loops[-1].extent % BLOCK or r.loops[0].extent % 16: return None
  if k.loops[-2].extent // BLOCK > MAX_GRID or math.prod(l.extent for l in k.loops[:-2]) > MAX_GRID: return None
  if any(s.mode is not None for s in k.stores): return None
  return Plan(x, y, x.dtype, rows, cols, kv, r.loops[0].extent)


def launch(k: Kernel) -> tuple:
  """(global items, items per group) of the tensor-core kernel: a group per 64 x 64 block, per batch point."""
  batch = math.prod(l.extent for l in k.loops[:-2])
  return ((k.loops[-1].extent // BLOCK * 32 * WARPS, k.loops[-2].extent // BLOCK, batch), (32 * WARPS, 1, 1))


def emit(b: _Body, k: Kernel, p: Plan) -> None:
  """The kernel's body: fragments, instructions (or their float32 stand-in before sm_80), then the stores. Half
  operands compiled for sm_90a (TRACEGRAD_WGMMA=1 on a Hopper GPU) take Hopper's warpgroup instructions instead."""
  b.line("const int64_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;")
  stride = math.prod(l.extent for l in k.loops[:-2])
  for j, l in enumerate(k.loops[:-2]):   # batch loops from blockIdx.z, row-major
    stride //= l.extent
    b.line(f"const int64_t i{j} = ((int64_t)blockIdx.z / {stride}) % {l.extent};")
    b.names[l.var] = f"i{j}"
  if p.half not in WGMMA: return _emit_sync(b, k, p)
  b.line("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)")
  with b.block(""): _emit_wgmma(b, k, p)
  b.line("#else")
  with b.block(""): _emit_sync(b, k, p)
  b.line("#endif")


def _fragments(b: _Body, bits: str, dest: str, tile: str, tiles: int, regs: int, at: str, u: UOp, lo: dict,
               hi: dict) -> None:
  """dest[tile][q]: each register q of each tile, two halves of u (at the loop values `lo`, then `hi`, given the C
  declarations `at`) packed low first."""
  b.line("#pragma unroll")
  with b.block(f"for (int64_t {tile} = 0; {tile} < {tiles}; {tile}++)"):
    b.line("#pragma unroll")
    with b.block(f"for (int64_t q = 0; q < {regs}; q++)"):
      b.line(at)
      for half, where in (("lo", lo), ("hi", hi)):
        with b.block(""):
          for var, e in where.items(): b.names[var] = e
          b.line(f"{half} = {bits}({b.emit([u])[0]});")
      b.line(f"{dest}[{tile}][q] = lo | (hi << 16);")


def _emit_wgmma(b: _Body, k: Kernel, p: Plan) -> None:
  """Hopper's form: the group of four warps is one warpgroup computing its 64 x 64 block with one
  wgmma.mma_async.m64n64k16 per 16 steps of K. Each warp holds 16 rows of x in registers (the fragments of
  mma.sync's A); the 16 x 64 block of y goes through shared memory in the no-swizzle K-major layout of 8 x 8 core
  matrices (each 8 columns by 8 steps, 16 bytes a column), two along K 128 bytes apart (the descriptor's leading
  offset) and eight along the columns 256 bytes apart (its stride offset). Thread's accumulator 4j + q holds row
  16 warp + g (+ 8 for q >= 2), column 8j + 2t (+ 1 for odd q)."""
  r, bits = k.reduce, STORE[p.half]
  b.line(f"const int64_t row0 = (int64_t)blockIdx.y * {BLOCK} + warp * 16, col0 = (int64_t)blockIdx.x * {BLOCK};")
  b.line(f"__shared__ __align__(128) uint16_t tile[16 * {BLOCK}];")
  b.line("float d[32] = {};")
  b.line("uint32_t lo, hi, fa[1][4];")
  b.line("const uint64_t desc = ((uint64_t)(((uint32_t)__cvta_generic_to_shared(tile) & 0x3FFFF) >> 4)) | "
         "((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);")
  with b.block(f"for (int64_t kb = 0; kb < {p.steps}; kb += 16)"):
    with b.block(f"for (int64_t e = threadIdx.x; e < 16 * {BLOCK}; e += {32 * WARPS})"):
      b.line("const int64_t n = e >> 4, kk = e & 15, ky = kb + kk, col = col0 + n;")
      b.names[p.k], b.names[p.cols] = "ky", "col"
      b.line(f"tile[(n >> 3) * 128 + (kk >> 3) * 64 + (n & 7) * 8 + (kk & 7)] = {bits}({b.emit([p.y])[0]});")
    b.line("__syncthreads();")
    b.line('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    _fragments(b, bits, "fa", "mi", 1, 4, "const int64_t row = row0 + g + (q & 1) * 8, "
               "kx = kb + 2 * t + (q >> 1) * 8, kx1 = kx + 1;", p.x, {p.rows: "row", p.k: "kx"},
               {p.rows: "row", p.k: "kx1"})
    b.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    regs = ", ".join(f"%{i}" for i in range(32))
    b.line(f'asm volatile("{{.reg .pred p; setp.ne.b32 p, %37, 0; {WGMMA[p.half]} {{{regs}}}, '
           f'{{%32, %33, %34, %35}}, %36, p, 1, 1, 0;}}"')
    b.line("  : " + ", ".join(f'"+f"(d[{i}])' for i in range(32)))
    b.line('  : "r"(fa[0][0]), "r"(fa[0][1]), "r"(fa[0][2]), "r"(fa[0][3]), "l"(desc), "r"(1) : "memory");')
    b.line('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
    b.line('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
    b.line("__syncthreads();")
  b.line("#pragma unroll")
  with b.block("for (int64_t j = 0; j < 8; j++)"):
    b.line("#pragma unroll")
    with b.block("for (int64_t q = 0; q < 4; q++)"):
      b.line("const int64_t row = row0 + g + (q >> 1) * 8, col = col0 + j * 8 + 2 * t + (q & 1);")
      b.names[p.rows], b.names[p.cols], b.names[r.acc] = "row", "col", "d[j * 4 + q]"
      for s in k.stores: _emit_store(b, s)


def _emit_sync(b: _Body, k: Kernel, p: Plan) -> None:
  """mma.sync's form (sm_80 on), or before sm_80 multiply-adds into the same accumulators; then the stores."""
  r = k.reduce
  b.line(f"const int64_t row0 = (int64_t)blockIdx.y * {BLOCK} + (warp >> 1) * {WARP_TILE}, "
         f"col0 = (int64_t)blockIdx.x * {BLOCK} + (warp & 1) * {WARP_TILE};")
  b.line(f"float acc[{M_TILES}][{N_TILES}][4] = {{}};")
  bits = STORE.get(p.half)   # a half type's bits as an integer (TensorFloat-32 values take their float32 bits)

  def fragments(*args) -> None: _fragments(b, bits, *args)

  def words(dest: str, tile: str, tiles: int, regs: int, at: str, u: UOp, where: dict) -> None:
    """dest[tile][q]: each register q of each tile, the bits of u (a TensorFloat-32 value) at the loop values
    `where`, given the C declarations `at`."""
    b.line("#pragma unroll")
    with b.block(f"for (int64_t {tile} = 0; {tile} < {tiles}; {tile}++)"):
      b.line("#pragma unroll")
      with b.block(f"for (int64_t q = 0; q < {regs}; q++)"):
        b.line(at)
        for var, e in where.items(): b.names[var] = e
        b.line(f"{dest}[{tile}][q] = __float_as_uint({b.emit([u])[0]});")

  def instructions() -> None:
    b.line("#pragma unroll")
    with b.block(f"for (int64_t mi = 0; mi < {M_TILES}; mi++)"):
      b.line("#pragma unroll")
      with b.block(f"for (int64_t ni = 0; ni < {N_TILES}; ni++)"):
        b.line(f'asm volatile("{INSTRUCTION[p.half]} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, '
               f'{{%0, %1, %2, %3}};"')
        b.line('  : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]), "+f"(acc[mi][ni][3])')
        b.line('  : "r"(fa[mi][0]), "r"(fa[mi][1]), "r"(fa[mi][2]), "r"(fa[mi][3]), "r"(fb[ni][0]), "r"(fb[ni][1]));')

  with b.block(f"for (int64_t kb = 0; kb < {p.steps}; kb += 16)"):
    b.line("#if __CUDA_ARCH__ >= 800")
    if p.half is dtypes.float32:
      # m16n8k8, twice per 16 steps. A's registers: rows g and g + 8, columns t and t + 4; B's: rows (of K) t and
      # t + 4, column g
      with b.block("for (int64_t ks = kb; ks < kb + 16; ks += 8)"):
        b.line(f"uint32_t fa[{M_TILES}][4], fb[{N_TILES}][2];")
        words("fa", "mi", M_TILES, 4, "const int64_t row = row0 + mi * 16 + g + (q & 1) * 8, kx = ks + t + (q >> 1) * 4;",
              p.x, {p.rows: "row", p.k: "kx"})
        words("fb", "ni", N_TILES, 2, "const int64_t col = col0 + ni * 8 + g, ky = ks + t + q * 4;",
              p.y, {p.k: "ky", p.cols: "col"})
        instructions()
    else:
      b.line(f"uint32_t fa[{M_TILES}][4], fb[{N_TILES}][2], lo, hi;")
      # A's registers: rows g and g + 8, columns 2t and 2t + 8; B's: rows (of K) 2t and 2t + 8, column g
      fragments("fa", "mi", M_TILES, 4, "const int64_t row = row0 + mi * 16 + g + (q & 1) * 8, "
                "kx = kb + 2 * t + (q >> 1) * 8, kx1 = kx + 1;", p.x, {p.rows: "row", p.k: "kx"},
                {p.rows: "row", p.k: "kx1"})
      fragments("fb", "ni", N_TILES, 2, "const int64_t col = col0 + ni * 8 + g, ky = kb + 2 * t + q * 8, ky1 = ky + 1;",
                p.y, {p.k: "ky", p.cols: "col"}, {p.k: "ky1", p.cols: "col"})
      instructions()
    b.line("#else")   # before sm_80: each accumulator of the same layout summed by multiply-adds
    with b.block("for (int64_t kk = kb; kk < kb + 16; kk++)"):
      with b.block(f"for (int64_t mi = 0; mi < {M_TILES}; mi++)"):
        with b.block(f"for (int64_t ni = 0; ni < {N_TILES}; ni++)"):
          with b.block("for (int64_t q = 0; q < 4; q++)"):
            b.line("const int64_t row = row0 + mi * 16 + g + (q >> 1) * 8, col = col0 + ni * 8 + 2 * t + (q & 1);")
            with b.block(""):
              b.names[p.rows], b.names[p.cols], b.names[p.k] = "row", "col", "kk"
              b.line(f"acc[mi][ni][q] = fmaf({b.emit([r.value.src[0]])[0]}, {b.emit([r.value.src[1]])[0]}, "
                     f"acc[mi][ni][q]);")
    b.line("#endif")
  # the stores: accumulator q of tile (mi, ni) is the sum at row g (+ 8 for q >= 2), column 2t (+ 1 for odd q)
  b.line("#pragma unroll")
  with b.block(f"for (int64_t mi = 0; mi < {M_TILES}; mi++)"):
    b.line("#pragma unroll")
    with b.block(f"for (int64_t ni = 0; ni < {N_TILES}; ni++)"):
      b.line("#pragma unroll")
      with b.block("for (int64_t q = 0; q < 4; q++)"):
        b.line("const int64_t row = row0 + mi * 16 + g + (q >> 1) * 8, col = col0 + ni * 8 + 2 * t + (q & 1);")
        b.names[p.rows], b.names[p.cols], b.names[r.acc] = "row", "col", "acc[mi][ni][q]"
        for s in k.stores: _emit_store(b, s)
