"""Test oracles: compare tracegrad with numpy eagerly and traced (make_graph, then run on the device)."""
from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import optree
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad
from tracegrad import run
from tracegrad.ir import dtypes, toposort

FLOATS = ["float32", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]
ALL = ["bool"] + INTS + FLOATS


def np_dtype(name: str) -> np.dtype: return dtypes.as_dtype(name).np


def eps(dtype="float32") -> float:
  """The dtype's machine epsilon (the gap above 1.0): the unit every tolerance here is written in, so that a float16
  or bfloat16 output is judged by its own precision."""
  return float(ml_dtypes.finfo(np_dtype(dtype) if isinstance(dtype, str) else dtype).eps)


def ulps(n: float, dtype="float32") -> float:
  """n units of the dtype's precision, for an rtol or atol."""
  return n * eps(dtype)


def tol(dtype="float32", rel: float | None = None, absolute: float | None = None) -> dict:
  """rtol and atol for outputs of `dtype`: `rel` and `absolute` ulps of it (default: ULPS[dtype])."""
  name = str(np_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype))
  r, a = ULPS.get(name, ULPS["float32"])
  return dict(rtol=ulps(r if rel is None else rel, name), atol=ulps(a if absolute is None else absolute, name))


def assert_ulps_close(got, want, rel: float | None = None, absolute: float | None = None, err: str = ""):
  """got equals want in shape and dtype and, for floats, within `rel` ulps of each value plus `absolute` ulps of the
  largest magnitude in want (ulps of want's dtype; defaults from ULPS); other dtypes exactly."""
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, f"{err}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
  if want.dtype.kind not in "fV" and want.dtype != ml_dtypes.bfloat16:
    return np.testing.assert_array_equal(got, want, err_msg=err)
  w = want.astype(np.float64)
  scale = max(1.0, float(np.abs(w[np.isfinite(w)]).max(initial=0)))
  t = tol(want.dtype, rel, absolute)
  np.testing.assert_allclose(got.astype(np.float64), w, rtol=t["rtol"], atol=t["atol"] * scale, equal_nan=True,
                             err_msg=err)


# (rtol, atol) in ulps of the output dtype for results computed in another order than numpy's (accumulations over a
# few hundred terms in float32; one rounding to the narrow type for float16 and bfloat16)
ULPS = {"float32": (160, 8), "float16": (2, 0.125), "bfloat16": (2.5, 0.125), "float64": (4500, 45)}
TOL = {name: tuple(ulps(n, name) for n in pair) for name, pair in ULPS.items()}


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=5):
  return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(dtype: str, shape, elements=None, low=-10, high=10):
  """Random numpy arrays of a tracegrad dtype name (bfloat16 drawn as float32 and rounded)."""
  d = np_dtype(dtype)
  if dtype == "bool": return hnp.arrays(np.bool_, shape)
  if dtype in INTS:
    info = np.iinfo(d)
    return hnp.arrays(d, shape, elements=elements or st.integers(max(info.min, low), min(info.max, high)))
  base = np.float32 if dtype in ("bfloat16", "float32") else d
  width = 32 if base == np.float32 else (16 if base == np.float16 else 64)
  exact = {32: np.float32, 16: np.float16, 64: np.float64}[width]
  el = elements or st.floats(float(exact(low)), float(exact(high)), width=width, allow_nan=False, allow_infinity=False)
  return hnp.arrays(base, shape, elements=el).map(lambda a: a.astype(d))


def traced(f, *args, **kwargs):
  """f's outputs computed by tracing it with make_graph and running the Graph."""
  g = tracegrad.make_graph(f)(*args, **kwargs)
  leaves = [np.asarray(x) for x in tracegrad.tree.leaves((args, kwargs))]
  return tracegrad.tree.unflatten(g.out_tree, run.run_graph(g, leaves))


def assert_close(got, want, dtype=None, rtol=None, atol=None, check_dtype=True, err=""):
  got_a, want_a = np.asarray(got), np.asarray(want)
  assert got_a.shape == want_a.shape, f"{err} shape {got_a.shape} != {want_a.shape}"
  if check_dtype: assert got_a.dtype == want_a.dtype, f"{err} dtype {got_a.dtype} != {want_a.dtype}"
  name = dtype or str(want_a.dtype)
  if want_a.dtype.kind in "fV" or want_a.dtype == ml_dtypes.bfloat16:
    r, a = TOL.get(name, TOL["float32"])
    r, a = r if rtol is None else rtol, a if atol is None else atol   # an explicit 0 means none
    np.testing.assert_allclose(got_a.astype(np.float64), want_a.astype(np.float64), rtol=r, atol=a, equal_nan=True,
                               err_msg=err)
  else:
    np.testing.assert_array_equal(got_a, want_a, err_msg=err)


