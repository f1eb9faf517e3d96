"""Transforms compose: each test function under every ordered pair of {grad, jvp, vmap, jit, jacfwd, jacrev},
against the same pair of reference operators (finite differences in float64, Python loops) applied to a numpy twin;
then random programs drawn by hypothesis."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import ulps

B = 2
H = 1e-4
W = np.array([[0.8, -0.3, 0.5], [0.2, 0.9, -0.6], [-0.4, 0.1, 0.7]])
A = W @ W.T + np.eye(3)
IDX = np.array([2, 0, 2])


def tangent(shape):
  """A fixed tangent direction for inputs of this shape."""
  return np.cos(np.arange(int(np.prod(shape))) * 1.7 + 0.3).reshape(shape)


def fd_jac(f, x):
  """d f / d x by central differences, shaped out + in."""
  cols = []
  for i in np.ndindex(x.shape):
    e = np.zeros_like(x)
    e[i] = H
    cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * H))
  out_shape = np.shape(cols[0])
  return np.moveaxis(np.stack(cols).reshape(x.shape + out_shape), list(range(x.ndim)), list(range(-x.ndim, 0)))


def _total(y): return y if y.ndim == 0 else y.sum()


# each transform as (on a tracegrad function, on a float64 numpy function); non-scalar outputs are summed for grad
TRANSFORMS = {
  "grad": (lambda f: tg.grad(lambda x: _total(f(x))), lambda f: lambda x: fd_jac(lambda x: np.sum(f(x)), x)),
  "jvp": (lambda f: lambda x: tg.jvp(f, (x,), (tangent(x.shape).astype(np.float32),))[1],
          lambda f: lambda x: (np.asarray(f(x + H * tangent(x.shape))) - f(x - H * tangent(x.shape))) / (2 * H)),
  "vmap": (tg.vmap, lambda f: lambda xs: np.stack([f(x) for x in xs])),
  "jit": (tg.jit, lambda f: f),
  "jacfwd": (tg.jacfwd, lambda f: lambda x: fd_jac(f, x)),
  "jacrev": (tg.jacrev, lambda f: lambda x: fd_jac(f, x)),
}


def _scan_t(x):
  c, ys = lax.scan(lambda c, xi: (tnp.sin(c) * xi + c, c * xi), np.float32(0.5), x)
  return c + ys.sum()


def _scan_n(x):
  c, acc = 0.5, 0.0
  for xi in x: c, acc = np.sin(c) * xi + c, acc + c * xi
  return c + acc


def _fori_t(x): return lax.fori_loop(0, 3, lambda i, c: c * tnp.tanh(x[i]) + x[i] * x[i], np.float32(1.0))


def _fori_n(x):
  c = 1.0
  for i in range(3): c = c * np.tanh(x[i]) + x[i] * x[i]
  return c


def _cond_t(x): return lax.cond(x.sum() > 0, lambda v: (v * v * v).sum(), lambda v: tnp.cos(v).sum(), x)
def _cond_n(x): return (x**3).sum() if x.sum() > 0 else np.cos(x).sum()


def _same(expr):
  """A (tracegrad, numpy) pair from one expression over a numpy-like module `m`."""
  return (lambda x: expr(tnp, x), lambda x: expr(np, x))


def _away_from_zero(x): return bool(np.all(np.abs(x) > 0.2))
def _distinct(x): return len(x) < 2 or bool(np.min(np.diff(np.sort(x))) > 0.05)


# name: (tracegrad f, numpy f, input shape, (low, high), validity of a drawn input)
FUNCS = {
  "poly": (*_same(lambda m, x: m.sum(x**3 - 2.0 * x**2 + 3.0 * x)), (3,), (-1.5, 1.5), None),
  "rational": (*_same(lambda m, x: x * m.sin(x) ** 2 / (1.0 + x * x)), (), (-2.0, 2.0), None),
  "log_sqrt": (*_same(lambda m, x: m.log(x) * m.sqrt(x) + 1.0 / x), (), (0.5, 2.0), None),
  "tanh_exp": (*_same(lambda m, x: m.sum(m.tanh(x) * m.exp(-x * x))), (3,), (-1.5, 1.5), None),
  "log_cos": (*_same(lambda m, x: m.sum(m.log(1.0 + x * x) * m.cos(x))), (3,), (-1.5, 1.5), None),
  "matmul": (*_same(lambda m, x: m.sum(m.tanh(m.matmul(W, x)) ** 2)), (3,), (-1.0, 1.0), None),
  "quadratic": (*_same(lambda m, x: m.dot(x, m.matmul(A, x)) - m.sum(x)), (3,), (-1.0, 1.0), None),
  "logsumexp": (*_same(lambda m, x: m.log(m.sum(m.exp(x)))), (3,), (-1.0, 1.0), None),
  "reductions": (*_same(lambda m, x: m.max(x) + m.mean(x * x) + m.prod(x)), (3,), (-1.0, 1.0), _distinct),
  "indexing": (*_same(lambda m, x: x[0] * x[2] + x[1] ** 2 + m.sum(x[IDX] ** 2) + m.sum(x[::-1] * m.arange(3.0))),
               (3,), (-1.0, 1.0), None),
  "where": (*_same(lambda m, x: m.sum(m.where(x > 0, x * x, m.sin(x)))), (3,), (-1.0, 1.0), _away_from_zero),
  "scan": (_scan_t, _scan_n, (3,), (-1.0, 1.0), None),
  "fori_loop": (_fori_t, _fori_n, (3,), (-1.0, 1.0), None),
  "cond": (_cond_t, _cond_n, (3,), (-1.0, 1.0), lambda x: abs(x.sum()) > 0.2),
}


def draw_input(name, batch_dims, seed=0):
  _, _, shape, (lo, hi), ok = FUNCS[name]
  rng = np.random.default_rng(seed)
  rows = []
  for _ in range(int(np.prod(batch_dims, dtype=int))):
    x = rng.uniform(lo, hi, shape)
    while ok is not None and not ok(x): x = rng.uniform(lo, hi, shape)
    rows.append(x)
  return np.stack(rows).reshape(tuple(batch_dims) + shape).astype(np.float32)


def check_composition(name, chain):
  """chain is outermost first; applies it to f and to its numpy twin and compares at one input."""
  tf, nf = FUNCS[name][:2]
  for t in reversed(chain):
    tf, nf = TRANSFORMS[t][0](tf), TRANSFORMS[t][1](nf)
  x = draw_input(name, [B] * chain.count("vmap"))
  want = np.asarray(nf(x.astype(np.float64)))
  got = np.asarray(tf(x))
  label = "(".join(chain) + f"({name}" + ")" * len(chain)
  assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
  assert got.dtype == np.float32, f"{label}: dtype {got.dtype}"
  scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
  np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4 * scale, err_msg=label)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("t", TRANSFORMS)
def test_single(t, name):
  check_composition(name, [t])


PAIRS = list(itertools.product(TRANSFORMS, repeat=2))


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("outer,inner", PAIRS, ids=[f"{o}-{i}" for o, i in PAIRS])
def test_pair(outer, inner, name):
  check_composition(name, [outer, inner])


TRIPLES = [("jit", "vmap", "grad"), ("vmap", "jacfwd", "jacrev"), ("grad", "jit", "vmap"), ("jvp", "vmap", "grad"),
           ("jacrev", "vmap", "jvp")]


@pytest.mark.parametrize("name", ["poly", "matmul", "indexing", "scan", "cond"])
@pytest.mark.parametrize("chain", TRIPLES, ids=["-".join(c) for c in TRIPLES])
def test_triple(chain, name):
  check_composition(name, list(chain))


@pytest.mark.parametrize("name", ["quadratic", "scan", "fori_loop", "logsumexp"])
def test_hessian(name):
  tf, nf = FUNCS[name][:2]
  x = draw_input(name, [])
  want = fd_jac(lambda x: fd_jac(nf, x), x.astype(np.float64))
  np.testing.assert_allclose(np.asarray(tg.hessian(tf)(x)), want, rtol=2e-3, atol=2e-4)


def test_hessian_of_quadratic_is_exact():
  x = draw_input("quadratic", [])
  np.testing.assert_allclose(np.asarray(tg.hessian(FUNCS["quadratic"][0])(x)), A + A.T, rtol=ulps(84),
                             atol=ulps(84))


def test_grad_of_grad_scalar():
  # d2/dx2 of x sin(x)^2 / (1 + x^2), against its analytic form
  x = 0.7
  f = FUNCS["rational"][0]
  s, c, q = np.sin(x), np.cos(x), 1 + x * x
  u, du, d2u = x * s * s, s * s + 2 * x * s * c, 4 * s * c + 2 * x * (c * c - s * s)
  d2 = d2u / q - 2 * du * 2 * x / q**2 - u * 2 / q**2 + u * 8 * x * x / q**3
  np.testing.assert_allclose(np.asarray(tg.grad(tg.grad(f))(np.float32(x))), d2, rtol=ulps(840))


# ---- random programs

OPS = {
  "sin": (1, lambda m, a: m.sin(a)),
  "cos": (1, lambda m, a: m.cos(a)),
  "tanh": (1, lambda m, a: m.tanh(a)),
  "half_square": (1, lambda m, a: 0.5 * a * a),
  "gauss": (1, lambda m, a: m.exp(-a * a)),
  "log1p_sq": (1, lambda m, a: m.log1p(a * a)),
  "neg": (1, lambda m, a: -a),
  "abs": (1, lambda m, a: m.abs(a)),
  "add": (2, lambda m, a, b: a + b),
  "sub": (2, lambda m, a, b: a - b),
  "mul": (2, lambda m, a, b: a * b),
  "div": (2, lambda m, a, b: a / (1.0 + b * b)),
  "hypot1": (2, lambda m, a, b: m.sqrt(a * a + b * b + 1.0)),
  "cumsum": (1, lambda m, a: m.cumsum(a)),
  "reverse": (1, lambda m, a: a[::-1]),
  "scale_mean": (2, lambda m, a, b: a * m.mean(b)),
}


@st.composite
def programs(draw):
  n_in = draw(st.integers(1, 3))
  steps = draw(st.lists(st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 20), st.integers(0, 20)),
                        min_size=1, max_size=5))
  seed = draw(st.integers(0, 2**16))
  return n_in, steps, seed


def run_program(m, steps, *xs):
  regs = list(xs)
  for name, i, j in steps:
    arity, fn = OPS[name]
    a, b = regs[i % len(regs)], regs[j % len(regs)]
    regs.append(fn(m, a) if arity == 1 else fn(m, a, b))
  return m.sum(regs[-1] * m.cos(m.arange(3.0)))


@settings(max_examples=15)
@given(programs())
def test_random_program(prog):
  n_in, steps, seed = prog
  xs = list(np.random.default_rng(seed).uniform(-1.0, 1.0, (n_in, 3)).astype(np.float32))
  xs64 = [x.astype(np.float64) for x in xs]
  f = lambda *a: run_program(tnp, steps, *a)
  nf = lambda *a: run_program(np, steps, *a)
  tol = dict(rtol=ulps(16800), atol=ulps(1680) * max(1.0, abs(float(nf(*xs64)))))
  np.testing.assert_allclose(np.asarray(f(*xs)), nf(*xs64), **tol)
  np.testing.assert_allclose(np.asarray(tg.jit(f)(*xs)), nf(*xs64), **tol)
  grads = tg.grad(f, argnums=tuple(range(n_in)))(*xs)
  for k in range(n_in):
    want = fd_jac(lambda v: nf(*xs64[:k], v, *xs64[k + 1:]), xs64[k])
    atol = 1e-3 * max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(np.asarray(grads[k]), want, rtol=2e-3, atol=atol, err_msg=f"d/dx{k} of {steps}")
  batch = [np.stack([x, x[::-1], x * 0.5]) for x in xs]
  want = [nf(*[b[r].astype(np.float64) for b in batch]) for r in range(3)]
  np.testing.assert_allclose(np.asarray(tg.vmap(f)(*batch)), want, **tol)
  in_axes = (0,) + (None,) * (n_in - 1)
  want = [nf(batch[0][r].astype(np.float64), *xs64[1:]) for r in range(3)]
  np.testing.assert_allclose(np.asarray(tg.vmap(f, in_axes=in_axes)(batch[0], *xs[1:])), want, **tol)
