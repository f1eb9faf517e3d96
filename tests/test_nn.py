"""tracegrad.nn and tracegrad.scipy.special against float64 numpy formulas, with gradients (finite differences,
both modes) and vmap."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.ir import Ops
from oracles import assert_close, check, check_grads, check_vmap, ulps

X = np.array([-30.0, -4.0, -1.5, -0.3, 0.0, 0.2, 1.0, 2.5, 7.0, 40.0], np.float32)
_erf = np.vectorize(math.erf)


def _sig(x): return 1 / (1 + np.exp(-x))
def _lse(x, axis): m = x.max(axis, keepdims=True); return np.squeeze(np.log(np.exp(x - m).sum(axis, keepdims=True)) + m, axis)


FUNCS = {
  "relu": (tg.nn.relu, lambda x: np.maximum(x, 0)),
  "relu6": (tg.nn.relu6, lambda x: np.clip(x, 0, 6)),
  "sigmoid": (tg.nn.sigmoid, _sig),
  "softplus": (tg.nn.softplus, lambda x: np.logaddexp(x, 0)),
  "log_sigmoid": (tg.nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0)),
  "silu": (tg.nn.silu, lambda x: x * _sig(x)),
  "gelu": (tg.nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
  "gelu_exact": (lambda x: tg.nn.gelu(x, approximate=False), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
  "elu": (tg.nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
  "leaky_relu": (tg.nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
  "hard_tanh": (tg.nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
  "erf": (tg.scipy.special.erf, _erf),
}


@pytest.mark.parametrize("name", FUNCS)
def test_activations(name):
  f, ref = FUNCS[name]
  # atol: 1 + tanh cancels
  check(f, lambda x: ref(x.astype(np.float64)).astype(np.float32), X, rtol=ulps(16), atol=ulps(8))
  check_grads(f, (np.array([-3.3, -1.7, -0.35, 0.2, 0.7, 2.5], np.float32),), modes=("fwd", "rev"))   # no kinks
  check_vmap(f, (X.reshape(2, 5),))


def test_softmax_family():
  x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32) * 4
  x64 = x.astype(np.float64)
  e = np.exp(x64 - x64.max(-1, keepdims=True))
  np.testing.assert_allclose(np.asarray(tg.nn.softmax(x)), e / e.sum(-1, keepdims=True), rtol=ulps(84))
  np.testing.assert_allclose(np.asarray(tg.nn.log_softmax(x, axis=0)), x64 - _lse(x64, 0)[None], rtol=ulps(84),
                             atol=ulps(8))
  np.testing.assert_allclose(np.asarray(tg.nn.logsumexp(x, axis=1)), _lse(x64, 1), rtol=ulps(8))
  assert tg.nn.logsumexp(x, axis=1, keepdims=True).shape == (3, 1)
  assert float(tg.nn.logsumexp(tnp.asarray([-np.inf, -np.inf]))) == -np.inf
  mask = np.array([True, False, True, True, False])
  np.testing.assert_allclose(np.asarray(tg.nn.softmax(x[0], where=mask))[~mask], 0)
  check_grads(lambda v: tg.nn.log_softmax(v)[..., 1], (x,), modes=("fwd", "rev"))
  s = np.asarray(tg.nn.standardize(x, axis=1))
  np.testing.assert_allclose(s.mean(1), 0, atol=ulps(84))
  np.testing.assert_allclose(s.var(1), 1, rtol=ulps(8400))


def test_one_hot():
  got = np.asarray(tg.nn.one_hot(tnp.asarray([0, 2, 5, -1]), 3))
  np.testing.assert_array_equal(got, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
  assert got.dtype == np.float32 and tg.nn.one_hot(tnp.asarray([[1]]), 4, axis=0).shape == (4, 1, 1)
  with pytest.raises(ValueError, match="num_classes"):
    tg.nn.one_hot(tnp.asarray([1]), -2)


def test_erf_float64_is_exact_to_a_few_ulp():
  from oracles import x64
  xs = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1e-300, 5e-324, 6.0, 30.0, -np.inf, np.inf]])
  with x64():
    got = np.asarray(tg.scipy.special.erf(tnp.asarray(xs)))
    assert got.dtype == np.float64
    jitted = np.asarray(tg.jit(tg.scipy.special.erf)(tnp.asarray(xs)))
  want = _erf(xs)
  np.testing.assert_allclose(got, want, rtol=ulps(9, "float64"), atol=0)
  np.testing.assert_allclose(jitted, want, rtol=ulps(9, "float64"), atol=0)
  assert np.signbit(got[xs == 0]).tolist() == np.signbit(xs[xs == 0]).tolist()


def test_erf_dtypes():
  assert tg.scipy.special.erf(tnp.asarray([0.5], tnp.float16)).dtype == tnp.float16
  assert tg.scipy.special.erf(tnp.asarray([1])).dtype == tnp.float32
  assert np.isnan(np.asarray(tg.scipy.special.erf(np.float32(np.nan))))


# ---- named composites: each function is one node of a traced graph ----
XS = np.random.default_rng(3).normal(size=(3, 5)).astype(np.float32) * 3
NAMED = {
  "softmax": lambda x: tg.nn.softmax(x),
  "logsumexp": lambda x: tg.nn.logsumexp(x, axis=1),
  "log_softmax": lambda x: tg.nn.log_softmax(x, axis=0),
  "gelu": lambda x: tg.nn.gelu(x, approximate=False),
  "softplus": tg.nn.softplus,
  "standardize": lambda x: tg.nn.standardize(x, axis=[0, 1]),
  "erf": tg.scipy.special.erf,
}


@pytest.mark.parametrize("name", NAMED)
def test_traced_as_one_named_node(name):
  f = NAMED[name]
  text = str(tg.make_graph(f)(XS))
  assert f" = {name} a\n" in text and len(text.splitlines()) < 8, text
  eager = f(tnp.asarray(XS))
  assert_close(tg.jit(f)(XS), eager, rtol=ulps(8), atol=ulps(8))
  check_vmap(f, (XS.reshape(5, 3, 1) if name in ("logsumexp", "standardize") else XS,))
  check_grads(lambda x: f(x) * XS[0, 0], (XS,), modes=("fwd", "rev"))


def test_named_nodes_take_masks_and_statistics():
  mask = XS > 0
  text = str(tg.make_graph(lambda x, m: tg.nn.softmax(x, where=m))(XS, mask))
  assert " = softmax a b\n" in text, text
  got = tg.jit(lambda x, m: tg.nn.softmax(x, where=m))(XS, mask)
  assert_close(got, tg.nn.softmax(XS, where=mask), rtol=ulps(8), atol=ulps(8))
  assert_close(tg.jit(lambda x: tg.nn.logsumexp(x, axis=0, keepdims=True, where=mask))(XS),
               tg.nn.logsumexp(XS, axis=0, keepdims=True, where=mask), rtol=ulps(8), atol=ulps(8))
  mean, var = XS.mean(0), XS.var(0)
  f = lambda x, v: tg.nn.standardize(x, axis=0, mean=mean, variance=v, epsilon=0.5)
  assert_close(tg.jit(f)(XS, var), f(XS, var), rtol=ulps(8), atol=ulps(8))
  assert " = standardize a " in str(tg.make_graph(f)(XS, var))


def test_named_nodes_keep_dtypes_and_errors():
  f16 = tnp.asarray(XS, tnp.float16)
  for f in NAMED.values():
    assert tg.jit(f)(f16).dtype == f(f16).dtype
  assert tg.jit(tg.scipy.special.erf)(tnp.asarray([1])).dtype == tnp.float32
  assert tg.jit(tg.nn.softplus)(2.0).weak_type == tg.nn.softplus(2.0).weak_type
  for run in (lambda f: f, tg.jit):
    with pytest.raises(ValueError, match="axis"):
      run(lambda x: tg.nn.softmax(x, axis=2))(XS)


@pytest.mark.parametrize("name,scale,fan", [("glorot_uniform", 1, "avg"), ("glorot_normal", 1, "avg"),
                                             ("lecun_uniform", 1, "in"), ("lecun_normal", 1, "in"),
                                             ("he_uniform", 2, "in"), ("he_normal", 2, "in")])
def test_variance_scaling_initializers(name, scale, fan):
  shape = (3, 3, 32, 48)   # HWIO: receptive field 9
  fan_in, fan_out = 9 * 32, 9 * 48
  want = math.sqrt(scale / (fan_in if fan == "in" else (fan_in + fan_out) / 2))
  w = np.asarray(getattr(tg.nn.initializers, name)()(tg.random.key(1), shape))
  assert w.shape == shape and w.dtype == np.float32 and abs(w.std() / want - 1) < 0.03
  assert abs(w.mean()) < 0.05 * want


def test_simple_initializers():
  k = tg.random.key(0)
  init = tg.nn.initializers
  assert np.all(np.asarray(init.zeros(k, (2, 3))) == 0) and np.all(np.asarray(init.ones(k, (2,))) == 1)
  assert np.all(np.asarray(init.constant(0.5)(k, (4,))) == 0.5)
  u = np.asarray(init.uniform(0.1)(k, (1000,)))
  assert u.min() >= 0 and u.max() < 0.1
  assert abs(np.asarray(init.normal(0.2)(k, (4000,))).std() - 0.2) < 0.01
  t = np.asarray(init.truncated_normal(0.5)(k, (4000,)))
  assert np.abs(t).max() <= 1.0
  with pytest.raises(ValueError, match="mode"):
    init.variance_scaling(1.0, "fan_max", "normal")


@pytest.mark.parametrize("fn", [tg.nn.softmax, tg.nn.log_softmax, tg.nn.logsumexp])
def test_the_max_shift_is_not_differentiated(fn):
  # its derivative cancels exactly, as jax.nn's stop_gradient on the max says: no compare-with-max in the gradient
  x = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float32)
  g = tg.make_graph(tg.grad(lambda v: (fn(v) * v).sum()))(x)
  assert Ops.CMPEQ not in {u.op for u in g.nodes()}
  if fn is tg.nn.softmax: assert len(tg.jit(tg.grad(lambda v: (fn(v) * v).sum())).lower(x).compile().kernels) <= 4