def check(tfn, nfn, *args, rtol=None, atol=None, check_dtype=True, want_dtype=None, **kwargs):
  """tfn(*args) eagerly and traced equals nfn on the numpy versions of args (dtype too, or want_dtype)."""
  with np.errstate(all="ignore"):
    want = nfn(*[np.asarray(a) if isinstance(a, (np.ndarray, tracegrad.Array)) else a for a in args], **kwargs)
  want = np.asarray(want)
  if want_dtype is not None: want = want.astype(np_dtype(want_dtype))
  eager = tfn(*args, **kwargs)
  assert_close(eager, want, rtol=rtol, atol=atol, check_dtype=check_dtype, err="eager")
  arr_idx = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, tracegrad.Array))]

  def f(*arrs):
    full = list(args)
    for i, a in zip(arr_idx, arrs): full[i] = a
    return tfn(*full, **kwargs)

  tr = traced(f, *[tracegrad.numpy.asarray(args[i]) for i in arr_idx])
  assert_close(tr, want, rtol=rtol, atol=atol, check_dtype=check_dtype, err="traced")
  return eager


# ---- transforms: finite-difference check_grads and slice-and-stack check_vmap ----

@contextlib.contextmanager
def x64(enabled: bool = True):
  """64-bit types on (or off) inside the block, restored afterwards."""
  old = tracegrad.config.jax_enable_x64
  tracegrad.config.update("jax_enable_x64", enabled)
  try:
    yield
  finally:
    tracegrad.config.update("jax_enable_x64", old)


@contextlib.contextmanager
def x64_both():
  """64-bit types on in tracegrad and in JAX inside the block."""
  import jax
  with x64():
    jax.config.update("jax_enable_x64", True)
    try:
      yield
    finally:
      jax.config.update("jax_enable_x64", False)


def close_to_jax(mine, theirs, tol: float = 200 * np.finfo(np.float32).eps):
  """The leaves of two pytrees (tracegrad's, JAX's) have one shape and dtype and agree to tol, relative to each value
  and to the largest magnitude."""
  import jax
  mine, theirs = tracegrad.tree.leaves(mine), jax.tree.leaves(theirs)
  assert len(mine) == len(theirs)
  for a, b in zip(mine, theirs):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.nanmax(np.abs(b), initial=0)))


def is_float(a) -> bool:
  d = np.asarray(a).dtype
  return d.kind == "f" or d == ml_dtypes.bfloat16


def _tmap(f, tree, *rest): return tracegrad.tree.map(f, tree, *rest)
def _np(tree): return _tmap(np.asarray, tree)
def _tg(tree): return _tmap(tracegrad.numpy.asarray, tree)


def _randn_like(rng, tree, dtype=None):
  return _tmap(lambda a: rng.standard_normal(np.shape(a)).astype(dtype or np.asarray(a).dtype), tree)


def _inner(xs, ys) -> float:
  pairs = zip(tracegrad.tree.leaves(xs), tracegrad.tree.leaves(ys))
  return sum(float(np.vdot(np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()))
             for x, y in pairs if is_float(x) and is_float(y))


def _assert_tree_close(got, want, rtol, atol, err):
  gl, gt = tracegrad.tree.flatten(got)
  wl, wt = tracegrad.tree.flatten(want)
  assert gt == wt, f"{err}: structure {gt} != {wt}"
  for i, (g, w) in enumerate(zip(gl, wl)):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, f"{err} leaf {i}: shape {g.shape} != {w.shape}"
    if not (is_float(g) and is_float(w)): continue
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=f"{err} leaf {i}")


def _assert_like(got, ref, err):
  """got has ref's tree structure, shapes and float dtypes (tangents and cotangents have their primal's type)."""
  gl, gt = tracegrad.tree.flatten(got)
  rl, rt = tracegrad.tree.flatten(ref)
  assert gt == rt, f"{err}: structure {gt} != {rt}"
  for i, (g, r) in enumerate(zip(gl, rl)):
    assert np.shape(g) == np.shape(r), f"{err} leaf {i}: shape {np.shape(g)} != {np.shape(r)}"
    gd, rd = np.asarray(g).dtype, np.asarray(r).dtype
    if is_float(r): assert gd == rd, f"{err} leaf {i}: dtype {gd} != {rd}"


