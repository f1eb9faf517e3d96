"""Kernel IR to GPU source: one kernel function per Kernel, in OpenCL C or CUDA C, which differ only in the small
table TARGETS (thread indices, barriers, address spaces, qualifiers and the prelude's head). Expressions, loads,
stores, reductions and the helpers (half types, math) are render_c's, so every target computes the same values.

Each point of a parallel kernel's outer loops is one work item (global id = the points in row-major order); its
reduction and epilogue run in that item. A reduction with few outer points and many inner ones runs as a work-group
per outer point (`group`): each item folds a stride of the inner points, then the group combines its partial results
through local (shared) memory with barriers. A sequential kernel runs as one item. The host runs the Program's
control flow (devices/gpu.py) with the launch sizes `launches` gives.

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
from ..ir import UOp
from .kernel import Control, Kernel
from .render_c import CTYPE, HELPERS, MEMTYPE, REDUCE_ALU, _Body, _combine, _emit_reduce, _emit_store, _identity, _loop, \
    c_name, render_const

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
  gid: str         # this item's global index, the group's index, the item's index in its group
  group: str
  lid: str
  local: str       # the qualifier of group-shared memory
  barrier: str


TARGETS = {
  "opencl": Target(OPENCL_HEAD, "__kernel void", "__global ", "restrict", "(int64_t)get_global_id(0)",
                   "(int64_t)get_group_id(0)", "(int64_t)get_local_id(0)", "__local", "barrier(CLK_LOCAL_MEM_FENCE);"),
  "cuda": Target(CUDA_HEAD, 'extern "C" __global__ void', "", "__restrict__",
                 "((int64_t)blockIdx.x * blockDim.x + threadIdx.x)", "(int64_t)blockIdx.x", "(int64_t)threadIdx.x",
                 "__shared__", "__syncthreads();"),
}

LOCAL = 64            # work items of a group: a plain kernel's, and a grouped reduction's
GROUP_MIN_STEPS = 1024   # a reduction this long over few enough outer points runs as one group per point
GROUP_MAX_POINTS = 4096


class _GPUBody(_Body):
  """render_c's statements without its OpenMP pragmas."""

  @contextmanager
  def block(self, header: str, pragma: str | None = None):
    with super().block(header): yield


def _grouped(k: Kernel) -> bool:
  r = k.reduce
  if r is None or not k.parallel or r.stores or k.epilogue or not r.loops: return False
  points, steps = math.prod(l.extent for l in k.loops), math.prod(l.extent for l in r.loops)
  return steps >= GROUP_MIN_STEPS and points <= GROUP_MAX_POINTS


def _split(b: _Body, flat: str, loops, prefix: str) -> None:
  """Name each loop's variable from one row-major index over them."""
  stride = math.prod(l.extent for l in loops)
  for j, l in enumerate(loops):
    stride //= l.extent
    e = flat if stride == 1 else f"{flat} / {stride}"
    if j: e = f"({e}) % {l.extent}" if stride > 1 else f"{e} % {l.extent}"
    b.line(f"const int64_t {prefix}{j} = {e};")
    b.names[l.var] = f"{prefix}{j}"


def render_kernel(k: Kernel, target: str, name: str | None = None, restrict: bool = True) -> tuple[str, tuple]:
  """The kernel function of k for `target`, and its launch: (global items, items per group)."""
  t = TARGETS[target]
  b = _GPUBody(k)
  stored = {s.buf for s in k.stores} | {s.buf for s in (k.reduce.stores if k.reduce else ())}
  params = ", ".join(f"{t.space}{'' if p in stored else 'const '}{'uint8_t' if p.dtype.is_bool else MEMTYPE[p.dtype]} "
                     f"*{t.restrict + ' ' if restrict else ''}{n}" for p, n in b.bufs.items())
  points = math.prod(l.extent for l in k.loops)
  if _grouped(k):
    launch = (points * LOCAL, LOCAL)
    _grouped_body(b, k, t)
  else:
    with ExitStack() as loops:
      if k.parallel and k.loops:
        launch = (-(-points // LOCAL) * LOCAL, LOCAL)
        b.line(f"const int64_t gid = {t.gid};")
        b.line(f"if (gid >= {points}) return;")
        _split(b, "gid", k.loops, "i")
      else:   # one item runs it all
        launch = (1, 1)
        for j, l in enumerate(k.loops):
          b.names[l.var] = f"i{j}"
          loops.enter_context(b.block(_loop(f"i{j}", l.extent)))
      if k.reduce is not None: _emit_reduce(b, k)
      for j, l in enumerate(k.epilogue):
        b.names[l.var] = f"e{j}"
        loops.enter_context(b.block(_loop(f"e{j}", l.extent)))
      for s in k.stores: _emit_store(b, s)
  src = f"{t.kernel} {name or c_name(k.name)}({params}) {{\n" + "".join(l + "\n" for l in b.lines) + "}"
  return src, launch


def _grouped_body(b: _Body, k: Kernel, t: Target) -> None:
  r = k.reduce
  ct = CTYPE[r.acc.dtype]
  steps = math.prod(l.extent for l in r.loops)
  b.line(f"const int64_t grp = {t.group}, lid = {t.lid};")
  _split(b, "grp", k.loops, "i")
  b.line(f"{t.local} {ct} part[{LOCAL}];")
  b.line(f"{ct} acc = {render_const(_identity(r.op, r.acc.dtype), r.acc.dtype)};")
  b.names[r.acc] = "acc"
  with b.block(f"for (int64_t rr = lid; rr < {steps}; rr += {LOCAL})"):
    _split(b, "rr", r.loops, "r")
    b.line(f"acc = {b.emit([_combine(REDUCE_ALU[r.op], r.acc, r.value)])[0]};")
  b.line("part[lid] = acc;")
  b.line(t.barrier)
  mine, other = UOp.param((), r.acc.dtype), UOp.param((), r.acc.dtype)
  with b.block(f"for (int64_t s = {LOCAL // 2}; s > 0; s >>= 1)"):
    with b.block("if (lid < s)"):
      b.names[mine], b.names[other] = "part[lid]", "part[lid + s]"
      b.line(f"part[lid] = {b.emit([_combine(REDUCE_ALU[r.op], mine, other)])[0]};")
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
    for k, nums in zip(p.kernels, p.calls):
      if isinstance(k, Control):
        for body in k.bodies: walk(body)
        continue
      name = c_name(k.name)
      while name in seen: name = f"{name}_{len(seen)}"
      seen.add(name)
      src, launch = render_kernel(k, target, name, restrict=len(set(nums)) == len(nums))
      functions.append(src)
      launches[k] = (name, launch)

  walk(prog)
  return GPUSource("\n\n".join([TARGETS[target].head + HELPERS, *functions]) + "\n", launches)
