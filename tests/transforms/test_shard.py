"""Sharded jit on a 2 x 2 mesh of host devices: for programs over every kind of primitive and many layouts of their
inputs and outputs, the partitioned program gives the unsharded result, its results live in per-device blocks laid
out as asked, the collectives the layouts call for are the ones inserted, and bad shardings raise at jit time."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.sharding import Mesh, NamedSharding, P
from tracegrad.transforms.shard import partition
from oracles import ulps

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 6)).astype(np.float32)
IDX = RNG.integers(-2, 10, 8).astype(np.int32)       # some out of range: gathers clamp, scatters drop


@pytest.fixture
def mesh(four_devices):
  return Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))


def _named(mesh, specs): return tuple(NamedSharding(mesh, s) for s in specs)


def _check(mesh, f, args, ins, outs=None, n_ulps=84):
  """f jitted with shardings equals f unsharded (within n_ulps of float32); the results are laid out as out_shardings
  say."""
  want = tg.jit(f)(*args)
  sh = tg.jit(f, in_shardings=_named(mesh, ins),
              out_shardings=None if outs is None else NamedSharding(mesh, outs))
  got = sh(*args)
  for g, w in zip(tg.tree.leaves(got), tg.tree.leaves(want)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=ulps(n_ulps), atol=ulps(n_ulps))
    assert isinstance(g.sharding, NamedSharding) and g.sharding.mesh == mesh
    if outs is not None: assert g.sharding == NamedSharding(mesh, outs)
  return got


def _collectives(mesh, f, args, ins, outs=None) -> list[str]:
  g = tg.make_graph(f)(*args)
  local, _ = partition(g, mesh, list(_named(mesh, ins)), None if outs is None else [NamedSharding(mesh, outs)])
  return [u.op.name.lower() for u in local.nodes()
          if u.op.name in ("ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL")]


MATMUL_LAYOUTS = [
  # (x spec, w spec, out spec, collectives the partitioned program holds)
  (P("data"), P(), None, []),                                       # data parallel: nothing to exchange
  (P(None, "model"), P("model"), None, ["all_reduce"]),             # split contraction: a partial sum
  (P(None, "model"), P("model"), P(None, "model"), ["reduce_scatter"]),
  (P("data", "model"), P("model"), P("data", "model"), ["reduce_scatter"]),
  (P(), P(None, "model"), None, []),                                # column split
  (P("data"), P(), P(None, "data"), ["all_to_all"]),                # rows to columns
  (P("data"), P(), P(), ["all_gather"]),
  (P(("data", "model")), P(), P("data", "model"), ["all_to_all"]),
  (P(("data", "model")), P(), P(("model", "data")), ["all_gather", "all_gather"]),
  (P(), P(), P(("model", "data")), []),                             # a replicated value is cut where it is
]


@pytest.mark.parametrize("xs,ws,outs,coll", MATMUL_LAYOUTS, ids=[str(i) for i in range(len(MATMUL_LAYOUTS))])
def test_matmul_layouts_and_their_collectives(mesh, xs, ws, outs, coll):
  f = lambda x, w: x @ w
  _check(mesh, f, (X, W), (xs, ws), outs)
  assert sorted(_collectives(mesh, f, (X, W), (xs, ws), outs)) == sorted(coll)


def test_results_stay_in_per_device_blocks(mesh):
  y = tg.jit(lambda x, w: x @ w, out_shardings=NamedSharding(mesh, P("data", "model")))(X, W)
  shards = y.addressable_shards
  assert [s.device for s in shards] == list(mesh.devices.flat)
  np.testing.assert_allclose(np.asarray(shards[1].data), (X @ W)[:4, 3:], rtol=ulps(84), atol=ulps(84))
  assert shards[1].index == (slice(0, 4), slice(3, 6))
  # a sharded result fed back in is used where it is, and its layout carries through
  z = tg.jit(lambda a: tnp.exp(a) * 2)(y)
  assert z.sharding.spec == P("data", "model")
  np.testing.assert_allclose(np.asarray(z), np.exp(X @ W) * 2, rtol=ulps(84))


PROGRAMS = {
  # name -> (f, args, in specs, out spec)
  "elementwise_mixed_layouts": (lambda x, y: tnp.tanh(x) * y + 1.0, (X, X.T.copy().T), (P("data"), P(None, "model")), None),
  "replicated_operand_sliced": (lambda x, y: x - y, (X, X[::-1].copy()), (P("data", "model"), P()), None),
  "iota_and_broadcast": (lambda x: x + tnp.arange(4.0) + tnp.arange(8.0)[:, None], (X,), (P("data", "model"),), None),
  "sum_max_min_prod": (lambda x: (x.sum(0), x.max(1), x.min(), (1 + x / 10).prod(0)), (X,), (P("data", "model"),), None),
  "mean_var_argmax": (lambda x: (x.mean(), x.var(0), tnp.argmax(x, 1)), (X,), (P("data", "model"),), None),
  "softmax_rows": (lambda x: tg.nn.softmax(x, axis=1), (X,), (P("data", "model"),), P("data")),
  "partial_sums_combined_late": (lambda x: (x.sum(0) * 2 - x.sum(0)).max(), (X,), (P("data"),), None),
  "reshape_merge_split": (lambda x: x.reshape(4, 2, 4).reshape(32), (X,), (P("data", "model"),), P("data")),
  "reshape_indivisible": (lambda x: x.reshape(2, 16), (X,), (P(("data", "model")),), None),
  "transpose": (lambda x: x.T * 3, (X,), (P("data", "model"),), P("model")),
  "pad_slice_flip": (lambda x: tnp.pad(x, ((1, 1), (0, 0)))[1:7:2, ::-1], (X,), (P("data", "model"),), None),
  "concat": (lambda x, y: tnp.concatenate([x, y], 0), (X, X * 2), (P("data"), P(None, "model")), P(None, "model")),
  "take_rows": (lambda x, i: x[i], (X, IDX), (P(None, "model"), P("data")), None),
  "take_from_split_rows": (lambda x, i: tnp.take(x, i, axis=0, mode="clip"), (X, IDX), (P("data"), P()), None),
  "scatter_add": (lambda x, i, u: x.at[i].add(u), (X, IDX, X * 3), (P(None, "model"), P("data"), P("data")), None),
  "scatter_set": (lambda x, i, u: x.at[i].set(u), (X, IDX, X * 3), (P("data"), P(), P()), None),
  "scatter_into_split_rows": (lambda x, i, u: (x.at[i].add(u), x.at[i].max(u)), (X, IDX, X * 3),
                              (P(("data", "model")), P("data"), P("model")), P(("data", "model"))),
  "take_pairs_from_split_x": (lambda x, i: x[i % 8, (i + 3) % 4], (X, IDX), (P("data", "model"), P("data")), None),
  "cond_scan": (lambda x: lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x) +
                lax.scan(lambda c, r: (c + r, c), tnp.zeros(4), x)[1], (X,), (P("data", "model"),), None),
  "custom_jvp_remat": (lambda x: tg.checkpoint(lambda v: tg.nn.relu(v) * tg.nn.softplus(v))(x), (X,),
                       (P("data", "model"),), None),
  "integer_and_bool": (lambda x: ((x > 0).sum(0), (x * 10).astype(tnp.int32) // 3), (X,), (P("model", "data"),), None),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_equal_their_unsharded_result(mesh, name):
  f, args, ins, outs = PROGRAMS[name]
  _check(mesh, f, args, ins, outs)


SPECS = [P(), P("data"), P("model"), P(None, "data"), P(None, "model"), P("data", "model"), P("model", "data"),
         P(("data", "model")), P(None, ("model", "data"))]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])   # the devices are the same for every example
@given(st.sampled_from(SPECS), st.sampled_from(SPECS), st.sampled_from([None] + SPECS))
def test_any_layouts_of_a_small_network(four_devices, xs, ws, outs):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  f = lambda x, w: tg.nn.gelu(x @ w.T) @ w + x.sum(1, keepdims=True)
  _check(mesh, f, (X, X[::-1] * 0.5), (xs, ws), outs, n_ulps=840)


def _mlp_loss(p, x, y):
  h = tg.nn.relu(x @ p["w1"] + p["b1"])
  return -tnp.mean(tg.nn.log_softmax(h @ p["w2"])[tnp.arange(x.shape[0]), y])


PARAMS = {"w1": RNG.standard_normal((4, 16)).astype(np.float32) * 0.5, "b1": np.zeros(16, np.float32),
          "w2": RNG.standard_normal((16, 3)).astype(np.float32) * 0.5}
LABELS = RNG.integers(0, 3, 8)


@pytest.mark.parametrize("layout", ["data", "data_and_model"])
def test_training_step_equals_one_device(mesh, layout):
  """Data parallel (the batch split, parameters replicated) and, with it, the hidden layer split over "model" (the
  first weight by columns, the second by rows): the updated parameters equal the unsharded step's."""
  step = lambda p, x, y: tg.tree.map(lambda a, g: a - 0.1 * g, p, tg.grad(_mlp_loss)(p, x, y))
  want = tg.jit(step)(PARAMS, X, LABELS)
  if layout == "data":
    specs = {"w1": P(), "b1": P(), "w2": P()}
  else:
    specs = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model")}
  params = {k: tg.device_put(v, NamedSharding(mesh, specs[k])) for k, v in PARAMS.items()}
  batch = NamedSharding(mesh, P("data"))
  got = tg.jit(step)(params, tg.device_put(X, batch), tg.device_put(LABELS, batch))
  for k in want:
    np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=ulps(84), atol=ulps(8))
    assert got[k].sharding == NamedSharding(mesh, specs[k])


