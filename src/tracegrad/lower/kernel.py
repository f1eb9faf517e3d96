"""The kernel IR: a Program is a list of loop nests (Kernels) over flat buffers, in the order they run.

Every expression in a kernel is a scalar UOp (shape ()) built from the ordinary primitives, so the same rewriter
simplifies it and the same printer shows it:

- a loop variable is an int64 scalar PARAM; `Loop(var, extent)` runs it over [0, extent)
- a buffer argument is a 1-d PARAM of the buffer's dtype and size
- a load is GATHER(buffer, RESHAPE(index, (1,))) with an int64 scalar index (always in range)
- index arithmetic is int64: ADD SUB MUL IDIV MOD MAX MIN CMPLT CMPEQ CMPNE WHERE, constants are CONST
- values use every elementwise primitive and CAST/BITCAST; half types (float16, bfloat16) are rounded after each
  operation, as numpy does
- a reduction's running value is read through its accumulator, a float/int scalar PARAM (Reduce.acc)

A Kernel runs, for every point of `loops`: first its `phases` in order, each like what follows; then, if it has a
`reduce`, acc = identity of reduce.op, then for every point of reduce.loops acc = op(acc, reduce.value) and
reduce.stores; then, for every point of `epilogue` (no loops: once), each Store in order.
A load after a store to the same buffer in the same iteration reads the stored value. Iterations of `loops` are independent when
`parallel` is true; a SCATTER kernel is sequential (later writes win, as in numpy).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass


from ..ir import Ops, UOp, dtypes, toposort
from ..ir.uop import key_arg
from ..ir.dtypes import DType


NOT_FLOPS = {Ops.CONST, Ops.PARAM, Ops.GATHER, Ops.CAST, Ops.BITCAST, Ops.RESHAPE, Ops.DETACH, Ops.SHARDING_CONSTRAINT,
             Ops.OPTIMIZATION_BARRIER}


@dataclass(frozen=True, eq=False)
class Loop:
  var: UOp      # int64 scalar PARAM
  extent: int


@dataclass(frozen=True, eq=False)
class Reduce:
  op: Ops                      # REDUCE_SUM, REDUCE_PROD, REDUCE_MAX or REDUCE_MIN (NaN propagates through MAX/MIN)
  acc: UOp                     # scalar PARAM of the accumulator's dtype, read by the stores
  loops: tuple[Loop, ...]      # inner loops, innermost last
  value: UOp                   # scalar expression folded into acc at each inner point
  stores: tuple = ()           # Stores at each inner point (a softmax keeps exp(x - max) for its epilogue to divide)


@dataclass(frozen=True, eq=False)
class Store:
  buf: UOp                     # a 1-d buffer PARAM of the kernel
  index: UOp                   # int64 scalar
  value: UOp                   # scalar of buf's dtype
  mode: str | None = None      # None: plain store; "add" "mul" "min" "max" "set": combine with the stored value
  valid: UOp | None = None     # bool scalar; when given, the store happens only where it is true


@dataclass(frozen=True, eq=False)
class Phase:
  """An earlier step of a kernel at each point of its outer loops: its reduction (if any), then its stores at every
  point of its epilogue. A layer norm's mean, its variance, then the normalised row run as three phases of one pass
  over each row, the row still in cache."""
  reduce: "Reduce | None"
  epilogue: tuple[Loop, ...]
  stores: tuple[Store, ...]


PACK_SUFFIX = "_pack"   # a packing copy's name: its contraction's, with this after it


@dataclass(frozen=True, eq=False)
class Kernel:
  name: str
  bufs: tuple[UOp, ...]        # the buffer PARAMs it reads or writes, in argument order
  loops: tuple[Loop, ...]      # outer loops, outermost first
  stores: tuple[Store, ...]
  reduce: Reduce | None = None
  parallel: bool = True
  epilogue: tuple[Loop, ...] = ()   # loops around the stores, after the reduce (a softmax's division by its sum)
  opts: tuple = ()             # optimisation actions chosen for it (lower/opt.py), as (name, amount) pairs
  phases: tuple[Phase, ...] = ()   # run before its own reduce, epilogue and stores at each outer point

  @property
  def packing(self) -> bool:
    """Whether it is a contraction's packing copy (named by the scheduler with PACK_SUFFIX)."""
    return self.name.endswith(PACK_SUFFIX)

  def steps(self) -> tuple["Phase | Kernel", ...]:
    """Its phases, then itself (its own reduce, epilogue and stores): what runs at each outer point, in order."""
    return (*self.phases, self)

  def phase_kernels(self) -> tuple["Kernel", ...]:
    """Each phase as a kernel over the same loops and buffers, without phases: what a renderer emits in its scope."""
    return tuple(dataclasses.replace(self, reduce=p.reduce, epilogue=p.epilogue, stores=p.stores, phases=())
                 for p in self.phases)

  def cost(self) -> tuple[int, int]:
    """(float operations, bytes of the buffers it touches) of one run: the estimate behind TRACEGRAD_DEBUG=2's
    GFLOPS and GB/s."""
    def flops(u: UOp) -> int:
      return sum(1 for n in u.toposort() if n.dtype.is_float and n.op not in NOT_FLOPS)
    outer, n = math.prod(l.extent for l in self.loops), 0
    for p in self.steps():
      n += outer * math.prod(l.extent for l in p.epilogue) * sum(flops(s.value) for s in p.stores)
      if p.reduce: n += outer * math.prod(l.extent for l in p.reduce.loops) * (flops(p.reduce.value) + 1)
    return n, sum(b.size * b.dtype.itemsize for b in self.bufs)

  def structure(self) -> tuple:
    """The kernel up to its name and which parameter nodes it holds (numbered by first appearance): two kernels of
    one structure (alike layers of a network) render to the same code."""
    roots: list[UOp] = []

    def form(x):
      if x is None or isinstance(x, (bool, int, float, str, Ops)): return x
      if isinstance(x, UOp):
        roots.append(x)
        return len(roots) - 1
      if isinstance(x, (tuple, list)): return tuple(form(y) for y in x)
      return (type(x).__name__, *(form(getattr(x, f.name)) for f in dataclasses.fields(x) if f.name != "name"))
    skeleton = form(self)
    num: dict[UOp, int] = {}
    params, nodes = 0, []
    for u in toposort(roots):
      num[u] = len(num)
      if u.op is Ops.PARAM: params, arg = params + 1, ("param", params, u.arg[1])
      else: arg = key_arg(u.op, u.arg)
      nodes.append((u.op, u.dtype, arg, tuple(num[s] for s in u.src)))
    return skeleton, tuple(nodes), tuple(num[r] for r in roots)

  # `source` (the kernel as C source) and str() are installed by render_c


@dataclass(frozen=True, eq=False)
class Control:
  """A COND, SCAN, WHILE or CALLBACK between the kernels of a Program. Its sub-programs (COND: one per branch; SCAN: the
  body; WHILE: the condition, then the body) number their buffers in the enclosing Program's list. Each run binds a
  sub-program's input buffers to the operands (a SCAN's xs: the slice of step t; carries: the results), runs its
  items, and copies its outputs into the results (a SCAN's ys: into row t). Sub-program outputs never share a
  buffer with their inputs, so the copies never overlap."""
  name: str
  op: Ops
  operands: tuple[int, ...]    # buffer numbers of the op's sources
  results: tuple[int, ...]     # buffer numbers of its results, every one (a SCAN's carries live there)
  bodies: tuple              # sub-Programs
  arg: tuple = ()              # SCAN: (n_consts, n_carry, length, reverse); WHILE: (n_consts,);
                               # CALLBACK: (HostCall, the operands' shapes)
  stores: tuple = ()           # none of its own: it writes only its results and its sub-programs' buffers


def acc_dtype(d: DType) -> DType:
  """Half types accumulate in float32."""
  return dtypes.float32 if d in (dtypes.float16, dtypes.bfloat16) else d
