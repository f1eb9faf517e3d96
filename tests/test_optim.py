"""tracegrad.optim against optax's update rules written out in numpy, over several steps, eagerly and jitted."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import optim
from oracles import ulps

rng = np.random.default_rng(0)
P = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": rng.normal(size=2).astype(np.float32)}
GRADS = [{k: rng.normal(size=v.shape).astype(np.float32) for k, v in P.items()} for _ in range(5)]


def _norm(x): return np.sqrt(np.sum(x * x))


def _sgd(lr, momentum=None, nesterov=False):
  def run(params, grads):
    t = {k: 0 * v for k, v in params.items()}
    for g in grads:
      if momentum is None: u = g
      else:
        t = {k: g[k] + momentum * t[k] for k in g}
        u = {k: g[k] + momentum * t[k] for k in g} if nesterov else t
      params = {k: params[k] - lr * u[k] for k in params}
    return params
  return run


def _adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, trust=False):
  """Adam (with decoupled weight decay; trust: each leaf's step scaled by |param| / |step|, LAMB)."""
  def run(params, grads):
    mu = {k: 0 * v for k, v in params.items()}
    nu = {k: 0 * v for k, v in params.items()}
    for i, g in enumerate(grads, 1):
      mu = {k: (1 - b1) * g[k] + b1 * mu[k] for k in g}
      nu = {k: (1 - b2) * g[k] ** 2 + b2 * nu[k] for k in g}
      u = {k: (mu[k] / (1 - b1 ** i)) / (np.sqrt(nu[k] / (1 - b2 ** i)) + eps) + wd * params[k] for k in g}
      if trust: u = {k: u[k] * (_norm(params[k]) / _norm(u[k])) for k in u}
      lr_i = lr(i - 1) if callable(lr) else lr
      params = {k: params[k] - lr_i * u[k] for k in params}
    return params
  return run


def _rmsprop(lr, decay=0.9, eps=1e-8, centered=False):
  def run(params, grads):
    nu = {k: 0 * v for k, v in params.items()}
    mu = {k: 0 * v for k, v in params.items()}
    for g in grads:
      nu = {k: (1 - decay) * g[k] ** 2 + decay * nu[k] for k in g}
      mu = {k: (1 - decay) * g[k] + decay * mu[k] for k in g}
      params = {k: params[k] - lr * g[k] / np.sqrt(nu[k] - (mu[k] ** 2 if centered else 0) + eps) for k in params}
    return params
  return run


def _adagrad(lr, init=0.1, eps=1e-7):
  def run(params, grads):
    acc = {k: 0 * v + init for k, v in params.items()}
    for g in grads:
      acc = {k: acc[k] + g[k] ** 2 for k in g}
      params = {k: params[k] - lr * g[k] / np.sqrt(acc[k] + eps) for k in params}
    return params
  return run


def _lars(lr, wd=0.01, tc=0.001, momentum=0.9):
  def run(params, grads):
    t = {k: 0 * v for k, v in params.items()}
    for g in grads:
      u = {k: g[k] + wd * params[k] for k in g}
      u = {k: u[k] * tc * _norm(params[k]) / _norm(u[k]) for k in u}
      t = {k: -lr * u[k] + momentum * t[k] for k in u}
      params = {k: params[k] + t[k] for k in params}
    return params
  return run


CASES = {
  "rmsprop": (optim.rmsprop(1e-2), _rmsprop(1e-2)),
  "rmsprop_centered": (optim.rmsprop(1e-2, centered=True), _rmsprop(1e-2, centered=True)),
  "adagrad": (optim.adagrad(0.1), _adagrad(0.1)),
  "lamb": (optim.lamb(1e-2, weight_decay=0.01), _adam(1e-2, eps=1e-6, wd=0.01, trust=True)),
  "lars": (optim.lars(0.5, weight_decay=0.01), _lars(0.5)),
  "sgd": (optim.sgd(0.1), _sgd(0.1)),
  "momentum": (optim.sgd(0.1, momentum=0.9), _sgd(0.1, 0.9)),
  "nesterov": (optim.sgd(0.1, momentum=0.9, nesterov=True), _sgd(0.1, 0.9, True)),
  "adam": (optim.adam(1e-2), _adam(1e-2)),
  "adamw": (optim.adamw(1e-2, weight_decay=0.1), _adam(1e-2, wd=0.1)),
  "adam_schedule": (optim.adam(optim.linear_schedule(1e-2, 0.0, 4)), _adam(lambda c: 1e-2 * (1 - min(c, 4) / 4))),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("jit", [False, True])
def test_updates_over_several_steps(name, jit):
  opt, ref = CASES[name]
  step = lambda params, state, g: (lambda u, s: (optim.apply_updates(params, u), s))(*opt.update(g, state, params))
  if jit: step = tg.jit(step)
  params, state = tg.tree.map(tnp.asarray, P), opt.init(tg.tree.map(tnp.asarray, P))
  for g in GRADS: params, state = step(params, state, g)
  want = ref({k: v.astype(np.float64) for k, v in P.items()}, [{k: v.astype(np.float64) for k, v in g.items()} for g in GRADS])
  for k in P: np.testing.assert_allclose(np.asarray(params[k]), want[k], rtol=2e-5, atol=2e-6)
  assert params["w"].dtype == tnp.float32


def test_clip_by_global_norm_and_chain():
  g = {"a": np.array([3.0, 4.0], np.float32), "b": np.array([0.0], np.float32)}
  opt = optim.chain(optim.clip_by_global_norm(1.0), optim.scale(-1.0))
  u, _ = opt.update(g, opt.init(g))
  np.testing.assert_allclose(np.asarray(u["a"]), [-0.6, -0.8], rtol=ulps(8))
  clip = optim.clip_by_global_norm(10.0)
  u, _ = clip.update(g, clip.init(g))
  np.testing.assert_allclose(np.asarray(u["a"]), [3.0, 4.0])
  assert float(optim.global_norm(g)) == 5.0


def test_adamw_mask():
  p = {"w": np.ones(2, np.float32), "b": np.ones(2, np.float32)}
  opt = optim.adamw(0.1, weight_decay=0.5, mask={"w": True, "b": False})
  u, _ = opt.update({"w": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}, opt.init(p), p)
  np.testing.assert_allclose(np.asarray(u["w"]), -0.05)
  np.testing.assert_allclose(np.asarray(u["b"]), 0.0)


def test_schedules():
  lin = optim.linear_schedule(1.0, 0.1, 10, transition_begin=2)
  np.testing.assert_allclose([float(lin(c)) for c in (0, 2, 7, 12, 50)], [1.0, 1.0, 0.55, 0.1, 0.1], rtol=ulps(8))
  cos = optim.cosine_decay_schedule(2.0, 10, alpha=0.1)
  np.testing.assert_allclose([float(cos(c)) for c in (0, 5, 10, 20)],
                             [2.0, 2.0 * (0.9 * 0.5 + 0.1), 0.2, 0.2], rtol=ulps(8))
  exp = optim.exponential_decay(1.0, 4, 0.5, staircase=True)
  np.testing.assert_allclose([float(exp(c)) for c in (0, 3, 4, 9)], [1.0, 1.0, 0.5, 0.25])
  w = optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 14, end_value=0.1)
  want = [c / 4 if c < 4 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(c - 4, 10) / 10)) for c in range(16)]
  np.testing.assert_allclose([float(w(c)) for c in range(16)], want, rtol=ulps(84), atol=ulps(1))
  assert float(optim.constant_schedule(0.3)(100)) == pytest.approx(0.3, rel=ulps(1))