def numerical_jvp(f, args: tuple, tangents: tuple, eps: float):
  """Central differences of f at args along tangents, in float64."""
  plus = _np(f(*_tg(_tmap(lambda a, t: np.asarray(a) + eps * t, args, tangents))))
  minus = _np(f(*_tg(_tmap(lambda a, t: np.asarray(a) - eps * t, args, tangents))))
  diff = lambda p, m: (p.astype(np.float64) - m.astype(np.float64)) / (2 * eps) if is_float(p) else p
  return _tmap(diff, plus, minus)


def _check_jvp(f, args, eps, rtol, atol, rng, err):
  tangents = _randn_like(rng, args)
  out, t_out = tracegrad.jvp(f, args, _tg(tangents))
  _assert_tree_close(out, _np(f(*args)), rtol, atol, f"{err}: primal out")
  _assert_like(t_out, out, f"{err}: tangent out")
  _assert_tree_close(t_out, numerical_jvp(f, args, tangents, eps), rtol, atol, f"{err}: tangent vs finite differences")


def _check_vjp(f, args, eps, rtol, atol, rng, err, with_jvp=True):
  out, vjp_fn = tracegrad.vjp(f, *args)
  _assert_tree_close(out, _np(f(*args)), rtol, atol, f"{err}: primal out")
  ct = _randn_like(rng, out)
  cts = vjp_fn(_tg(ct))
  _assert_like(tuple(cts), args, f"{err}: cotangents")
  tangents = _randn_like(rng, args)
  ip = _inner(cts, tangents)
  ip_fd = _inner(ct, numerical_jvp(f, args, tangents, eps))
  np.testing.assert_allclose(ip, ip_fd, rtol=rtol, atol=atol,
                             err_msg=f"{err}: <vjp(ct), t> vs <ct, finite differences>")
  if not with_jvp: return
  ip_jvp = _inner(ct, tracegrad.jvp(f, args, _tg(tangents))[1])
  np.testing.assert_allclose(ip, ip_jvp, rtol=rtol, atol=atol, err_msg=f"{err}: <vjp(ct), t> vs <ct, jvp(t)>")


def _check_grads(f, args, order, modes, eps, rtol, atol, rng, err):
  if "fwd" in modes:
    msg = f"JVP of {err}" if err else "JVP"
    _check_jvp(f, args, eps, rtol, atol, rng, msg)
    if order > 1:
      _check_grads(lambda p, t: tracegrad.jvp(f, p, t), (args, args), order - 1, modes, eps, rtol, atol, rng, msg)
  if "rev" in modes:
    msg = f"VJP of {err}" if err else "VJP"
    _check_vjp(f, args, eps, rtol, atol, rng, msg, with_jvp="fwd" in modes)
    if order > 1:
      def f_vjp(*a):
        out, vjp_fn = tracegrad.vjp(f, *a)
        return vjp_fn(out)
      _check_grads(f_vjp, args, order - 1, modes, eps, rtol, atol, rng, msg)


def _check_low_precision(f, args, modes, rng):
  """jvp/vjp in the arguments' own dtypes match the float64 results loosely and keep the primal dtypes."""
  tangents = _randn_like(rng, args, np.float64)
  with x64():
    a64 = _tg(_tmap(lambda a: np.asarray(a, np.float64), args))
    if "fwd" in modes: t64 = _np(tracegrad.jvp(f, a64, _tg(tangents))[1])
    if "rev" in modes:
      out64, vjp64 = tracegrad.vjp(f, *a64)
      ct = _randn_like(rng, _np(out64), np.float64)
      ct_in64 = _np(vjp64(_tg(ct)))
  f32 = all(np.asarray(a).dtype == np.float32 for a in tracegrad.tree.leaves(args))
  r = 2e-3 if f32 else 5e-2
  scale = lambda ref: max([1.0] + [float(np.abs(x).max(initial=0)) for x in tracegrad.tree.leaves(ref)])
  tol = lambda ref: dict(rtol=r, atol=r * scale(ref))
  if "fwd" in modes:
    out, t_out = tracegrad.jvp(f, args, _tg(_tmap(lambda t, a: t.astype(np.asarray(a).dtype), tangents, args)))
    _assert_like(t_out, out, "JVP in the arguments' dtypes: tangent out")
    _assert_tree_close(t_out, t64, err="JVP in the arguments' dtypes vs float64", **tol(t64))
  if "rev" in modes:
    out, vjp_fn = tracegrad.vjp(f, *args)
    cts = vjp_fn(_tg(_tmap(lambda c, o: c.astype(np.asarray(o).dtype), ct, _np(out))))
    _assert_like(tuple(cts), args, "VJP in the arguments' dtypes: cotangents")
    _assert_tree_close(tuple(cts), tuple(ct_in64), err="VJP in the arguments' dtypes vs float64", **tol(ct_in64))


