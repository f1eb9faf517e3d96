"""The primitive set. Everything in tracegrad.numpy is built from these.

Semantics (each is defined for any shape; binary and ternary ops take operands of one shape and dtype):

leaves      PARAM (a graph input; arg=(uid, shape)) · CONST (a scalar; arg=value) ·
            BUFFER (a concrete array; arg=Buffer) · IOTA (arg=(shape, axis): the index along `axis`)
unary       NEG RECIP SQRT EXP2 LOG2 SIN COS FLOOR   (float; NEG also int)
binary      ADD SUB MUL MAX MIN (NaN-propagating) · DIV (float) · IDIV (int, truncating) ·
            MOD (sign of the dividend, as C's fmod) · POW ATAN2 (float) ·
            CMPLT CMPEQ CMPNE (-> bool) · AND OR XOR (int, bool) · SHL SHR (int; shift in [0, bits))
complex     REAL IMAG (complex -> its parts' real type) · COMPLEX(re, im) (float32/float64 -> complex64/complex128).
            NEG ADD SUB MUL DIV RECIP CMPEQ CMPNE WHERE CAST REDUCE_SUM, movement, data and collectives also take
            complex operands (DIV as numpy's, Smith's method); CAST of a complex to a real type keeps the real part
ternary     WHERE(cond: bool, a, b)
casts       CAST (value conversion; float->int truncates) · BITCAST (same itemsize)
reductions  REDUCE_SUM REDUCE_PROD REDUCE_MAX REDUCE_MIN over arg=axes; reduced axes are kept with size 1
movement    RESHAPE(arg=shape) · BROADCAST(arg=shape, numpy rules) · PERMUTE(arg=perm) ·
            PAD(arg=((lo, hi), ...), zero fill) · SLICE(arg=((start, stop, step), ...), step > 0) ·
            FLIP(arg=axes) · CONCAT(arg=axis)
data        GATHER(x, idx): x[*batch] = x[idx[*batch, 0], ..., idx[*batch, k-1]] over x's first k axes,
            indices clamped into range · SCATTER(x, idx, upd; arg=mode in add/mul/min/max/set): the
            inverse, out-of-range indices dropped
identity    DETACH (the value unchanged; no derivative flows through it: lax.stop_gradient) ·
            SHARDING_CONSTRAINT (the value unchanged; arg=a NamedSharding it is to be laid out by in a sharded
            program: lax.with_sharding_constraint) · OPTIMIZATION_BARRIER (the value unchanged, stored in a buffer
            of its own: no computation is fused across it, lax.optimization_barrier)
collectives across the lanes of a named axis (vmap(axis_name=), shard_map): each arg starts with (name, size)
            ALL_REDUCE(x; arg=(name, size, kind in sum/max/min)): every lane gets the reduction over all lanes ·
            ALL_GATHER(x; arg=(name, size, axis, tiled)): the lanes' x stacked on a new axis (tiled: concatenated) ·
            REDUCE_SCATTER(x; arg=(name, size, axis, tiled)): the sum over lanes, lane i keeping block i of axis ·
            PPERMUTE(x; arg=(name, size, perm)): lane dst gets lane src's x for each (src, dst), zeros elsewhere ·
            ALL_TO_ALL(x; arg=(name, size, split, concat)): lane j gets block j (of `size`) of every lane's x along
              axis split, the lanes' blocks concatenated in lane order along axis concat ·
            AXIS_INDEX(arg=(name, size)): the lane's index, an int32 scalar
multiple    Ops with sub-graphs give several results, read with PROJ(arg=i). Their sub-graphs are closed: every
outputs     value they use is a source.
            COND(index, *operands; arg=branches): branches[clamp(index)](*operands)
            SCAN(*consts, *carry, *xs; arg=(body, n_consts, n_carry, length, reverse)): body(consts, carry, x[t]) ->
              (carry, y) for t in order; results: final carry, then the ys stacked on a new leading axis
            WHILE(*consts, *carry; arg=(cond, body, n_consts)): carry = body(consts, carry) while cond(consts, carry)
            CUSTOM_JVP(*free, *operands; arg=(fun, rule, in_tree, out_tree, n_free)) ·
            CUSTOM_VJP(*free, *operands; arg=(fun, fwd, bwd, in_tree, out_tree, n_free, res_tree)): fun(*operands),
              with the derivative given by Python rules rather than by fun's nodes; `free` are the values fun closes
              over. Reverse mode swaps fun for fwd, whose results after fun's are the residuals (res_tree not None)
            REMAT(*operands; arg=fun): fun(*operands), recomputed rather than stored for the backward pass
            COMPOSITE(*free, *operands; arg=(fun, name[, transposes, static])): fun(*operands), a function built from
              primitives (tanh, softmax, solve, ...) kept whole under its name, so a graph prints as the user wrote
              it; lowering and differentiation expand it, vmap batches its body. transposes: per operand, None or a
              rule(ct, *operands, **static) giving its cotangent in reverse mode in place of the body's
            CALLBACK(*operands; arg=HostCall): a Python function of the operands' values, run on the host where the
              program reaches it (pure_callback); results of the shapes and dtypes arg.results names
            FFT(x; arg=inverse): the unnormalised discrete Fourier transform of a complex x along its last axis,
              X[k] = sum_j x[j] exp(-+2 pi i jk / n) (the + sign when inverse); one result, x's shape and dtype
            LINALG(*operands; arg=(kind, params)): a matrix decomposition or triangular solve over the last two axes,
              mapped over the leading ones (kinds and results in ir/linalg.py)
"""
from dataclasses import dataclass

import numpy as np
from enum import Enum, auto


