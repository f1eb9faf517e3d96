"""lax control flow (cond, switch, select, scan, fori_loop, while_loop, stop_gradient) against Python loops,
and under grad, jvp and vmap."""
import platform

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check_grads, check_vmap, ulps


def close(got, want, rtol=ulps(840), atol=ulps(84)):
  np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def rand(*shape, seed=0, low=-1.0, high=1.0):
  return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def fd(f, x, eps=1e-6):
  """Central-difference gradient of a float64 numpy function with a scalar output."""
  x = np.asarray(x, np.float64)
  g = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    e = np.zeros_like(x)
    e[i] = eps
    g[i] = (f(x + e) - f(x - e)) / (2 * eps)
  return g


# ---- values against Python loops

@pytest.mark.parametrize("x", [-1.5, 2.0])
def test_cond_value(x):
  f = lambda v: lax.cond(v > 0, lambda a: a * 2.0, lambda a: -a + 1.0, v)
  want = x * 2.0 if x > 0 else -x + 1.0
  close(f(np.float32(x)), want)
  close(tg.jit(f)(np.float32(x)), want)


def test_cond_several_operands_and_pytree_output():
  def f(p, a, b):
    return lax.cond(p, lambda a, b: {"s": a + b, "t": (a * b,)}, lambda a, b: {"s": a - b, "t": (a / b,)}, a, b)
  a, b = rand(3, seed=1), rand(3, seed=2, low=1.0, high=2.0)
  for p in (True, False):
    out = f(p, a, b)
    close(out["s"], a + b if p else a - b)
    close(out["t"][0], a * b if p else a / b)
    close(tg.jit(f)(np.asarray(p), a, b)["s"], a + b if p else a - b)


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 7])
def test_switch_value_clamps_index(i):
  branches = [lambda x: x + 1.0, lambda x: x * 3.0, lambda x: tnp.sin(x)]
  np_branches = [lambda x: x + 1.0, lambda x: x * 3.0, np.sin]
  x = rand(4)
  want = np_branches[min(max(i, 0), 2)](x.astype(np.float64))
  close(lax.switch(i, branches, x), want)
  close(tg.jit(lambda i, x: lax.switch(i, branches, x))(np.int32(i), x), want)


def test_select_value():
  p = np.array([True, False, True, False])
  a, b = rand(4, seed=1), rand(4, seed=2)
  close(lax.select(p, a, b), np.where(p, a, b))
  close(tg.jit(lax.select)(p, a, b), np.where(p, a, b))


def _np_scan(body, init, xs, reverse=False):
  carry, ys = init, [None] * len(xs)
  for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
    carry, ys[t] = body(carry, xs[t])
  return carry, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_value(reverse):
  xs = rand(5, 3)
  body = lambda c, x: (c * 0.5 + x, c * c)
  c, ys = lax.scan(body, tnp.zeros(3), xs, reverse=reverse)
  c_np, ys_np = _np_scan(body, np.zeros(3), xs.astype(np.float64), reverse)
  close(c, c_np)
  close(ys, ys_np)
  c_j, ys_j = tg.jit(lambda xs: lax.scan(body, tnp.zeros(3), xs, reverse=reverse))(xs)
  close(c_j, c_np)
  close(ys_j, ys_np)


def test_scan_length_without_xs():
  c, ys = lax.scan(lambda c, _: (c * 2.0, c), np.float32(1.0), None, length=4)
  close(c, 16.0)
  close(ys, [1.0, 2.0, 4.0, 8.0])


def test_scan_length_matching_xs():
  c, ys = lax.scan(lambda c, x: (c + x, c), np.float32(0.0), np.arange(4, dtype=np.float32), length=4)
  close(c, 6.0)
  close(ys, [0.0, 0.0, 1.0, 3.0])


def test_scan_length_must_be_a_non_negative_int():
  body = lambda c, _: (c, c)
  with pytest.raises(ValueError, match="scan: length must be >= 0 \\(the number of steps\\), got -1"):
    lax.scan(body, 0.0, None, length=-1)
  with pytest.raises(TypeError, match="scan: length must be an int, got 2.5"):
    lax.scan(body, 0.0, None, length=2.5)
  assert lax.scan(body, 0.0, None, length=0)[1].shape == (0,)