def check_grads(f, args, order: int = 1, modes=("fwd", "rev"), eps: float | None = None, atol: float | None = None,
                rtol: float | None = None, seed: int = 0):
  """Check tracegrad.jvp ("fwd") and tracegrad.vjp ("rev") of f at args, as jax.test_util.check_grads.

  Derivatives are compared with central finite differences along random directions, and vjp with jvp through
  <vjp(ct), t> == <ct, jvp(t)>, with f run in float64 (x64 on); order 2 checks the jvp and vjp functions
  themselves. Float32 arguments are also run in float32 and compared loosely with the float64 results. Without
  "fwd" in modes, vjp is compared with finite differences only (so a custom_vjp function can be checked).
  Every leaf of args (a pytree) must be floating.
  """
  args = tuple(args)
  for leaf in tracegrad.tree.leaves(args):
    assert is_float(leaf), f"check_grads: every argument must be floating, got {np.asarray(leaf).dtype}"
  eps, atol, rtol = eps or 1e-4, atol or 1e-5, rtol or 1e-5
  rng = np.random.default_rng(seed)
  with x64():
    a64 = _tg(_tmap(lambda a: np.asarray(a, np.float64), args))
    _check_grads(f, a64, order, modes, eps, rtol, atol, rng, "")
  if any(np.asarray(a).dtype != np.float64 for a in tracegrad.tree.leaves(args)):
    _check_low_precision(f, _tg(args), modes, rng)


def primitives_of(f, *args) -> set:
  """The primitives (Ops) in the traced graph of f(*args)."""
  g = tracegrad.make_graph(f)(*args)
  return {u.op for u in toposort(list(g.outputs))}


def check_vmap(f, args, in_axes=0, out_axes=0, axis_size: int | None = None, rtol=None, atol=None):
  """tracegrad.vmap(f, in_axes, out_axes) equals f called on each slice of the batched arguments, stacked.

  in_axes and out_axes are pytree prefixes (ints, None) of the arguments and outputs, as in jax.vmap.
  """
  args = tuple(_tmap(lambda a: a if isinstance(a, (int, float, bool)) else tracegrad.numpy.asarray(a), args))
  kw = {} if axis_size is None else {"axis_size": axis_size}
  got = tracegrad.vmap(f, in_axes=in_axes, out_axes=out_axes, **kw)(*args)
  in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
  leaves, treedef = tracegrad.tree.flatten(args)
  axes = optree.broadcast_prefix(in_axes, args, none_is_leaf=True, namespace=tracegrad.tree.NAMESPACE)
  assert len(axes) == len(leaves), "check_vmap: in_axes does not match the arguments"
  sizes = {np.shape(a)[ax] for a, ax in zip(leaves, axes) if ax is not None}
  assert len(sizes) <= 1, f"check_vmap: batched arguments disagree on the batch size: {sizes}"
  n = sizes.pop() if sizes else axis_size
  assert n, "check_vmap: the batch must not be empty"
  outs = []
  for i in range(n):
    sl = [a if ax is None else tracegrad.numpy.asarray(np.take(np.asarray(a), i, axis=ax))
          for a, ax in zip(leaves, axes)]
    outs.append(f(*tracegrad.tree.unflatten(treedef, sl)))
  want_tree = tracegrad.tree.structure(outs[0])
  got_leaves, got_tree = tracegrad.tree.flatten(got)
  assert got_tree == want_tree, f"vmap: output structure {got_tree} != {want_tree}"
  oaxes = optree.broadcast_prefix(out_axes, outs[0], none_is_leaf=True, namespace=tracegrad.tree.NAMESPACE)
  per_slice = [[np.asarray(tracegrad.numpy.asarray(x)) for x in tracegrad.tree.leaves(o)] for o in outs]
  for j, (g, oax) in enumerate(zip(got_leaves, oaxes)):
    vals = [p[j] for p in per_slice]
    if oax is None:
      for v in vals[1:]:
        assert_close(v, vals[0], rtol=rtol, atol=atol, err=f"out_axes=None leaf {j} varies over the batch")
      want = vals[0]
    else:
      want = np.stack(vals, axis=oax)
    assert_close(g, want, rtol=rtol, atol=atol, err=f"vmap output leaf {j}")
  return got
