"""Optimizers as jax.example_libraries.optimizers: each is a triple (init_fun, update_fun, get_params) over pytrees
of parameters, with init_fun(params) -> state, update_fun(step, grads, state) -> state, get_params(state) -> params.
A step size is a number or a schedule, a function of the step index.

>>> opt_init, opt_update, get_params = sgd(0.5)
>>> state = opt_update(0, {"w": tnp.ones(2)}, opt_init({"w": tnp.zeros(2)}))
>>> get_params(state)
{'w': Array([-0.5, -0.5], dtype=float32)}
"""
from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import numpy as tnp
from .. import tree

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov", "adagrad", "rmsprop",
           "rmsprop_momentum", "adam", "adamax", "sm3", "constant", "exponential_decay", "inverse_time_decay",
           "polynomial_decay", "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
with warnings.catch_warnings():   # overriding the namedtuple default on purpose: the tree structures are not leaves
  warnings.simplefilter("ignore")
  tree.register_pytree_node(OptimizerState, lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                            lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Schedule = Callable[[int], Any]


class Optimizer(NamedTuple):
  init_fn: Callable
  update_fn: Callable
  params_fn: Callable


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
  """Decorator: opt_maker(*args) returns (init, update, get_params) for one array; the decorated maker returns the
  Optimizer of the same functions applied to every leaf of a pytree of parameters.

  >>> @optimizer
  ... def halve():
  ...   return (lambda x: x), (lambda i, g, x: x / 2), (lambda x: x)
  >>> opt_init, opt_update, get_params = halve()
  >>> get_params(opt_update(0, [tnp.ones(1)], opt_init([tnp.asarray([4.0])])))
  [Array([2.], dtype=float32)]
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, treedef = tree.flatten(x0_tree)
      flats = [tree.flatten(init(x0)) for x0 in x0_flat]
      return OptimizerState([f for f, _ in flats], treedef, [s for _, s in flats])

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, treedef, subtrees = opt_state
      grad_flat, grad_def = tree.flatten(grad_tree)
      if grad_def != treedef:
        raise TypeError(f"{opt_maker.__name__}: update_fun got a gradient tree {grad_def} that differs from the "
                        f"parameter tree {treedef} the optimizer was initialised with")
      states = [tree.unflatten(s, f) for s, f in zip(subtrees, states_flat)]
      flats = [tree.flatten(update(i, g, s)) for g, s in zip(grad_flat, states)]
      for (_, new), old in zip(flats, subtrees):
        if new != old:
          raise TypeError(f"{opt_maker.__name__}: the update gave a state of structure {new}, not its input's {old}")
      return OptimizerState([f for f, _ in flats], treedef, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, treedef, subtrees = opt_state
      return tree.unflatten(treedef, [get_params(tree.unflatten(s, f)) for s, f in zip(subtrees, states_flat)])
    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


def _first(state): return state[0]


@optimizer
def sgd(step_size):
  """Gradient descent: x - step_size(i) * g.

  >>> sgd(0.1).init_fn([tnp.ones(1)]).packed_state
  [[Array([1.], dtype=float32)]]
  """
  step_size = make_schedule(step_size)
  return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
  """Momentum: v = mass * v + g, then x - step_size(i) * v.

  >>> len(momentum(0.1, 0.9).init_fn([tnp.ones(1)]).packed_state[0])
  2
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, v = state
    v = mass * v + g
    return x - step_size(i) * v, v
  return (lambda x0: (x0, tnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size, mass: float):
  """Nesterov momentum: v = mass * v + g, then x - step_size(i) * (mass * v + g).

  >>> len(nesterov(0.1, 0.9).init_fn([tnp.ones(1)]).packed_state[0])
  2
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, v = state
    v = mass * v + g
    return x - step_size(i) * (mass * v + g), v
  return (lambda x0: (x0, tnp.zeros_like(x0))), update, _first


@optimizer
def adagrad(step_size, momentum: float = 0.9):
  """Adagrad with momentum: the gradient scaled by 1 / sqrt of the running sum of its squares, then averaged.

  >>> len(adagrad(0.1).init_fn([tnp.ones(1)]).packed_state[0])
  3
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + tnp.square(g)
    inv = tnp.where(g_sq > 0, 1.0 / tnp.sqrt(g_sq), 0.0)
    m = (1.0 - momentum) * (g * inv) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return (lambda x0: (x0, tnp.zeros_like(x0), tnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop(step_size, gamma: float = 0.9, eps: float = 1e-8):
  """RMSProp: the gradient scaled by 1 / sqrt of a moving average of its squares (decay gamma) plus eps.

  >>> len(rmsprop(0.1).init_fn([tnp.ones(1)]).packed_state[0])
  2
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, avg = state
    avg = avg * gamma + tnp.square(g) * (1.0 - gamma)
    return x - step_size(i) * g / tnp.sqrt(avg + eps), avg
  return (lambda x0: (x0, tnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9):
  """RMSProp whose scaled steps accumulate with momentum.

  >>> len(rmsprop_momentum(0.1).init_fn([tnp.ones(1)]).packed_state[0])
  3
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, avg, mom = state
    avg = avg * gamma + tnp.square(g) * (1.0 - gamma)
    mom = momentum * mom + step_size(i) * g / tnp.sqrt(avg + eps)
    return x - mom, avg, mom
  return (lambda x0: (x0, tnp.zeros_like(x0), tnp.zeros_like(x0))), update, _first


@optimizer
def adam(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
  """Adam: bias-corrected moving averages of the gradient (b1) and its square (b2).

  >>> len(adam(0.1).init_fn([tnp.ones(1)]).packed_state[0])
  3
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * tnp.square(g) + b2 * v
    mhat = m / (1 - tnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - tnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * mhat / (tnp.sqrt(vhat) + eps), m, v
  return (lambda x0: (x0, tnp.zeros_like(x0), tnp.zeros_like(x0))), update, _first


@optimizer
def adamax(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
  """AdaMax: Adam with an exponentially weighted infinity norm in place of the second moment.

  >>> len(adamax(0.1).init_fn([tnp.ones(1)]).packed_state[0])
  3
  """
  step_size = make_schedule(step_size)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = tnp.maximum(b2 * u, tnp.abs(g))
    return x - (step_size(i) / (1 - tnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps), m, u
  return (lambda x0: (x0, tnp.zeros_like(x0), tnp.zeros_like(x0))), update, _first


def _along(v, axis: int, ndim: int):
  """The vector v laid along `axis` of an array of rank ndim (size 1 elsewhere)."""
  return v[tuple(slice(None) if d == axis else None for d in range(ndim))]


@optimizer
def sm3(step_size, momentum: float = 0.9):
  """SM3: Adagrad whose accumulator is kept as one vector per axis (the maximum over the others), with momentum.

  >>> [v.shape for v in sm3(0.1).init_fn([tnp.ones((2, 3))]).packed_state[0][2:4]]
  [(2,), (3,)]
  """
  step_size = make_schedule(step_size)

  def init(x0):
    shape = tnp.shape(x0)
    x0 = tnp.atleast_1d(x0)
    return x0, tnp.zeros_like(x0), [tnp.zeros(n, x0.dtype) for n in x0.shape], shape

  def update(i, g, state):
    x, m, vs, shape = state
    accum = functools.reduce(tnp.minimum, [_along(v, d, g.ndim) for d, v in enumerate(vs)]) + tnp.square(g)
    inv = tnp.where(accum > 0, 1.0 / tnp.sqrt(accum), 0)
    m = (1.0 - momentum) * (g * inv) + momentum * m
    x = x - step_size(i) * m
    vs = [tnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != d)) for d in range(x.ndim)]
    return x, m, vs, shape

  def get_params(state): return tnp.reshape(state[0], state[3])
  return init, update, get_params


def constant(step_size) -> Schedule:
  """The schedule that is step_size at every step.

  >>> constant(0.1)(7)
  0.1
  """
  def schedule(i): return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
  """step_size * decay_rate ** (i / decay_steps).

  >>> round(float(exponential_decay(1.0, 10, 0.5)(10)), 4)
  0.5
  """
  def schedule(i): return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase: bool = False) -> Schedule:
  """step_size / (1 + decay_rate * i / decay_steps), the quotient floored with staircase=True.

  >>> float(inverse_time_decay(1.0, 10, 1.0, staircase=True)(15))
  0.5
  """
  if staircase:
    def schedule(i): return step_size / (1 + decay_rate * tnp.floor(i / decay_steps))
  else:
    def schedule(i): return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power: float = 1.0) -> Schedule:
  """From step_size to final_step_size in decay_steps along (1 - i / decay_steps) ** power, then constant.

  >>> float(polynomial_decay(1.0, 10, 0.0)(5))
  0.5
  """
  def schedule(step_num):
    step_num = tnp.minimum(step_num, decay_steps)
    return (1 - step_num / decay_steps) ** power * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries, values) -> Schedule:
  """values[k] for steps i with k boundaries below i (boundaries one shorter than values).

  >>> s = piecewise_constant([10, 20], [1.0, 0.5, 0.1])
  >>> [round(float(s(i)), 4) for i in (5, 15, 25)]
  [1.0, 0.5, 0.1]
  """
  boundaries, values = tnp.asarray(boundaries), tnp.asarray(values)
  if boundaries.ndim != 1 or values.ndim != 1:
    raise ValueError(f"piecewise_constant: boundaries and values must be sequences, got shapes {boundaries.shape} "
                     f"and {values.shape}")
  if boundaries.shape[0] != values.shape[0] - 1:
    raise ValueError(f"piecewise_constant: boundaries must be one shorter than values, got {boundaries.shape[0]} "
                     f"boundaries and {values.shape[0]} values")

  def schedule(i): return values[tnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
  """A schedule as given, or the constant schedule of a scalar.

  >>> make_schedule(0.5)(3)
  0.5
  """
  if callable(scalar_or_schedule): return scalar_or_schedule
  if tnp.ndim(scalar_or_schedule) == 0: return constant(scalar_or_schedule)
  raise TypeError(f"make_schedule: needs a scalar or a function of the step, got {type(scalar_or_schedule).__name__} "
                  f"of shape {tnp.shape(scalar_or_schedule)}")


def l2_norm(tree_) -> Any:
  """The l2 norm of all the leaves of a pytree together.

  >>> float(l2_norm([tnp.asarray([3.0]), tnp.asarray([4.0])]))
  5.0
  """
  return tnp.sqrt(sum(tnp.vdot(x, x) for x in tree.leaves(tree_)))


def clip_grads(grad_tree, max_norm) -> Any:
  """The pytree scaled down to l2 norm max_norm when its norm is larger.

  >>> clip_grads([tnp.asarray([3.0, 4.0])], 1.0)
  [Array([0.6, 0.8], dtype=float32)]
  """
  norm = l2_norm(grad_tree)
  return tree.map(lambda g: tnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
  """A leaf of the outer tree of an unpacked optimizer state, holding that leaf's state (a subtree)."""

  def __init__(self, subtree): self.subtree = subtree
  def __iter__(self): yield self.subtree


def unpack_optimizer_state(opt_state) -> Any:
  """The OptimizerState as the parameters' pytree with a JoinPoint (holding the leaf's state) per leaf, e.g. to save.

  >>> unpack_optimizer_state(sgd(0.1).init_fn({"w": tnp.ones(1)}))["w"].subtree
  Array([1.], dtype=float32)
  """
  states_flat, treedef, subtrees = opt_state
  return tree.unflatten(treedef, [JoinPoint(tree.unflatten(s, f)) for s, f in zip(subtrees, states_flat)])


def pack_optimizer_state(marked_pytree) -> OptimizerState:
  """The OptimizerState of a pytree from unpack_optimizer_state.

  >>> state = sgd(0.1).init_fn({"w": tnp.ones(1)})
  >>> pack_optimizer_state(unpack_optimizer_state(state)).tree_def == state.tree_def
  True
  """
  joins, treedef = tree.flatten(marked_pytree)
  bad = [type(j).__name__ for j in joins if not isinstance(j, JoinPoint)]
  if bad: raise TypeError(f"pack_optimizer_state: every leaf must be a JoinPoint, got {bad[0]}")
  flats = [tree.flatten(j.subtree) for j in joins]
  return OptimizerState([f for f, _ in flats], treedef, [s for _, s in flats])