def test_scan_pytree_carry_and_ys():
  xs = {"u": rand(4, 2, seed=1), "v": (rand(4, seed=2),)}

  def body(carry, x):
    a, (b, n) = carry["a"], carry["bn"]
    a = a + x["u"] * b
    b = b * 0.9 + x["v"][0]
    return {"a": a, "bn": (b, n + 1)}, (a.sum(), {"b": b})

  init = {"a": np.zeros(2, np.float32), "bn": (np.float32(1.0), np.int32(0))}
  carry, (s, d) = lax.scan(body, init, xs)
  a, b, ss, bs = np.zeros(2), 1.0, [], []
  for t in range(4):
    a = a + xs["u"][t] * b
    b = b * 0.9 + xs["v"][0][t]
    ss.append(a.sum())
    bs.append(b)
  close(carry["a"], a)
  close(carry["bn"][0], b)
  assert int(np.asarray(carry["bn"][1])) == 4
  close(s, ss)
  close(d["b"], bs)


def test_fori_loop_value():
  x = rand(3)
  out = lax.fori_loop(0, 5, lambda i, c: c * 0.5 + i * x, np.zeros(3, np.float32))
  want = np.zeros(3)
  for i in range(5): want = want * 0.5 + i * x.astype(np.float64)
  close(out, want)
  close(tg.jit(lambda x: lax.fori_loop(0, 5, lambda i, c: c * 0.5 + i * x, tnp.zeros(3)))(x), want)


def test_fori_loop_traced_bounds_and_float_init():
  x = rand(6)
  f = tg.jit(lambda lo, hi, x: lax.fori_loop(lo, hi, lambda i, acc: acc + x[i], 0.0))
  close(f(np.int32(1), np.int32(5), x), x[1:5].astype(np.float64).sum())
  close(f(np.int32(0), np.int32(6), x), x.astype(np.float64).sum())


def test_loops_accept_python_scalar_init():
  # a weakly typed carry takes the type the body gives it, as in JAX
  x = np.float32(1.5)
  close(lax.fori_loop(0, 3, lambda i, c: c * x, 1.0), 1.5**3)
  close(lax.scan(lambda c, t: (c + t, c), 0.0, np.ones(3, np.float32))[0], 3.0)
  close(lax.while_loop(lambda c: c < 5.0, lambda c: c + x, 0.0), 6.0)
  close(tg.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(x), 3 * 1.5**2)


def test_while_loop_value():
  def f(x):
    return lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * 1.5 + 0.5), (np.int32(0), x))
  for x0 in (0.5, 3.0, 20.0):
    n, v = 0, x0
    while v < 10.0: n, v = n + 1, v * 1.5 + 0.5
    out = f(np.float32(x0))
    assert int(np.asarray(out[0])) == n
    close(out[1], v)
    close(tg.jit(f)(np.float32(x0))[1], v)


# ---- grad

def _scan_loss(x, w):
  def body(c, xt): return tnp.sin(c) * w + xt, c * xt
  c, ys = lax.scan(body, x[0], x[1:])
  return c + ys.sum()


def _np_scan_loss(x, w):
  c, acc = x[0], 0.0
  for xt in x[1:]: c, acc = np.sin(c) * w + xt, acc + c * xt
  return c + acc


def test_grad_scan():
  x, w = rand(5), np.float32(0.7)
  close(tg.grad(_scan_loss)(x, w), fd(lambda x: _np_scan_loss(x, 0.7), x), rtol=1e-3)


def test_grad_wrt_value_closed_over_by_scan_body():
  x = rand(5).astype(np.float64)
  g = tg.grad(lambda w: _scan_loss(x.astype(np.float32), w))(np.float32(0.7))
  close(g, fd(lambda w: _np_scan_loss(x, w), 0.7), rtol=1e-3)


@pytest.mark.parametrize("reverse", [False, True])
def test_grad_scan_init_xs_and_reverse(reverse):
  xs, c0 = rand(4, 2, seed=3), rand(2, seed=4)
  body = lambda c, x: (tnp.tanh(c * x + 0.3), (c * x).sum())
  np_body = lambda c, x: (np.tanh(c * x + 0.3), (c * x).sum())

  def f(c0, xs):
    c, ys = lax.scan(body, c0, xs, reverse=reverse)
    return c.sum() + (ys * tnp.arange(1.0, 5.0)).sum()

  def nf(c0, xs):
    c, ys = _np_scan(np_body, c0, xs, reverse)
    return c.sum() + (ys * np.arange(1.0, 5.0)).sum()

  gc, gx = tg.grad(f, argnums=(0, 1))(c0, xs)
  close(gc, fd(lambda c: nf(c, xs.astype(np.float64)), c0), rtol=1e-3)
  close(gx, fd(lambda x: nf(c0.astype(np.float64), x), xs), rtol=1e-3)