OPTAX_CASES = {
  "sgd": lambda o: o.sgd(0.1),
  "sgd_momentum": lambda o: o.sgd(0.1, momentum=0.9),
  "sgd_nesterov": lambda o: o.sgd(0.1, momentum=0.9, nesterov=True),
  "adam": lambda o: o.adam(1e-2),
  "adamw": lambda o: o.adamw(1e-2, weight_decay=0.1),
  "lamb": lambda o: o.lamb(1e-2, weight_decay=0.01),
  "lars": lambda o: o.lars(0.1, weight_decay=1e-3),
  "rmsprop": lambda o: o.rmsprop(1e-2),
  "rmsprop_centered_momentum": lambda o: o.rmsprop(1e-2, centered=True, momentum=0.9),
  "adagrad": lambda o: o.adagrad(0.1),
  "clip_adam": lambda o: o.chain(o.clip_by_global_norm(1.0), o.adam(1e-2)),
  "warmup_cosine_adamw": lambda o: o.adamw(o.warmup_cosine_decay_schedule(0.0, 1e-2, 2, 5), weight_decay=0.05),
  "exponential_sgd": lambda o: o.sgd(o.exponential_decay(0.1, 2, 0.5), momentum=0.5),
  "linear_adam": lambda o: o.adam(o.linear_schedule(1e-2, 1e-3, 4)),
}


@pytest.mark.parametrize("name", OPTAX_CASES)
def test_matches_optax_itself(name):
  """The same five updates through optax and tracegrad.optim, built by the same expression."""
  optax = pytest.importorskip("optax")
  jnp = pytest.importorskip("jax.numpy")
  ref, ours = OPTAX_CASES[name](optax), OPTAX_CASES[name](optim)
  p_ref, p_ours = {k: jnp.asarray(v) for k, v in P.items()}, {k: tnp.asarray(v) for k, v in P.items()}
  s_ref, s_ours = ref.init(p_ref), ours.init(p_ours)
  for g in GRADS:
    u, s_ref = ref.update({k: jnp.asarray(v) for k, v in g.items()}, s_ref, p_ref)
    p_ref = optax.apply_updates(p_ref, u)
    u, s_ours = ours.update({k: tnp.asarray(v) for k, v in g.items()}, s_ours, p_ours)
    p_ours = optim.apply_updates(p_ours, u)
  for k in P:
    np.testing.assert_allclose(np.asarray(p_ours[k]), np.asarray(p_ref[k]), rtol=2e-5, atol=2e-6, err_msg=f"{name}: {k}")
