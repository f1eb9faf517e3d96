"""Gradient transformations as optax's: each is init(params) -> state and update(updates, state, params) ->
(updates, state), pure functions over pytrees, so they jit and vmap.

>>> opt = tracegrad.optim.sgd(0.1, momentum=0.9)
>>> state = opt.init(tnp.zeros(2))
>>> opt.update(tnp.ones(2), state)[0]
Array([-0.1, -0.1], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import numpy as tnp
from .. import tree as tree_util


class GradientTransformation(NamedTuple):
  init: Callable
  update: Callable


class EmptyState(NamedTuple):
  pass


class TraceState(NamedTuple):
  trace: Any


class ScaleByAdamState(NamedTuple):
  count: Any
  mu: Any
  nu: Any


class ScaleByScheduleState(NamedTuple):
  count: Any


def _zeros(params): return tree_util.map(tnp.zeros_like, params)


def identity() -> GradientTransformation:
  """Updates unchanged."""
  return GradientTransformation(lambda params: EmptyState(), lambda updates, state, params=None: (updates, state))


def chain(*transforms: GradientTransformation) -> GradientTransformation:
  """The transforms applied in order; the state is the tuple of theirs."""
  def init(params): return tuple(t.init(params) for t in transforms)

  def update(updates, state, params=None):
    new = []
    for t, s in zip(transforms, state):
      updates, s = t.update(updates, s, params)
      new.append(s)
    return updates, tuple(new)
  return GradientTransformation(init, update)


def scale(step_size) -> GradientTransformation:
  """Updates times step_size."""
  return GradientTransformation(lambda params: EmptyState(),
                                lambda updates, state, params=None: (tree_util.map(lambda u: u * step_size, updates),
                                                                     state))


def scale_by_schedule(step_size_fn: Callable) -> GradientTransformation:
  """Updates times step_size_fn(count), count the number of updates before this one."""
  def update(updates, state, params=None):
    s = step_size_fn(state.count)
    return tree_util.map(lambda u: (u * s).astype(u.dtype), updates), ScaleByScheduleState(state.count + 1)
  return GradientTransformation(lambda params: ScaleByScheduleState(tnp.zeros((), tnp.int32)), update)


def scale_by_learning_rate(learning_rate, flip_sign: bool = True) -> GradientTransformation:
  """Updates times -learning_rate (a number or a schedule)."""
  m = -1 if flip_sign else 1
  if callable(learning_rate): return scale_by_schedule(lambda count: m * learning_rate(count))
  return scale(m * learning_rate)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
  """Momentum: trace = updates + decay * trace; the update is the trace (nesterov: updates + decay * trace)."""
  def update(updates, state, params=None):
    t = tree_util.map(lambda g, t: g + decay * t, updates, state.trace)
    out = tree_util.map(lambda g, t: g + decay * t, updates, t) if nesterov else t
    return out, TraceState(t)
  return GradientTransformation(lambda params: TraceState(_zeros(params)), update)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0) -> GradientTransformation:
  """Adam's rescaling: bias-corrected first moment over the root of the bias-corrected second moment."""
  def init(params): return ScaleByAdamState(tnp.zeros((), tnp.int32), _zeros(params), _zeros(params))

  def update(updates, state, params=None):
    mu = tree_util.map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.mu)
    nu = tree_util.map(lambda g, v: (1 - b2) * g * g + b2 * v, updates, state.nu)
    count = state.count + 1
    c1, c2 = 1 - b1 ** count.astype(tnp.float32), 1 - b2 ** count.astype(tnp.float32)
    out = tree_util.map(lambda m, v: (m / c1) / (tnp.sqrt(v / c2 + eps_root) + eps), mu, nu)
    return out, ScaleByAdamState(count, mu, nu)
  return GradientTransformation(init, update)


def add_decayed_weights(weight_decay: float = 0.0, mask=None) -> GradientTransformation:
  """Updates plus weight_decay * params (where mask, a pytree of bools or a function of params, is true)."""
  def update(updates, state, params=None):
    if params is None: raise ValueError("add_decayed_weights: update needs params")
    m = mask(params) if callable(mask) else mask
    if m is None: return tree_util.map(lambda u, p: u + weight_decay * p, updates, params), state
    return tree_util.map(lambda u, p, k: u + weight_decay * p if k else u, updates, params, m), state
  return GradientTransformation(lambda params: EmptyState(), update)


def global_norm(updates):
  """The l2 norm of every leaf together."""
  return tnp.sqrt(sum(tnp.sum(tnp.square(u)) for u in tree_util.leaves(updates)))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
  """Updates scaled down so that their global norm is at most max_norm."""
  def update(updates, state, params=None):
    g = global_norm(updates)
    keep = g < max_norm
    return tree_util.map(lambda u: tnp.where(keep, u, (u / g.astype(u.dtype)) * max_norm), updates), state
  return GradientTransformation(lambda params: EmptyState(), update)