def test_grad_fori_loop_static_bounds():
  f = lambda x: lax.fori_loop(0, 4, lambda i, c: c * x + 1.0, np.float32(1.0))
  for x in (0.5, -1.2):
    close(tg.grad(f)(np.float32(x)), 4 * x**3 + 3 * x**2 + 2 * x + 1, rtol=ulps(84))


def test_grad_fori_loop_bound_from_non_differentiated_arg():
  # as in JAX, an argument grad does not differentiate stays a Python int, so the bound is static
  f = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, np.float32(1.0))
  close(tg.grad(f)(np.float32(2.0), 3), 12.0)


def test_grad_fori_loop_indexes_with_counter():
  x = rand(5)
  f = lambda x: lax.fori_loop(0, 5, lambda i, c: c * tnp.cos(x[i]) + x[i], np.float32(0.0))

  def nf(x):
    c = 0.0
    for i in range(5): c = c * np.cos(x[i]) + x[i]
    return c
  close(f(tnp.asarray(x)), nf(x.astype(np.float64)))
  close(tg.grad(f)(x), fd(nf, x), rtol=1e-3)


@pytest.mark.parametrize("x", [-0.8, 1.3])
def test_grad_cond(x):
  def f(x, y): return lax.cond(x > 0, lambda a, b: tnp.sin(a) * b, lambda a, b: tnp.cos(a) + b * b, x, y)
  gx, gy = tg.grad(f, argnums=(0, 1))(np.float32(x), np.float32(2.0))
  if x > 0: close((gx, gy), (np.cos(x) * 2.0, np.sin(x)))
  else: close((gx, gy), (-np.sin(x), 4.0))


def test_grad_cond_closure():
  def f(w, x): return lax.cond(x.sum() > 0, lambda v: (v * w).sum(), lambda v: (v / w).sum(), x)
  x = np.array([0.5, 1.0, -0.2], np.float32)
  close(tg.grad(f)(np.float32(2.0), x), x.sum())
  close(tg.grad(f)(np.float32(2.0), -x), x.sum() / 4.0)


@pytest.mark.parametrize("i", [0, 1, 2])
def test_grad_switch(i):
  branches = [lambda x: x * x, lambda x: tnp.exp(x), lambda x: tnp.sin(3.0 * x)]
  want = [lambda x: 2 * x, np.exp, lambda x: 3 * np.cos(3 * x)][i]
  close(tg.grad(lambda x: lax.switch(i, branches, x))(np.float32(0.4)), want(0.4))
  close(tg.grad(lambda x, i: lax.switch(i, branches, x))(np.float32(0.4), np.int32(i)), want(0.4))


def test_grad_select():
  p = np.array([True, False, True])
  a, b = rand(3, seed=1), rand(3, seed=2)
  ga, gb = tg.grad(lambda a, b: (lax.select(p, a, b) ** 2).sum(), argnums=(0, 1))(a, b)
  close(ga, np.where(p, 2 * a, 0.0))
  close(gb, np.where(p, 0.0, 2 * b))


@pytest.mark.parametrize("reverse", [False, True])
def test_second_derivative_through_a_scan_whose_backward_reads_its_stacked_outputs(reverse):
  # the backward steps read the tanh each forward step stacked; grad of grad differentiates through those reads
  xs = rand(5, 3, seed=6)

  def f(w):
    h, hs = lax.scan(lambda h, x: (tnp.tanh(h * w + x),) * 2, tnp.full(3, 0.2, tnp.float32), xs, reverse=reverse)
    return (hs * hs).sum() + h.sum()

  def nf(w):
    h, acc = np.full(3, 0.2), 0.0
    for x in (xs[::-1] if reverse else xs).astype(np.float64):
      h = np.tanh(h * w + x)
      acc += (h * h).sum()
    return acc + h.sum()
  w, e = 0.9, 1e-4
  close(tg.grad(f)(np.float32(w)), fd(nf, w), rtol=1e-3)
  close(tg.grad(tg.grad(f))(np.float32(w)), (nf(w + e) - 2 * nf(w) + nf(w - e)) / e**2, rtol=1e-3)


