"""Collectives over named axes (lax.psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all, axis_index) under
vmap(axis_name=): values against numpy and jax, through jit, grad (finite differences and jax.grad), jvp and nested
vmaps, and the errors for unbound names and bad arguments."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check_grads, ulps

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]

# name -> (per-lane function written against a lax module, numpy result for the whole batch x)
CASES = {
  "psum": (lambda L: lambda v: L.psum(v, "i"), lambda x: np.broadcast_to(x.sum(0), x.shape)),
  "pmean": (lambda L: lambda v: L.pmean(v, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
  "pmax": (lambda L: lambda v: L.pmax(v, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
  "pmin": (lambda L: lambda v: L.pmin(v, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
  "all_gather": (lambda L: lambda v: L.all_gather(v, "i"), lambda x: np.broadcast_to(x, (4, *x.shape))),
  "all_gather_axis1": (lambda L: lambda v: L.all_gather(v, "i", axis=1),
                       lambda x: np.broadcast_to(x.T, (4, 6, 4))),
  "all_gather_tiled": (lambda L: lambda v: L.all_gather(v, "i", tiled=True),
                       lambda x: np.broadcast_to(x.reshape(-1), (4, 24))),
  "psum_scatter_tiled": (lambda L: lambda v: L.psum_scatter(v[:4] * 2.0, "i", tiled=True),
                         lambda x: (2 * x[:, :4]).sum(0).reshape(4, 1)),
  "ppermute": (lambda L: lambda v: L.ppermute(v, "i", PERM),
               lambda x: np.roll(x, 1, axis=0)),
  "axis_index": (lambda L: lambda v: v * L.axis_index("i"), lambda x: x * np.arange(4)[:, None]),
}


@pytest.mark.parametrize("name", CASES)
def test_values_match_numpy_jit_and_jax(name):
  per_lane, ref = CASES[name]
  f = tg.vmap(per_lane(lax), axis_name="i")
  got = np.asarray(f(X))
  np.testing.assert_allclose(got, ref(X), rtol=ulps(8), atol=ulps(8))
  np.testing.assert_allclose(np.asarray(tg.jit(f)(X)), got, rtol=ulps(8), atol=ulps(8))
  jax = pytest.importorskip("jax")
  want = jax.vmap(per_lane(jax.lax), axis_name="i")(X)
  np.testing.assert_allclose(got, np.asarray(want), rtol=ulps(8), atol=ulps(8))


X3 = RNG.standard_normal((4, 4, 6)).astype(np.float32)
# lane j gets block j of every lane's x: untiled, the split axis goes and the lanes' axis comes in at concat
ALL_TO_ALL = {
  "untiled_0_0": ((lambda L: lambda v: L.all_to_all(v, "i", 0, 0)), lambda x: x.swapaxes(0, 1)),
  "untiled_0_1": ((lambda L: lambda v: L.all_to_all(v, "i", 0, 1)), lambda x: x.transpose(1, 2, 0)),
  "untiled_1_0": ((lambda L: lambda v: L.all_to_all(v[:, :4], "i", 1, 0)), lambda x: x[:, :, :4].transpose(2, 0, 1)),
}


@pytest.mark.parametrize("name", ALL_TO_ALL)
def test_all_to_all_untiled(name):
  per_lane, ref = ALL_TO_ALL[name]
  got = np.asarray(tg.vmap(per_lane(lax), axis_name="i")(X3))
  np.testing.assert_array_equal(got, ref(X3))
  jax = pytest.importorskip("jax")
  np.testing.assert_array_equal(got, np.asarray(jax.vmap(per_lane(jax.lax), axis_name="i")(X3)))


def test_all_to_all_tiled_against_jax_and_its_gradient():
  x = RNG.standard_normal((4, 8, 3)).astype(np.float32)
  per_lane = lambda L: lambda v: L.all_to_all(v, "i", 0, 1, tiled=True)
  got = np.asarray(tg.vmap(per_lane(lax), axis_name="i")(x))
  want = np.stack([np.concatenate([x[i, 2 * j:2 * j + 2] for i in range(4)], 1) for j in range(4)])
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(np.asarray(tg.jit(tg.vmap(per_lane(lax), axis_name="i"))(x)), want)
  jax = pytest.importorskip("jax")
  np.testing.assert_array_equal(got, np.asarray(jax.vmap(per_lane(jax.lax), axis_name="i")(x)))
  check_grads(lambda a: tg.vmap(lambda v: tnp.sin(per_lane(lax)(v)), axis_name="i")(a), (x,), modes=("fwd", "rev"),
              atol=1e-3, rtol=1e-3)


def test_psum_scatter_untiled_and_unbatched_operands():
  x = RNG.standard_normal((4, 4, 3)).astype(np.float32)        # lane i keeps row i of the sum
  got = tg.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(got), x.sum(0), rtol=ulps(8), atol=ulps(8))
  # an operand that is the same on every lane: psum(1) is the axis size, psum of an unmapped argument scales it
  n = tg.vmap(lambda v, w: (lax.psum(1, "i"), lax.psum(w, "i")), in_axes=(0, None), axis_name="i")(X, X[0])
  np.testing.assert_array_equal(np.asarray(n[0]), [4, 4, 4, 4])
  np.testing.assert_allclose(np.asarray(n[1]), np.broadcast_to(4 * X[0], (4, 6)), rtol=ulps(8))
  assert tg.vmap(lambda v: lax.psum(v > 0, "i"), axis_name="i")(X).dtype == tnp.int32
  # a partial permutation: lanes that receive nothing get zeros
  got = tg.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]), axis_name="i")(X)
  np.testing.assert_array_equal(np.asarray(got), np.stack([X[2], X[0], X[1], np.zeros_like(X[0])]))


def test_nested_names_and_tuples_of_names():
  x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
  inner = lambda v: (lax.psum(v, "j"), lax.psum(v, "i"), lax.psum(v, ("i", "j")), lax.axis_index("i"))
  sj, si, sij, idx = tg.vmap(tg.vmap(inner, axis_name="j"), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(sj), np.broadcast_to(x.sum(1, keepdims=True), x.shape), rtol=ulps(84))
  np.testing.assert_allclose(np.asarray(si), np.broadcast_to(x.sum(0, keepdims=True), x.shape), rtol=ulps(84))
  np.testing.assert_allclose(np.asarray(sij), np.broadcast_to(x.sum((0, 1), keepdims=True), x.shape), rtol=ulps(84))
  np.testing.assert_array_equal(np.asarray(idx), [[0, 0, 0], [1, 1, 1]])


def _mixed(L, top):
  return lambda v: v * v / L.psum(v * v + 1.0, "i") + L.ppermute(v, "i", PERM) * top(v, "i")


_gather = lambda L: lambda v: L.all_gather(v, "i", tiled=True) * (1.0 + L.axis_index("i"))
_scatter = lambda L: lambda v: L.psum_scatter(v[None] * v[:, None], "i", tiled=True)
# name -> (lane count x width, function checked with finite differences, function compared with jax.grad): jax cannot
# differentiate pmax, tracegrad can (the lanes holding the maximum get the derivative)
GRAD_CASES = {
  "psum_ppermute_pmax": ((4, 3), lambda L: _mixed(L, L.pmax), lambda L: _mixed(L, L.psum)),
  "all_gather": ((4, 3), _gather, _gather),
  "psum_scatter": ((4, 4), _scatter, _scatter),
}


@pytest.mark.parametrize("kind", GRAD_CASES)
def test_gradients(kind):
  shape, ours, theirs = GRAD_CASES[kind]
  x = RNG.standard_normal(shape).astype(np.float32)
  check_grads(lambda a: tg.vmap(ours(lax), axis_name="i")(a), (x,), modes=("fwd", "rev"), atol=1e-3, rtol=1e-3)
  jax = pytest.importorskip("jax")
  loss = lambda T, L, vm: lambda a: T.sum(T.sin(vm(theirs(L), axis_name="i")(a)))
  got = tg.grad(loss(tnp, lax, tg.vmap))(x)
  want = jax.grad(loss(jax.numpy, jax.lax, jax.vmap))(x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=ulps(840), atol=ulps(84))


def test_per_example_gradients_with_a_collective_inside():
  """vmap(grad) where the loss is normalised across the batch by a psum: the pattern of data-parallel training."""
  w = RNG.standard_normal(3).astype(np.float32)
  xs = RNG.standard_normal((4, 3)).astype(np.float32)
  loss = lambda w, x: tnp.sum(w * x) ** 2 / lax.psum(1.0, "i")
  per = tg.vmap(tg.grad(loss), in_axes=(None, 0), axis_name="i")(w, xs)
  want = np.stack([2 * np.dot(w, x) * x / 4 for x in xs])
  np.testing.assert_allclose(np.asarray(per), want, rtol=ulps(84), atol=ulps(8))


def test_errors():
  with pytest.raises(NameError, match=r"psum: unbound axis name 'i'; a collective needs an enclosing vmap\(f, axis_name='i'\)"):
    lax.psum(tnp.ones(3), "i")
  with pytest.raises(NameError, match="unbound axis name 'j'"):
    tg.vmap(lambda v: lax.psum(v, "j"), axis_name="i")(X)
  with pytest.raises(ValueError, match=r"ppermute: perm must pair distinct sources with distinct destinations in \[0, 4\)"):
    tg.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), axis_name="i")(X)
  with pytest.raises(ValueError, match=r"psum_scatter: dimension 0 of shape \(6,\) has size 6; over the 4 lanes"):
    tg.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(X)
  with pytest.raises(ValueError, match="all_gather: axis 3 is out of bounds for an array of dimension 2"):
    tg.vmap(lambda v: lax.all_gather(v, "i", axis=3), axis_name="i")(X)
  with pytest.raises(ValueError, match=r"all_to_all: dimension 0 of shape \(6,\) has size 6; over the 4 lanes of 'i' it must equal 4"):
    tg.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(X)
  with pytest.raises(TypeError, match="an axis name must be a string"):
    tg.vmap(lambda v: lax.psum(v, 3), axis_name="i")(X)