def sgd(learning_rate, momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
  """Stochastic gradient descent, with momentum (and Nesterov's) when asked, as optax.sgd."""
  return chain(trace(momentum, nesterov) if momentum is not None else identity(), scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0):
  """Adam, as optax.adam."""
  return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
          weight_decay: float = 1e-4, mask=None) -> GradientTransformation:
  """Adam with decoupled weight decay, as optax.adamw."""
  return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
               scale_by_learning_rate(learning_rate))


class ScaleByRmsState(NamedTuple):
  mu: Any
  nu: Any


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 centered: bool = False) -> GradientTransformation:
  """Updates over the root of a moving mean of their squares (centered: of their variance), eps inside the root."""
  def init(params): return ScaleByRmsState(_zeros(params), tree_util.map(lambda p: tnp.full_like(p, initial_scale), params))

  def update(updates, state, params=None):
    nu = tree_util.map(lambda g, n: (1 - decay) * g * g + decay * n, updates, state.nu)
    mu = tree_util.map(lambda g, m: (1 - decay) * g + decay * m, updates, state.mu) if centered else state.mu
    var = tree_util.map(lambda n, m: n - m * m, nu, mu) if centered else nu
    return tree_util.map(lambda g, v: g / tnp.sqrt(v + eps), updates, var), ScaleByRmsState(mu, nu)
  return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
  sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: float = 0.1, eps: float = 1e-7) -> GradientTransformation:
  """Updates over the root of the running sum of their squares (AdaGrad)."""
  def init(params): return ScaleByRssState(tree_util.map(lambda p: tnp.full_like(p, initial_accumulator_value), params))

  def update(updates, state, params=None):
    s = tree_util.map(lambda g, a: a + g * g, updates, state.sum_of_squares)
    out = tree_util.map(lambda g, a: tnp.where(a > 0, g / tnp.sqrt(a + eps), 0.0), updates, s)
    return out, ScaleByRssState(s)
  return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm: float = 0.0, trust_coefficient: float = 1.0, eps: float = 0.0,
                         mask=None) -> GradientTransformation:
  """Each leaf's update times trust_coefficient * |param| / (|update| + eps) (1 where either norm is 0), as LAMB
  and LARS scale layers; mask (a pytree of bools) limits it to some leaves."""
  def leaf(u, p, on=True):
    if not on: return u
    pn = tnp.maximum(tnp.sqrt(tnp.sum(tnp.square(p))), min_norm)
    un = tnp.maximum(tnp.sqrt(tnp.sum(tnp.square(u))), min_norm)
    ratio = tnp.where((pn == 0) | (un == 0), 1.0, trust_coefficient * pn / (un + eps))
    return u * ratio.astype(u.dtype)

  def update(updates, state, params=None):
    if params is None: raise ValueError("scale_by_trust_ratio: update needs params")
    if mask is None or mask is True: return tree_util.map(leaf, updates, params), state
    return tree_util.map(leaf, updates, params, mask), state
  return GradientTransformation(lambda params: EmptyState(), update)


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0, centered: bool = False,
            momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
  """RMSProp, as optax.rmsprop."""
  return chain(scale_by_rms(decay, eps, initial_scale, centered), scale_by_learning_rate(learning_rate),
               trace(momentum, nesterov) if momentum is not None else identity())


def adagrad(learning_rate, initial_accumulator_value: float = 0.1, eps: float = 1e-7) -> GradientTransformation:
  """AdaGrad, as optax.adagrad."""
  return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6, eps_root: float = 0.0,
         weight_decay: float = 0.0, mask=None) -> GradientTransformation:
  """LAMB, as optax.lamb: Adam with weight decay, each layer's step scaled by its trust ratio."""
  return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask), scale_by_trust_ratio(),
               scale_by_learning_rate(learning_rate))


def lars(learning_rate, weight_decay: float = 0.0, weight_decay_mask=None, trust_coefficient: float = 0.001,
         eps: float = 0.0, trust_ratio_mask=None, momentum: float = 0.9, nesterov: bool = False):
  """LARS, as optax.lars: weight decay, each layer's step scaled by its trust ratio, momentum."""
  return chain(add_decayed_weights(weight_decay, weight_decay_mask),
               scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps, mask=trust_ratio_mask),
               scale_by_learning_rate(learning_rate), trace(momentum, nesterov))


def apply_updates(params, updates):
  """params + updates, leaf by leaf, in each param's dtype."""
  return tree_util.map(lambda p, u: (tnp.asarray(p) + u).astype(tnp.asarray(p).dtype), params, updates)