def test_grad_nested_scan():
  xs = rand(3, 4, seed=5)

  def f(w):
    def outer(c, row):
      inner_c, _ = lax.scan(lambda d, x: (tnp.tanh(d * w + x), None), c, row)
      return inner_c, inner_c * c
    c, ys = lax.scan(outer, np.float32(0.1), xs)
    return c + ys.sum()

  def nf(w):
    c, acc = 0.1, 0.0
    for row in xs.astype(np.float64):
      d = c
      for x in row: d = np.tanh(d * w + x)
      acc, c = acc + d * c, d
    return c + acc
  close(f(np.float32(0.8)), nf(0.8))
  close(tg.grad(f)(np.float32(0.8)), fd(nf, 0.8), rtol=1e-3)


# ---- jvp

def test_jvp_scan():
  x, t = rand(5), rand(5, seed=9)
  out, tan = tg.jvp(lambda x: _scan_loss(x, 0.7), (x,), (t,))
  close(out, _np_scan_loss(x.astype(np.float64), 0.7))
  close(tan, fd(lambda x: _np_scan_loss(x, 0.7), x) @ t, rtol=1e-3)


def test_jvp_cond_and_switch():
  f = lambda x: lax.cond(x > 0, tnp.sin, tnp.cos, x)
  close(tg.jvp(f, (np.float32(0.5),), (np.float32(2.0),))[1], 2 * np.cos(0.5))
  close(tg.jvp(f, (np.float32(-0.5),), (np.float32(2.0),))[1], 2 * np.sin(0.5))
  g = lambda x: lax.switch(1, [tnp.sin, lambda x: x**3], x)
  close(tg.jvp(g, (np.float32(2.0),), (np.float32(1.0),)), (8.0, 12.0))


def test_jvp_select():
  p = np.array([True, False])
  out, tan = tg.jvp(lambda a, b: lax.select(p, a, b), (np.ones(2, np.float32), np.zeros(2, np.float32)),
                    (np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)))
  close(out, [1.0, 0.0])
  close(tan, [1.0, 4.0])


def test_jvp_fori_loop():
  f = lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, np.float32(1.0))
  close(tg.jvp(f, (np.float32(1.5),), (np.float32(1.0),)), (1.5**3, 3 * 1.5**2))


def test_jvp_while_loop():
  # trip count fixed near x, so d/dx of the result is 1.5**n
  f = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 1.5, x)
  for x0 in (0.7, 4.0):
    n, v = 0, x0
    while v < 10.0: n, v = n + 1, v * 1.5
    out, tan = tg.jvp(f, (np.float32(x0),), (np.float32(2.0),))
    close(out, v)
    close(tan, 2.0 * 1.5**n)


def test_jvp_while_loop_closure():
  def f(w, x):
    return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, tnp.sin(c[1]) * w), (np.int32(0), x))[1]

  def nf(w, x):
    for _ in range(4): x = np.sin(x) * w
    return x
  _, tan = tg.jvp(f, (np.float32(0.9), np.float32(0.3)), (np.float32(1.0), np.float32(0.5)))
  close(tan, fd(lambda w: nf(w, 0.3), 0.9) + 0.5 * fd(lambda x: nf(0.9, x), 0.3), rtol=1e-3)


# ---- vmap

def test_vmap_cond_batched_predicate():
  xs = np.array([-1.0, 0.5, 2.0, -0.1], np.float32)
  f = lambda x: lax.cond(x > 0, lambda a: tnp.sin(a) * 2.0, lambda a: a * a, x)
  close(tg.vmap(f)(xs), [np.sin(x) * 2.0 if x > 0 else x * x for x in xs.astype(np.float64)])


def test_vmap_cond_batched_operands_only():
  xs, y = rand(4, 3), np.array([1.0, -2.0, 0.5], np.float32)
  f = lambda x, y: lax.cond(y.sum() > 0, lambda a, b: a * b, lambda a, b: a - b, x, y)
  close(tg.vmap(f, in_axes=(0, None))(xs, y), xs * y if y.sum() > 0 else xs - y)
  close(tg.vmap(f, in_axes=(0, None))(xs, -y), xs * -y if -y.sum() > 0 else xs + y)


def test_vmap_cond_batched_predicate_unbatched_operand():
  ps, y = np.array([True, False, True]), rand(2)
  out = tg.vmap(lambda p, y: lax.cond(p, lambda v: v + 1.0, lambda v: v * 3.0, y), in_axes=(0, None))(ps, y)
  close(out, [y + 1.0 if p else y * 3.0 for p in ps])