def test_lookups_in_a_split_table_stay_in_place(mesh):
  """An embedding table split by rows is not gathered for a lookup: each device looks up its own rows and the
  lookups are combined by a sum. Nor is it for the gradient's scatter-add, which each device does for its own
  indices, combining the partial sums at the end."""
  table = RNG.standard_normal((16, 4)).astype(np.float32)
  f = lambda t, i: tnp.sum(tnp.sin(t[i]))
  ins = (P("model"), P("data"))
  _check(mesh, f, (table, IDX), ins)
  _check(mesh, tg.grad(f), (table, IDX), ins, outs=P("model"))
  assert _collectives(mesh, f, (table, IDX), ins) == ["all_reduce", "all_reduce"]     # lookups, then the sum
  assert "all_gather" not in _collectives(mesh, tg.grad(f), (table, IDX), ins, P("model"))


def test_grad_and_vmap_of_a_sharded_jit_inline_it(mesh):
  f = tg.jit(lambda x, w: tnp.sum(tnp.tanh(x @ w)), in_shardings=_named(mesh, (P("data"), P(None, "model"))))
  g = tg.grad(f, argnums=1)(X, W)
  np.testing.assert_allclose(np.asarray(g), X.T @ (1 - np.tanh(X @ W) ** 2), rtol=ulps(840), atol=ulps(84))
  out = tg.vmap(f, in_axes=(0, None))(np.stack([X, 2 * X]), W)
  np.testing.assert_allclose(np.asarray(out), [np.tanh(X @ W).sum(), np.tanh(2 * X @ W).sum()], rtol=ulps(84))


