"""tracegrad.nn layers: values against numpy formulas, pytree behaviour under grad / jit / vmap, state handling,
printing and errors."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import nn, random
from oracles import assert_close, check_grads, ulps

RNG = np.random.default_rng(0)


def _x(*shape): return RNG.standard_normal(shape).astype(np.float32)


def _np(m): return tg.tree.map(np.asarray, m)


def test_linear_matches_numpy_and_init_range():
  lin = nn.Linear(5, 3, key=random.key(0))
  assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
  assert np.abs(np.asarray(lin.weight)).max() <= 1 / np.sqrt(5)
  x = _x(4, 5)
  assert_close(lin(x), x @ np.asarray(lin.weight).T + np.asarray(lin.bias), rtol=ulps(84), atol=ulps(8))
  assert nn.Linear(5, 3, key=random.key(0), use_bias=False).bias is None
  with pytest.raises(ValueError, match=r"Linear: .*in_features=5.*\(4, 6\)"):
    lin(_x(4, 6))


def _conv_ref(x, w, b, stride, pad):
  x = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
  n, c, h, wd = x.shape
  o, _, kh, kw = w.shape
  oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
  out = np.zeros((n, o, oh, ow), np.float64)
  for i in range(oh):
    for j in range(ow):
      patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
      out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
  return out + b[None, :, None, None]


@pytest.mark.parametrize("stride,padding,pad", [(1, "SAME", ((1, 1), (1, 1))), (2, "VALID", ((0, 0), (0, 0))),
                                                (1, 2, ((2, 2), (2, 2)))])
def test_conv2d_matches_numpy(stride, padding, pad):
  conv = nn.Conv2d(3, 4, 3, stride=stride, padding=padding, key=random.key(1))
  x = _x(2, 3, 7, 7)
  want = _conv_ref(x, np.asarray(conv.weight), np.asarray(conv.bias), stride, pad)
  assert_close(conv(x), want, rtol=ulps(840), atol=ulps(84), check_dtype=False)
  assert_close(conv(x[0]), want[0], rtol=ulps(840), atol=ulps(84), check_dtype=False)   # unbatched CHW


def test_conv2d_errors():
  with pytest.raises(ValueError, match="Conv2d: .*groups=2"):
    nn.Conv2d(3, 4, 3, groups=2, key=random.key(0))
  with pytest.raises(ValueError, match=r"Conv2d: expects .*\(N, 3, H, W\).*\(2, 4, 5, 5\)"):
    nn.Conv2d(3, 4, 3, key=random.key(0))(_x(2, 4, 5, 5))
  with pytest.raises(ValueError, match="Conv2d: kernel_size"):
    nn.Conv2d(3, 4, 0, key=random.key(0))


def test_embedding():
  emb = nn.Embedding(10, 4, key=random.key(2))
  ids = np.array([[1, 9], [0, 1]])
  assert_close(emb(ids), np.asarray(emb.weight)[ids])
  with pytest.raises(TypeError, match="Embedding: ids must be integers"):
    emb(np.array([1.0]))


def test_layernorm_and_rmsnorm():
  x = _x(3, 4, 6)
  ln = nn.LayerNorm(6)
  ln = tg.tree.map(lambda a: a + 0.5, ln)    # non-trivial weight and bias
  mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  assert_close(ln(x), (x - mu) / np.sqrt(var + 1e-5) * 1.5 + 0.5, rtol=ulps(84), atol=ulps(84))
  ln2 = nn.LayerNorm((4, 6))
  mu, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
  assert_close(ln2(x), (x - mu) / np.sqrt(var + 1e-5), rtol=ulps(84), atol=ulps(84))
  rms = nn.RMSNorm(6)
  assert_close(rms(x), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), rtol=ulps(84), atol=ulps(8))
  with pytest.raises(ValueError, match=r"LayerNorm: .*\(5,\).*\(3, 4, 6\)"):
    nn.LayerNorm(5)(x)


def test_batchnorm_training_inference_and_running_stats():
  bn = nn.BatchNorm(3, momentum=0.8)
  x = _x(4, 3, 2, 2) * 2 + 1
  mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
  y, new = nn.apply(bn, x, training=True)
  assert_close(y, (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5), rtol=ulps(840), atol=ulps(84))
  assert_close(new.running_mean.value, 0.2 * mean, rtol=ulps(84), atol=ulps(8))
  assert_close(new.running_var.value, 0.8 + 0.2 * var, rtol=ulps(84), atol=ulps(8))
  assert np.array_equal(bn.running_mean.value, np.zeros(3))        # the input model is unchanged
  rm, rv = np.asarray(new.running_mean.value), np.asarray(new.running_var.value)
  assert_close(new(x), (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5), rtol=ulps(840), atol=ulps(84))
  # under jit the update comes back too, and equals the eager one
  _, jitted = tg.jit(lambda m, x: nn.apply(m, x, training=True))(bn, x)
  assert_close(jitted.running_var.value, new.running_var.value, rtol=ulps(84), atol=ulps(8))
  # channels-last
  bn_last = nn.BatchNorm(3, axis=-1)
  y, _ = nn.apply(bn_last, x.transpose(0, 2, 3, 1), training=True)
  assert_close(y, (x.transpose(0, 2, 3, 1) - mean) / np.sqrt(var + 1e-5), rtol=ulps(840), atol=ulps(84))
  with pytest.raises(ValueError, match=r"BatchNorm: .*num_features=3.*\(4, 5\)"):
    bn(np.zeros((4, 5), np.float32))


def test_dropout():
  d = nn.Dropout(0.25)
  x = np.ones((200, 50), np.float32)
  assert np.array_equal(d(x), x)                                         # inference: the identity
  y = np.asarray(d(x, key=random.key(3), training=True))
  kept = y != 0
  assert abs(kept.mean() - 0.75) < 0.02 and np.allclose(y[kept], 1 / 0.75)
  assert np.array_equal(y, d(x, key=random.key(3), training=True))     # the key decides
  with pytest.raises(ValueError, match="Dropout: training=True needs a PRNG key"):
    d(x, training=True)
  with pytest.raises(ValueError, match=r"Dropout: rate must be in \[0, 1\), got 1.5"):
    nn.Dropout(1.5)


def _attention_ref(q, k, v, causal):
  logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
  if causal: logits = np.where(np.tril(np.ones(logits.shape[-2:], bool)), logits, -np.inf)
  p = np.exp(logits - logits.max(-1, keepdims=True))
  return np.einsum("bnts,bsnh->btnh", p / p.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("causal", [False, True])
def test_dot_product_attention(causal):
  q, k, v = _x(2, 5, 3, 4), _x(2, 5, 3, 4), _x(2, 5, 3, 4)
  assert_close(nn.dot_product_attention(q, k, v, is_causal=causal), _attention_ref(q, k, v, causal),
               rtol=ulps(840), atol=ulps(84), check_dtype=False)
  jax = pytest.importorskip("jax")
  want = jax.nn.dot_product_attention(q, k, v, is_causal=causal)
  assert_close(nn.dot_product_attention(q, k, v, is_causal=causal), np.asarray(want), rtol=ulps(840), atol=ulps(84))


def test_dot_product_attention_errors():
  with pytest.raises(ValueError, match=r"dot_product_attention: .*\(2, 5, 3, 4\), \(2, 5, 2, 4\)"):
    nn.dot_product_attention(_x(2, 5, 3, 4), _x(2, 5, 2, 4), _x(2, 5, 2, 4))


def test_multi_head_attention_matches_reference_and_is_causal():
  mha = nn.MultiHeadAttention(8, 2, key=random.key(4))
  x = _x(2, 6, 8)
  lin = lambda l, a: a @ np.asarray(l.weight).T + np.asarray(l.bias)
  heads = lambda a: a.reshape(2, 6, 2, 4)
  ref = _attention_ref(heads(lin(mha.query, x)), heads(lin(mha.key, x)), heads(lin(mha.value, x)), True)
  y = mha(x, causal=True)
  assert_close(y, lin(mha.out, ref.reshape(2, 6, 8)), rtol=ulps(840), atol=ulps(84), check_dtype=False)
  x2 = x.copy()
  x2[:, 4:] += 1.0
  assert_close(mha(x2, causal=True)[:, :4], y[:, :4], rtol=ulps(84), atol=ulps(8))   # no looking ahead
  with pytest.raises(ValueError, match="embed_dim=8 must divide by num_heads=3"):
    nn.MultiHeadAttention(8, 3, key=random.key(0))


def _small_model():
  return nn.Sequential(nn.Linear(4, 6, key=random.key(5)), nn.gelu, nn.LayerNorm(6),
                       nn.Linear(6, 2, key=random.key(6)))


def test_models_are_pytrees_under_grad_jit_and_vmap():
  model, x = _small_model(), _x(3, 4)
  g = tg.grad(lambda m: tnp.sum(m(x) ** 2))(model)
  assert tg.tree.structure(g) == tg.tree.structure(model)
  assert_close(tg.jit(lambda m, x: m(x))(model, x), model(x), rtol=ulps(84), atol=ulps(8))
  check_grads(lambda m: m(x), (model,), modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)
  # an ensemble: a model whose leaves carry a leading axis, vmapped, equals each member on its own
  members = [nn.Sequential(nn.Linear(4, 2, key=random.key(i)), nn.relu) for i in range(3)]
  stacked = tg.tree.map(lambda *ls: tnp.stack(ls), *members)
  out = tg.vmap(lambda m, x: m(x), in_axes=(0, None))(stacked, x)
  assert_close(out, np.stack([np.asarray(m(x)) for m in members]), rtol=ulps(84), atol=ulps(8))


def test_sequential_key_goes_to_dropout_and_indexing():
  model = nn.Sequential(nn.Linear(4, 64, key=random.key(7)), nn.Dropout(0.5))
  x = _x(2, 4)
  a = model(x, key=random.key(0), training=True)
  assert np.array_equal(a, model(x, key=random.key(0), training=True))
  assert not np.array_equal(a, model(x, key=random.key(1), training=True))
  assert isinstance(model[0], nn.Linear) and len(model[:1]) == 1 and len(model) == 2


def test_partition_combine_count_and_summary():
  model = nn.Sequential(nn.Conv2d(1, 2, 3, key=random.key(0)), nn.BatchNorm(2), nn.relu, nn.Flatten(),
                        nn.Linear(2 * 4 * 4, 3, key=random.key(1)))
  params, state = nn.partition(model)
  assert len(tg.tree.leaves(params)) == 6 and len(tg.tree.leaves(state)) == 2
  back = nn.combine(params, state)
  assert tg.tree.structure(back) == tg.tree.structure(model)
  assert all(a is b for a, b in zip(tg.tree.leaves(back), tg.tree.leaves(model)))
  assert nn.count_params(model) == 2 * 9 + 2 + 2 + 2 + 32 * 3 + 3
  text = nn.summary(model)
  assert "layers.0.weight" in text and "(2, 1, 3, 3)" in text and "trainable parameters: 123" in text
  r = repr(model)
  assert r.startswith("Sequential(\n  (0): Conv2d(in_channels=1, out_channels=2") and "(2): Lambda(relu)" in r
  # gradients of the parameters alone: no entries for the running statistics
  x = _x(2, 1, 4, 4)
  g = tg.grad(lambda p: tnp.sum(nn.combine(p, state)(x)))(params)
  assert tg.tree.structure(g) == tg.tree.structure(params)


def test_pooling_layers():
  x = _x(2, 3, 6, 6)
  want_max = x.reshape(2, 3, 3, 2, 3, 2).max((3, 5))
  assert_close(nn.MaxPool2d(2)(x), want_max)
  want_avg = x.reshape(2, 3, 3, 2, 3, 2).mean((3, 5))
  assert_close(nn.AvgPool2d(2)(x), want_avg, rtol=ulps(84), atol=ulps(8))
  assert nn.MaxPool2d(3, stride=1, padding="SAME")(x).shape == (2, 3, 6, 6)
  assert nn.Flatten()(x).shape == (2, 108)


def test_model_checkpoint_round_trip(tmp_path):
  model = _small_model()
  path = tmp_path / "model.safetensors"
  tg.checkpoints.save(path, model)
  like = tg.tree.map(tnp.zeros_like, model)
  back = tg.checkpoints.load(path, like)
  for a, b in zip(tg.tree.leaves(back), tg.tree.leaves(model)):
    assert np.array_equal(a, b)