def test_vmap_switch_batched_index():
  idx, xs = np.array([0, 2, 1, 5, -1], np.int32), rand(5, 2)
  branches = [lambda x: x + 1.0, lambda x: x * 3.0, tnp.cos]
  np_branches = [lambda x: x + 1.0, lambda x: x * 3.0, np.cos]
  out = tg.vmap(lambda i, x: lax.switch(i, branches, x))(idx, xs)
  close(out, [np_branches[min(max(i, 0), 2)](x.astype(np.float64)) for i, x in zip(idx, xs)])
  out = tg.vmap(lambda i, x: lax.switch(i, branches, x), in_axes=(0, None))(idx, xs[0])
  close(out, [np_branches[min(max(i, 0), 2)](xs[0].astype(np.float64)) for i in idx])


def test_vmap_switch_batched_operands_only():
  xs = rand(3, 2)
  branches = [lambda x: x + 1.0, lambda x: x * 3.0]
  close(tg.vmap(lambda x: lax.switch(1, branches, x))(xs), xs * 3.0)
  close(tg.vmap(lambda x, i: lax.switch(i, branches, x), in_axes=(0, None))(xs, np.int32(0)), xs + 1.0)


def test_vmap_select():
  ps, a, b = np.array([[True, False], [False, False], [True, True]]), rand(3, 2, seed=1), rand(3, 2, seed=2)
  close(tg.vmap(lax.select)(ps, a, b), np.where(ps, a, b))
  close(tg.vmap(lax.select, in_axes=(0, None, 0))(ps, a[0], b), np.where(ps, a[0], b))
  close(tg.vmap(lax.select, in_axes=(None, 0, 0))(ps[0], a, b), np.where(ps[0], a, b))


def test_vmap_while_loop_lanes_finish_at_different_counts():
  xs = np.array([0.5, 3.0, 9.0, 12.0, 1.0], np.float32)
  f = lambda x: lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * 1.5 + 0.5), (np.int32(0), x))
  ns, vs = tg.vmap(f)(xs)
  want_n, want_v = [], []
  for v in xs.astype(np.float64):
    n = 0
    while v < 10.0: n, v = n + 1, v * 1.5 + 0.5
    want_n.append(n)
    want_v.append(v)
  np.testing.assert_array_equal(np.asarray(ns), want_n)
  close(vs, want_v)


def test_vmap_while_loop_batched_bound_in_closure():
  limits = np.array([1.0, 5.0, 40.0], np.float32)
  f = lambda lim: lax.while_loop(lambda c: c < lim, lambda c: c * 2.0, np.float32(1.0))
  close(tg.vmap(f)(limits), [1.0, 8.0, 64.0])


def test_vmap_fori_loop():
  xs = rand(4, 3)
  f = lambda x: lax.fori_loop(0, 3, lambda i, c: c * x + i, tnp.ones(3))
  want = []
  for x in xs.astype(np.float64):
    c = np.ones(3)
    for i in range(3): c = c * x + i
    want.append(c)
  close(tg.vmap(f)(xs), want)


_body = lambda c, x: (tnp.tanh(c + x), c * x)
_np_body = lambda c, x: (np.tanh(c + x), c * x)


def test_vmap_scan_batched_xs_only():
  xs, c0 = rand(3, 4, 2), rand(2, seed=1)
  c, ys = tg.vmap(lambda xs: lax.scan(_body, c0, xs))(xs)
  want = [_np_scan(_np_body, c0.astype(np.float64), x.astype(np.float64)) for x in xs]
  close(c, [w[0] for w in want])
  close(ys, [w[1] for w in want])


def test_vmap_scan_batched_init_only():
  xs, c0 = rand(4, 2), rand(3, 2, seed=1)
  c, ys = tg.vmap(lambda c0: lax.scan(_body, c0, xs))(c0)
  want = [_np_scan(_np_body, c.astype(np.float64), xs.astype(np.float64)) for c in c0]
  close(c, [w[0] for w in want])
  close(ys, [w[1] for w in want])


def test_vmap_scan_xs_on_other_axis_and_out_axes():
  xs, c0 = rand(4, 3, 2), rand(3, 2, seed=1)
  f = lambda c0, xs: lax.scan(_body, c0, xs)
  c, ys = tg.vmap(f, in_axes=(0, 1), out_axes=(0, 1))(c0, xs)
  want = [_np_scan(_np_body, c0[b].astype(np.float64), xs[:, b].astype(np.float64)) for b in range(3)]
  close(c, [w[0] for w in want])
  close(ys, np.stack([w[1] for w in want], 1))