class Ops(Enum):
  PARAM = auto(); CONST = auto(); BUFFER = auto(); IOTA = auto()
  NEG = auto(); RECIP = auto(); SQRT = auto(); EXP2 = auto(); LOG2 = auto(); SIN = auto(); COS = auto(); FLOOR = auto()
  ADD = auto(); SUB = auto(); MUL = auto(); DIV = auto(); IDIV = auto(); MOD = auto(); MAX = auto(); MIN = auto()
  POW = auto(); ATAN2 = auto()
  REAL = auto(); IMAG = auto(); COMPLEX = auto()
  CMPLT = auto(); CMPEQ = auto(); CMPNE = auto()
  AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()
  WHERE = auto()
  CAST = auto(); BITCAST = auto()
  REDUCE_SUM = auto(); REDUCE_PROD = auto(); REDUCE_MAX = auto(); REDUCE_MIN = auto()
  RESHAPE = auto(); BROADCAST = auto(); PERMUTE = auto(); PAD = auto(); SLICE = auto(); FLIP = auto(); CONCAT = auto()
  GATHER = auto(); SCATTER = auto()
  DETACH = auto(); SHARDING_CONSTRAINT = auto(); OPTIMIZATION_BARRIER = auto()
  ALL_REDUCE = auto(); ALL_GATHER = auto(); REDUCE_SCATTER = auto(); PPERMUTE = auto(); ALL_TO_ALL = auto()
  AXIS_INDEX = auto()
  PROJ = auto(); COND = auto(); SCAN = auto(); WHILE = auto(); CUSTOM_JVP = auto(); CUSTOM_VJP = auto(); REMAT = auto()
  COMPOSITE = auto(); CALLBACK = auto(); LINALG = auto(); FFT = auto()

  def __repr__(self) -> str: return f"Ops.{self.name}"

  # members are singletons compared by identity; Enum's own hash is a Python call, and pattern matching hashes ops
  # millions of times while lowering
  __hash__ = object.__hash__


LEAF = frozenset({Ops.PARAM, Ops.CONST, Ops.BUFFER, Ops.IOTA})
UNARY = frozenset({Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.COS, Ops.FLOOR, Ops.REAL, Ops.IMAG})
BINARY = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.POW, Ops.ATAN2,
                    Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.COMPLEX})
PARTS = frozenset({Ops.REAL, Ops.IMAG, Ops.COMPLEX})   # between a complex value and its real parts
COMPARE = frozenset({Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE})
TERNARY = frozenset({Ops.WHERE})
ELEMENTWISE = UNARY | BINARY | TERNARY | {Ops.CAST, Ops.BITCAST}
REDUCE = frozenset({Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN})
MULTI = frozenset({Ops.COND, Ops.SCAN, Ops.WHILE, Ops.CUSTOM_JVP, Ops.CUSTOM_VJP, Ops.REMAT, Ops.COMPOSITE,
                   Ops.CALLBACK, Ops.LINALG})
COLLECTIVE = frozenset({Ops.ALL_REDUCE, Ops.ALL_GATHER, Ops.REDUCE_SCATTER, Ops.PPERMUTE, Ops.ALL_TO_ALL,
                        Ops.AXIS_INDEX})
MOVEMENT = frozenset({Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE, Ops.PAD, Ops.SLICE, Ops.FLIP, Ops.CONCAT})

FLOAT_ONLY = frozenset({Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.COS, Ops.FLOOR, Ops.DIV, Ops.POW, Ops.ATAN2})
INT_ONLY = frozenset({Ops.IDIV, Ops.SHL, Ops.SHR})
INT_OR_BOOL = frozenset({Ops.AND, Ops.OR, Ops.XOR})
NOT_ON_BOOL = frozenset({Ops.NEG, Ops.ADD, Ops.SUB, Ops.MUL, Ops.MOD})
ON_COMPLEX = frozenset({Ops.NEG, Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.RECIP, Ops.CMPEQ, Ops.CMPNE, Ops.WHERE})
# the arg of a float MUL that may be fused with an ADD reading it into one multiply-add, rounded once: the steps of
# the library's own polynomials (tanh's), where the fused form is both faster and closer; a user's products never are
CONTRACT = "contract"
# the arg of a float MUL whose ADD readers each round a * b + c once, as IEEE's fused multiply-add: the steps random's
# samplers share with XLA's code, bit for bit. Unlike CONTRACT, a requirement: every device computes it fused
FUSED = "fused"
SCATTER_MODES = ("add", "mul", "min", "max", "set")


@dataclass(frozen=True, eq=False)
class HostCall:
  """A CALLBACK's function: called with the operands' values as numpy arrays, `fn` returns one array-like per
  result, which must have the (shape, dtype) in `results`; `name` says what it is in printed graphs and errors;
  `vmap_method` how vmap batches it (as jax.pure_callback's); `borrows`: fn only reads its arguments during the call
  (a device may pass views of its buffers rather than copies)."""
  fn: object
  results: tuple
  name: str
  vmap_method: str | None = None
  borrows: bool = False

  def __repr__(self) -> str: return f"HostCall({self.name})"

  def __call__(self, vals: list) -> list:
    out = list(self.fn(vals))
    if len(out) != len(self.results):
      raise RuntimeError(f"{self.name}: the callback returned {len(out)} results, expected {len(self.results)}")
    for i, (v, (shape, dtype)) in enumerate(zip(out, self.results)):
      v = out[i] = np.asarray(v)
      if tuple(v.shape) != tuple(shape):
        raise RuntimeError(f"{self.name}: result #{i} should have shape {tuple(shape)} (result_shape_dtypes), got "
                           f"{v.shape}")
      if v.dtype != dtype.np:
        raise RuntimeError(f"{self.name}: result #{i} should have dtype {dtype.name} (result_shape_dtypes), got "
                           f"{v.dtype}")
    return out