def test_errors(mesh, four_devices):
  with pytest.raises(ValueError, match=r"jit\(<lambda>\): in_shardings for argument leaf 0: dimension 0 of shape "
                                       r"\(6, 4\) has size 6, which does not divide into the 4 blocks of mesh axes "
                                       r"data=2 x model=2"):
    tg.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P(("data", "model"))))(np.ones((6, 4)))
  f = tg.jit(lambda x: x.sum(0), out_shardings=NamedSharding(mesh, P("model")))
  with pytest.raises(ValueError, match=r"out_shardings for output leaf 0: dimension 0 of shape \(3,\) has size 3, "
                                       r"which does not divide into the 2 blocks of mesh axes model=2"):
    f(np.ones((4, 3)))
  with pytest.raises(ValueError, match="names mesh axis 'rows' for dimension 0, but the mesh's axes are"):
    NamedSharding(mesh, P("rows"))
  with pytest.raises(TypeError, match=r"in_shardings must hold NamedShardings \(or None\), got PartitionSpec"):
    tg.jit(lambda x: x, in_shardings=P("data"))
  with pytest.raises(ValueError, match="in_shardings must be one NamedSharding or a tuple with one entry per "
                                       r"positional argument \(2 here\)"):
    tg.jit(lambda x, y: x + y, in_shardings=(NamedSharding(mesh, P()),))(X, X)
  other = Mesh(np.array(four_devices[:2]), ("data",))
  with pytest.raises(ValueError, match="laid out over different meshes"):
    tg.jit(lambda x, y: x + y)(tg.device_put(X, NamedSharding(mesh, P("data"))),
                               tg.device_put(X, NamedSharding(other, P("data"))))


def test_sharding_constraints_lay_out_intermediates(mesh):
  """with_sharding_constraint inside a jitted function decides an intermediate's layout (here: the hidden layer
  split over "model" though the inputs are replicated), survives grad and vmap, and on a concrete value puts it."""
  split = NamedSharding(mesh, P(None, "model"))
  f = lambda x, w: tnp.sum(tnp.tanh(lax.with_sharding_constraint(x @ w, split)) ** 2)
  np.testing.assert_allclose(np.asarray(tg.jit(f)(X, W)), np.sum(np.tanh(X @ W) ** 2), rtol=ulps(84))
  h = tg.jit(lambda x, w: lax.with_sharding_constraint(x @ w, split))(X, W)
  assert h.sharding == split
  g = tg.jit(tg.grad(f, argnums=1))(X, W)
  np.testing.assert_allclose(np.asarray(g), np.asarray(tg.grad(f, argnums=1)(X, W)), rtol=ulps(840), atol=ulps(84))
  v = tg.jit(tg.vmap(lambda x: lax.with_sharding_constraint(x @ W, split)))(np.stack([X, -X]))
  np.testing.assert_allclose(np.asarray(v), np.stack([X @ W, -X @ W]), rtol=ulps(84), atol=ulps(84))
  assert v.sharding == NamedSharding(mesh, P(None, None, "model"))
  assert lax.with_sharding_constraint(X, split).sharding == split
  with pytest.raises(ValueError, match=r"with_sharding_constraint: dimension 1 of shape \(8, 3\) has size 3"):
    tg.jit(lambda x: lax.with_sharding_constraint(x[:, :3], split))(X)