def test_vmap_scan_closure_over_batched_value():
  ws, xs = rand(3, seed=2), rand(5, seed=3)

  def f(w):
    return lax.scan(lambda c, x: (c * w + x, c), np.float32(0.0), xs)

  c, ys = tg.vmap(f)(ws)
  for b, w in enumerate(ws.astype(np.float64)):
    cw, yw = _np_scan(lambda c, x: (c * w + x, c), 0.0, xs.astype(np.float64))
    close(c[b], cw)
    close(ys[b], yw)


def test_vmap_grad_scan():
  xs = rand(3, 5)
  want = [fd(lambda x: _np_scan_loss(x, 0.7), x) for x in xs]
  close(tg.vmap(tg.grad(lambda x: _scan_loss(x, 0.7)))(xs), want, rtol=1e-3)


def test_vmap_grad_cond_batched_predicate():
  xs = np.array([-1.0, 0.5, 2.0], np.float32)
  g = tg.vmap(tg.grad(lambda x: lax.cond(x > 0, tnp.sin, lambda a: a**3, x)))(xs)
  close(g, [np.cos(x) if x > 0 else 3 * x**2 for x in xs.astype(np.float64)])


# ---- jit and vmap in every order, against a numpy loop per element (in float32, so step counts agree exactly)

def _newton(a):
  x, n = a, np.int32(0)
  while n < 20: x, n = (x + a / x) / np.float32(2), n + 1
  return x


def _newton_tol(a):
  x, n = a, np.int32(0)
  while abs(x * x - a) > np.float32(1e-4) * a: x, n = (x + a / x) / np.float32(2), n + 1
  return x, n


def _horner(a):
  c = np.float32(1)
  for i in range(5): c = c * a + np.float32(i)
  return c


def _halvings(a):
  c = np.float32(1)
  for _ in range(int(a * np.float32(2))): c = c * np.float32(0.5) + a
  return c


def _np_decay(a):
  c, ys = np.float32(0), []
  for t in np.arange(4, dtype=np.float32):
    ys.append(c)
    c = c * np.float32(0.5) + t * a
  return c, np.array(ys)


LOOPS = {   # (function of one scalar, the same as a numpy loop)
  "while_count": (lambda a: lax.while_loop(lambda c: c[1] < 20, lambda c: ((c[0] + a / c[0]) / 2, c[1] + 1), (a, 0))[0],
                  _newton),
  "while_batched_pred": (lambda a: lax.while_loop(lambda c: tnp.abs(c[0] * c[0] - a) > 1e-4 * a,
                                                  lambda c: ((c[0] + a / c[0]) / 2, c[1] + 1), (a, 0)), _newton_tol),
  "fori_static": (lambda a: lax.fori_loop(0, 5, lambda i, c: c * a + i, np.float32(1)), _horner),
  "fori_batched_bound": (lambda a: lax.fori_loop(0, (a * 2).astype(tnp.int32), lambda i, c: c * 0.5 + a, np.float32(1)),
                         _halvings),
  "scan": (lambda a: lax.scan(lambda c, t: (c * 0.5 + t * a, c), np.float32(0), tnp.arange(4.0)), _np_decay),
}

COMPOSED = {   # (transform of a scalar function, rank of its batched argument)
  "jit(vmap)": (lambda f: tg.jit(tg.vmap(f)), 1),
  "vmap(jit)": (lambda f: tg.vmap(tg.jit(f)), 1),
  "jit(vmap(vmap))": (lambda f: tg.jit(tg.vmap(tg.vmap(f))), 2),
  "vmap(jit(vmap))": (lambda f: tg.vmap(tg.jit(tg.vmap(f))), 2),
  "vmap(vmap(jit))": (lambda f: tg.vmap(tg.vmap(tg.jit(f))), 2),
}


def _avx2_host() -> bool:
  try:
    return platform.machine() == "x86_64" and "avx2" in open("/proc/cpuinfo").read().split()
  except OSError:
    return False


