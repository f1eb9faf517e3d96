"""tracegrad.example_libraries (stax, optimizers) against jax.example_libraries: the same parameter shapes from the
same key, the same outputs given JAX's parameters, and the same optimizer steps."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.example_libraries import optimizers, stax

jax = pytest.importorskip("jax")
from jax.example_libraries import optimizers as joptimizers, stax as jstax  # noqa: E402

rng = np.random.default_rng(0)


def layers(s):
  return s.serial(s.Conv(4, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2), strides=(2, 2)),
                  s.Conv(3, (2, 2), strides=(2, 1)), s.BatchNorm(), s.Tanh, s.AvgPool((2, 2), padding="SAME"),
                  s.Flatten, s.Dense(5), s.Selu, s.Dense(3), s.LogSoftmax)


def to_np(tree): return jax.tree.map(np.asarray, tree)


def test_serial_model_same_shapes_and_outputs():
  shape = (-1, 8, 8, 2)
  out, params = layers(stax)[0](tg.random.key(0), shape)
  jout, jparams = layers(jstax)[0](jax.random.PRNGKey(0), shape)
  assert out == tuple(jout) == (0, 3)   # pooling makes an unknown batch 0, as JAX's
  assert stax.Dense(3)[0](tg.random.key(0), (-1, 4))[0] == (-1, 3)
  assert [np.shape(p) for p in tg.tree.leaves(params)] == [np.shape(p) for p in jax.tree.leaves(jparams)]
  x = rng.normal(size=(2, 8, 8, 2)).astype(np.float32)
  ours = layers(stax)[1](tg.tree.map(tnp.asarray, to_np(jparams)), tnp.asarray(x))
  theirs = layers(jstax)[1](jparams, x)
  assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_gradient_of_a_loss_matches_jax():
  net = lambda s: s.serial(s.Dense(4), s.Gelu, s.Dense(2), s.LogSoftmax)
  _, jparams = net(jstax)[0](jax.random.PRNGKey(1), (3, 5))
  x = rng.normal(size=(3, 5)).astype(np.float32)
  ours = tg.grad(lambda p: -tnp.mean(net(stax)[1](p, tnp.asarray(x))[:, 0]))(tg.tree.map(tnp.asarray, to_np(jparams)))
  theirs = jax.grad(lambda p: -jax.numpy.mean(net(jstax)[1](p, x)[:, 0]))(jparams)
  for a, b in zip(tg.tree.leaves(ours), jax.tree.leaves(theirs)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


ELEMENTWISE = ["Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu",
               "Gelu", "Identity"]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_layers(name):
  x = rng.normal(size=(2, 3)).astype(np.float32)
  assert getattr(stax, name)[0](None, (2, 3)) == ((2, 3), ())
  np.testing.assert_allclose(np.asarray(getattr(stax, name)[1]((), tnp.asarray(x))),
                             np.asarray(getattr(jstax, name)[1]((), x)), rtol=1e-5, atol=1e-6)


LAYERS = {
  "fan_in_sum": lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(3)), s.FanInSum),
  "fan_in_concat": lambda s: s.serial(s.FanOut(3), s.parallel(s.Dense(2), s.Identity, s.Dense(1)), s.FanInConcat()),
  "shape_dependent": lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2)),
  "sum_pool_nwc": lambda s: s.serial(s.SumPool((2,), spec="NWC"), s.Flatten),
  "general_conv": lambda s: s.serial(s.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2), padding=[(1, 0), (0, 1)]),
                                     s.Flatten),
  "conv_transpose_same": lambda s: s.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
  "conv_transpose_valid": lambda s: s.ConvTranspose(2, (2, 3), strides=(1, 2), padding="VALID"),
  "batch_norm": lambda s: s.BatchNorm(axis=0, center=False),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layers_match_jax(name):
  make = LAYERS[name]
  in_shape = (2, 4, 3) if name == "sum_pool_nwc" else (2, 3, 4, 4)
  out, params = make(stax)[0](tg.random.key(0), in_shape)
  jout, jparams = make(jstax)[0](jax.random.PRNGKey(0), in_shape)
  assert tuple(out) == tuple(jout)
  assert [np.shape(p) for p in tg.tree.leaves(params)] == [np.shape(p) for p in jax.tree.leaves(jparams)]
  x = rng.normal(size=in_shape).astype(np.float32)
  ours, theirs = make(stax)[1](tg.tree.map(tnp.asarray, to_np(jparams)), tnp.asarray(x)), make(jstax)[1](jparams, x)
  assert ours.shape == theirs.shape == tuple(out)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_dropout():
  x = tnp.ones((100,))
  out = stax.Dropout(0.75)[1]((), x, rng=tg.random.key(0))
  kept = np.asarray(out) != 0
  assert 50 < kept.sum() < 95 and np.allclose(np.asarray(out)[kept], 1 / 0.75)
  assert np.array_equal(np.asarray(stax.Dropout(0.5, mode="test")[1]((), x, rng=tg.random.key(0))), np.ones(100))
  with pytest.raises(ValueError, match="Dropout: apply_fun needs a key"):
    stax.Dropout(0.5)[1]((), x)
  _, apply_fun = stax.serial(stax.Dense(3), stax.Dropout(0.5))
  params = stax.serial(stax.Dense(3), stax.Dropout(0.5))[0](tg.random.key(0), (2, 4))[1]
  assert apply_fun(params, tnp.ones((2, 4)), rng=tg.random.key(1)).shape == (2, 3)


def test_bad_input_names_the_function():
  with pytest.raises(ValueError, match="GeneralConv: dimension_numbers"):
    stax.GeneralConv("NHWC", 3, (2, 2))
  with pytest.raises(ValueError, match="MaxPool: padding"):
    stax.MaxPool((2, 2), padding="FULL")


SCHEDULE = lambda m: m.exponential_decay(0.1, 3, 0.5)
OPTIMIZERS = {
  "sgd": lambda m: m.sgd(0.1), "sgd_schedule": lambda m: m.sgd(SCHEDULE(m)), "momentum": lambda m: m.momentum(0.1, 0.9),
  "nesterov": lambda m: m.nesterov(0.1, 0.9), "adagrad": lambda m: m.adagrad(0.1),
  "rmsprop": lambda m: m.rmsprop(0.05), "rmsprop_momentum": lambda m: m.rmsprop_momentum(0.05),
  "adam": lambda m: m.adam(0.01), "adamax": lambda m: m.adamax(0.01), "sm3": lambda m: m.sm3(0.1),
  "piecewise": lambda m: m.momentum(m.piecewise_constant([1, 2], [0.1, 0.05, 0.01]), 0.5),
  "polynomial": lambda m: m.adam(m.polynomial_decay(0.1, 3, 0.01)),
  "inverse_time": lambda m: m.sgd(m.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_match_jax(name):
  params = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": [rng.normal(size=(2,)).astype(np.float32),
                                                                   np.float32(0.5)]}
  grads = [jax.tree.map(lambda p: rng.normal(size=np.shape(p)).astype(np.float32), params) for _ in range(4)]
  init, update, get = OPTIMIZERS[name](optimizers)
  jinit, jupdate, jget = OPTIMIZERS[name](joptimizers)
  state, jstate = init(tg.tree.map(tnp.asarray, params)), jinit(params)
  for i, g in enumerate(grads):
    state, jstate = update(i, tg.tree.map(tnp.asarray, g), state), jupdate(i, g, jstate)
  for a, b in zip(tg.tree.leaves(get(state)), jax.tree.leaves(jget(jstate))):
    assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


def test_optimizer_under_jit_and_state_packing():
  init, update, get = optimizers.adam(0.01)
  params = {"w": tnp.ones((2, 2))}
  step = tg.jit(lambda i, s: update(i, tg.grad(lambda p: tnp.sum(p["w"] ** 2))(get(s)), s))
  state = init(params)
  for i in range(3): state = step(i, state)
  jinit, jupdate, jget = joptimizers.adam(0.01)
  jstate = jinit({"w": np.ones((2, 2), np.float32)})
  for i in range(3): jstate = jupdate(i, jax.grad(lambda p: (p["w"] ** 2).sum())(jget(jstate)), jstate)
  np.testing.assert_allclose(np.asarray(get(state)["w"]), np.asarray(jget(jstate)["w"]), rtol=1e-5)
  packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
  assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
  with pytest.raises(TypeError, match="gradient tree"):
    update(0, {"v": tnp.ones((2, 2))}, state)


def test_helpers_match_jax():
  tree = {"a": np.float32([3.0, 4.0]), "b": np.float32([[12.0]])}
  assert np.isclose(float(optimizers.l2_norm(tree)), float(joptimizers.l2_norm(tree)))
  for a, b in zip(tg.tree.leaves(optimizers.clip_grads(tree, 2.0)), jax.tree.leaves(joptimizers.clip_grads(tree, 2.0))):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
  for i in (0, 1, 5):
    ours, theirs = optimizers.exponential_decay(0.1, 3, 0.5)(i), joptimizers.exponential_decay(0.1, 3, 0.5)(i)
    assert np.isclose(float(ours), float(theirs))
  with pytest.raises(ValueError, match="piecewise_constant: boundaries must be one shorter"):
    optimizers.piecewise_constant([1, 2], [0.1])
  with pytest.raises(TypeError, match="make_schedule"):
    optimizers.make_schedule([0.1, 0.2])
