"""A numpy evaluator of Programs (the kernel IR), vectorised over each kernel's loop points: an oracle for the
scheduler that does not need a C compiler."""
from __future__ import annotations

import numpy as np

from tracegrad.devices.interp import deps, evaluate
from tracegrad.ir import Ops, toposort
from tracegrad.devices.base import Program
from tracegrad.lower.kernel import Control

_COMBINE = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
_REDUCE = {Ops.REDUCE_SUM: np.sum, Ops.REDUCE_PROD: np.prod, Ops.REDUCE_MAX: np.max, Ops.REDUCE_MIN: np.min}


def _eval(expr, env: dict, grid_shape):
  vals = dict(env)
  for u in toposort([expr]):
    if u in vals: continue
    if u.op is Ops.GATHER:
      buf, idx = vals[u.src[0]], vals[u.src[1].src[0]]
      vals[u] = buf[np.broadcast_to(idx, grid_shape)]
    elif u.op is Ops.RESHAPE and u.shape == (1,): vals[u] = vals[u.src[0]]
    else:
      args = [np.broadcast_to(vals[s], grid_shape) if s.shape == () else vals[s] for s in deps(u)]
      vals[u] = evaluate(u, args) if u.src else np.broadcast_to(evaluate(u, []), grid_shape)
  return np.broadcast_to(vals[expr], grid_shape)


def run_program(prog: Program, inputs: list[np.ndarray]) -> list[np.ndarray]:
  bufs = [None] * len(prog.buffers)
  for n, x in zip(prog.inputs, inputs): bufs[n] = np.ascontiguousarray(x).reshape(-1)
  for n, spec in enumerate(prog.buffers):
    if bufs[n] is None: bufs[n] = spec.data.copy() if spec.data is not None else np.zeros(spec.size, spec.dtype.np)
  with np.errstate(all="ignore"):
    _run(prog, bufs)
  return [bufs[n].reshape(shape).copy() for n, shape in prog.outputs]


def _control(c: Control, bufs: list):
  """A sub-program's inputs point at the operands (slices for a scan's xs), its outputs are copied to the results."""
  ops, res = c.operands, c.results

  def run(p: Program, srcs, results):
    for b, o in zip(p.inputs, srcs): bufs[b] = o
    _run(p, bufs)
    outs = [bufs[o].copy() for o, _ in p.outputs]
    for r, v in zip(results, outs): bufs[r][:] = v

  if c.op is Ops.COND:
    run(c.bodies[int(np.clip(bufs[ops[0]][0], 0, len(c.bodies) - 1))], [bufs[o] for o in ops[1:]], res)
  elif c.op is Ops.SCAN:
    n_consts, n_carry, length, reverse = c.arg
    for r, i in zip(res[:n_carry], ops[n_consts:]): bufs[r][:] = bufs[i]
    for t in reversed(range(length)) if reverse else range(length):
      xs = [bufs[x].reshape(length, -1)[t] for x in ops[n_consts + n_carry:]]
      run(c.bodies[0], [bufs[o] for o in ops[:n_consts]] + [bufs[r] for r in res[:n_carry]] + xs, res[:n_carry])
      for r, (o, _) in zip(res[n_carry:], c.bodies[0].outputs[n_carry:]): bufs[r].reshape(length, -1)[t] = bufs[o]
  elif c.op is Ops.CALLBACK:   # a host call (a LINALG's LAPACK routine among them): its results written back
    call, shapes = c.arg
    outs = call([bufs[o].reshape(s) for o, s in zip(ops, shapes)])
    for r, v in zip(res, outs): bufs[r][:] = np.reshape(v, -1)
  else:
    (n_consts,) = c.arg
    for r, i in zip(res, ops[n_consts:]): bufs[r][:] = bufs[i]
    consts = [bufs[o] for o in ops[:n_consts]]
    while True:
      run(c.bodies[0], consts + [bufs[r] for r in res], [])
      if not bufs[c.bodies[0].outputs[0][0]][0]: break
      run(c.bodies[1], consts + [bufs[r] for r in res], res)


def _run(prog: Program, bufs: list):
  for k, nums in zip(prog.kernels, prog.calls):
    if isinstance(k, Control):
      _control(k, bufs)
      continue
    base = {p: bufs[n] for p, n in zip(k.bufs, nums)}
    if not k.phases:
      _step(k, k, k.loops, base)
      continue
    # a kernel with phases runs them row by row, so that a phase reading another row's values would be caught
    for point in np.ndindex(*(l.extent for l in k.loops)):
      env = {**base, **{l.var: np.int64(i) for l, i in zip(k.loops, point)}}
      for p in k.steps(): _step(k, p, [], env)


def _step(k, p, loops: list, base: dict):
  """One step (the kernel itself, or a phase) at every point of `loops` (the outer loops not fixed in base)."""
  env = dict(base)
  all_loops = list(loops) + (list(p.reduce.loops) if p.reduce else [])
  shape = tuple(l.extent for l in all_loops)
  for d, l in enumerate(all_loops):
    env[l.var] = np.arange(l.extent, dtype=np.int64).reshape([-1 if j == d else 1 for j in range(len(all_loops))])
  store_loops = list(loops) + list(p.epilogue)
  outer = tuple(l.extent for l in store_loops)
  if p.reduce:
    v = _eval(p.reduce.value, env, shape)
    for st in p.reduce.stores: env[st.buf][_eval(st.index, env, shape).reshape(-1)] = _eval(st.value, env, shape).reshape(-1)
    axes = tuple(range(len(loops), len(all_loops)))
    red = _REDUCE[p.reduce.op](v, axis=axes) if axes else v
    env = dict(base)
    env[p.reduce.acc] = red.astype(p.reduce.acc.dtype.np).reshape(red.shape + (1,) * len(p.epilogue))
  for d, l in enumerate(store_loops):
    env[l.var] = np.arange(l.extent, dtype=np.int64).reshape([-1 if j == d else 1 for j in range(len(outer))])
  for st in p.stores:
    idx = _eval(st.index, env, outer).reshape(-1)
    val = _eval(st.value, env, outer).reshape(-1)
    ok = _eval(st.valid, env, outer).reshape(-1) if st.valid is not None else np.ones(idx.shape, bool)
    buf = env[st.buf]
    if k.parallel and st.mode is None: buf[idx[ok]] = val[ok]
    else:
      for i, v, g in zip(idx, val, ok):
        if g: buf[i] = v if st.mode is None else _COMBINE[st.mode](buf[i], v)