@pytest.fixture(params=["native", "x86-64-v3"])
def cpu_target(request, monkeypatch):
  """The -march the cpu backend compiles for: this host's, and (on a host with AVX2) one with AVX2 but no AVX-512."""
  if request.param != "native":
    if tg.default_backend() != "cpu" or not _avx2_host(): pytest.skip("needs the cpu backend on an x86-64 host with AVX2")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", request.param)
  return request.param


@pytest.mark.parametrize("how", COMPOSED)
@pytest.mark.parametrize("loop", LOOPS)
def test_jit_and_vmap_of_loops_against_numpy(loop, how, cpu_target):
  f, f_np = LOOPS[loop]
  transform, rank = COMPOSED[how]
  xs = np.arange(1, 13, dtype=np.float32).reshape(3, 4)[0 if rank == 1 else slice(None)] / np.float32(1.5)
  got = tg.tree.leaves(transform(f)(xs))
  per = [tg.tree.leaves(f_np(x)) for x in xs.reshape(-1)]
  for k, g in enumerate(got):
    want = np.stack([p[k] for p in per]).reshape(g.shape)
    np.testing.assert_allclose(np.asarray(g), want, rtol=ulps(8), err_msg=f"{how} of {loop}, output {k}")


# ---- the finite-difference and slice-and-stack oracles (f in float64, so inits follow x's dtype)

def _nested_scan(x):
  def outer(c, xt):
    d, _ = lax.scan(lambda d, t: (tnp.sin(d * t + c), None), c, x)
    return d, d * xt
  c, ys = lax.scan(outer, x[0], x)
  return c + ys.sum()


CF = {
  "scan": lambda x: _scan_loss(x, 0.7),
  "scan_reverse": lambda x: lax.scan(lambda c, t: (tnp.cos(c) * t, c * t), x[0], x[1:], reverse=True)[1].sum(),
  "scan_nested": _nested_scan,
  "cond": lambda x: lax.cond(x.sum() > 0, lambda v: tnp.sin(v).prod(), lambda v: (v * v).sum(), x),
  "switch": lambda x: lax.switch(2, [tnp.sum, lambda v: tnp.exp(v).sum(), lambda v: (v * tnp.tanh(v)).sum()], x),
  "select": lambda x: lax.select(x > 0.1, x * x, tnp.sin(x)).sum(),
  "fori_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: c * tnp.cos(x[i]) + x[i] ** 2, tnp.ones_like(x[0])),
}


@pytest.mark.parametrize("name", CF)
def test_oracle_grads(name):
  check_grads(CF[name], (rand(4, seed=11),), order=2, eps=1e-5, rtol=1e-4, atol=1e-6)


def test_oracle_grads_while_loop_forward_only():
  f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, tnp.sin(c[1]) * x), (0, x))[1]
  check_grads(f, (rand(3, seed=12).astype(np.float64),), order=2, modes=("fwd",), eps=1e-5, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", CF)
def test_oracle_vmap(name):
  check_vmap(CF[name], (rand(3, 4, seed=13),))
  check_vmap(tg.grad(CF[name]), (rand(3, 4, seed=13),), rtol=ulps(840), atol=ulps(84))


def test_oracle_vmap_while_loop():
  f = lambda x: lax.while_loop(lambda c: c.sum() < 8.0, lambda c: c * 1.3 + 0.1, x)
  check_vmap(f, (np.abs(rand(5, 2, seed=14)) * 4,))
  check_vmap(f, (np.abs(rand(2, 5, seed=14)) * 4,), in_axes=1, out_axes=1)


# ---- stop_gradient

def test_stop_gradient_value_and_grad():
  x = rand(3)
  close(lax.stop_gradient(x), x)
  close(tg.grad(lambda x: (x * lax.stop_gradient(x)).sum())(x), x)
  close(tg.grad(lambda x: lax.stop_gradient(x * x).sum())(x), np.zeros(3))
  close(tg.grad(lambda x: (x + lax.stop_gradient({"a": x})["a"] ** 2).sum())(x), np.ones(3))


def test_stop_gradient_under_jvp():
  out, tan = tg.jvp(lambda x: lax.stop_gradient(x) ** 2 + x, (np.float32(2.0),), (np.float32(1.0),))
  close((out, tan), (6.0, 1.0))


def test_stop_gradient_under_vmap():
  xs = rand(4, 2)
  close(tg.vmap(lax.stop_gradient)(xs), xs)
  g = tg.vmap(tg.grad(lambda x: (x * lax.stop_gradient(tnp.sin(x))).sum()))(xs)
  close(g, np.sin(xs.astype(np.float64)))
