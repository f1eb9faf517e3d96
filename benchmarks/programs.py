"""Training steps written the way JAX's tutorials and Flax write them: channels-last and depthwise convolutions, a
transposed convolution, a dilated 1-d convolution, batch norm with max pooling, einsum attention, dropout, an RNN
under lax.scan, an MLP-Mixer block, per-example gradients clipped for DP-SGD, a bfloat16 MLP, and a Gaussian
process's marginal likelihood (a Cholesky factorization and its gradient), and JAX's mnist_vae example (stax,
random draws inside the step). Each one runs in
tracegrad and in JAX (when installed) on the same numbers, interleaved in one process as benchmarks/models.py does:
the steady step of each, tracegrad's speed-up over JAX (above 1 means faster), both first losses and the kernel count.
Not a test: a loss that disagrees is flagged, not asserted.

  python3 benchmarks/programs.py [--quick] [--only NAME]
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import as_avx2  # noqa: E402
as_avx2.apply()   # before numpy loads

import numpy as np

import models  # noqa: E402  (the interleaved timing, the loss check and the row printer)

NHWC = ("NHWC", "HWIO", "NHWC")


def _random(lib: models.Lib):
  """The library's jax.random."""
  if lib is models.TG:
    import tracegrad.random as r
  else:
    import jax.random as r
  return r


def _sgd_step(lib: models.Lib, loss, params, *batch):
  return models._sgd(lib, loss, 0.01), models._on(lib, params), models._on(lib, batch)


def depthwise(lib: models.Lib):
  m, nn, lax = lib.np, lib.nn, lib.lax
  rng = np.random.default_rng(0)
  x = rng.normal(size=(32, 32, 32, 32)).astype(np.float32)
  p = {"dw": (rng.normal(size=(3, 3, 1, 32)) * 0.3).astype(np.float32),
       "pw": (rng.normal(size=(1, 1, 32, 64)) * 0.2).astype(np.float32)}

  def loss(p, x):
    h = nn.relu(lax.conv_general_dilated(x, p["dw"], (1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=32))
    h = lax.conv_general_dilated(h, p["pw"], (1, 1), "SAME", dimension_numbers=NHWC)
    h = (h - m.mean(h, axis=(0, 1, 2))) / m.sqrt(m.var(h, axis=(0, 1, 2)) + 1e-5)
    return m.mean(h ** 2)
  return _sgd_step(lib, loss, p, x)


def transposed(lib: models.Lib):
  m, nn, lax = lib.np, lib.nn, lib.lax
  rng = np.random.default_rng(1)
  x = rng.normal(size=(16, 16, 16, 64)).astype(np.float32)
  p = {"w": (rng.normal(size=(4, 4, 64, 32)) * 0.05).astype(np.float32)}

  def loss(p, x):
    return m.mean(nn.relu(lax.conv_transpose(x, p["w"], (2, 2), "SAME", dimension_numbers=NHWC)) ** 2)
  return _sgd_step(lib, loss, p, x)


def conv1d(lib: models.Lib):
  m, nn, lax = lib.np, lib.nn, lib.lax
  rng = np.random.default_rng(2)
  x = rng.normal(size=(16, 512, 64)).astype(np.float32)
  p = {"w": (rng.normal(size=(5, 64, 64)) * 0.05).astype(np.float32)}

  def loss(p, x):
    h = lax.conv_general_dilated(x, p["w"], (1,), "SAME", rhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC"))
    return m.mean(nn.gelu(h) ** 2)
  return _sgd_step(lib, loss, p, x)


def conv_bn_pool(lib: models.Lib):
  m, nn, lax = lib.np, lib.nn, lib.lax
  rng = np.random.default_rng(3)
  x = rng.normal(size=(32, 32, 32, 32)).astype(np.float32)
  p = {"w": (rng.normal(size=(3, 3, 32, 32)) * 0.1).astype(np.float32), "g": np.ones(32, np.float32),
       "b": np.zeros(32, np.float32)}

  def loss(p, x):
    h = lax.conv_general_dilated(x, p["w"], (1, 1), "SAME", dimension_numbers=NHWC)
    mu = m.mean(h, axis=(0, 1, 2))
    h = (h - mu) * lax.rsqrt(m.mean((h - mu) ** 2, axis=(0, 1, 2)) + 1e-5) * p["g"] + p["b"]
    h = lax.reduce_window(nn.relu(h), -m.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return m.mean(h ** 2)
  return _sgd_step(lib, loss, p, x)


def attention(lib: models.Lib):
  m, nn = lib.np, lib.nn
  rng = np.random.default_rng(4)
  q = rng.normal(size=(8, 128, 4, 32)).astype(np.float32)
  p = {"wq": (rng.normal(size=(32, 32)) * 0.1).astype(np.float32)}

  def loss(p, q):
    s = m.einsum("bqhd,bkhd->bhqk", m.einsum("bqhd,de->bqhe", q, p["wq"]), q) / np.sqrt(32.0)
    return m.mean(m.einsum("bhqk,bkhd->bqhd", nn.softmax(s, axis=-1), q) ** 2)
  return _sgd_step(lib, loss, p, q)


def dropout(lib: models.Lib):
  m, nn, rnd = lib.np, lib.nn, _random(lib)
  rng = np.random.default_rng(5)
  x = rng.normal(size=(128, 512)).astype(np.float32)
  p = {"w": (rng.normal(size=(512, 512)) * 0.05).astype(np.float32)}

  def loss(p, x):
    h = nn.relu(x @ p["w"])
    return m.mean(m.where(rnd.bernoulli(rnd.PRNGKey(0), 0.9, h.shape), h / 0.9, 0.0) ** 2)
  return _sgd_step(lib, loss, p, x)


def rnn(lib: models.Lib):
  m, lax = lib.np, lib.lax
  rng = np.random.default_rng(6)
  xs = rng.normal(size=(64, 32, 64)).astype(np.float32)
  p = {"wx": (rng.normal(size=(64, 128)) * 0.1).astype(np.float32),
       "wh": (rng.normal(size=(128, 128)) * 0.05).astype(np.float32)}

  def loss(p, xs):
    def cell(h, x):
      h = m.tanh(x @ p["wx"] + h @ p["wh"])
      return h, h
    return m.mean(lax.scan(cell, m.zeros((32, 128)), xs)[1] ** 2)
  return _sgd_step(lib, loss, p, xs)


def mixer(lib: models.Lib):
  m, nn = lib.np, lib.nn
  rng = np.random.default_rng(7)
  x = rng.normal(size=(32, 64, 128)).astype(np.float32)
  p = {"tok": (rng.normal(size=(64, 256)) * 0.1).astype(np.float32),
       "tok2": (rng.normal(size=(256, 64)) * 0.1).astype(np.float32),
       "ch": (rng.normal(size=(128, 512)) * 0.1).astype(np.float32),
       "ch2": (rng.normal(size=(512, 128)) * 0.05).astype(np.float32)}

  def loss(p, x):
    y = nn.gelu(m.einsum("bpc,pq->bqc", nn.standardize(x, axis=-1), p["tok"]))
    x = x + m.einsum("bqc,qp->bpc", y, p["tok2"])
    return m.mean((x + nn.gelu(nn.standardize(x, axis=-1) @ p["ch"]) @ p["ch2"]) ** 2)
  return _sgd_step(lib, loss, p, x)


def dp_sgd(lib: models.Lib):
  m, nn, lax = lib.np, lib.nn, lib.lax
  top = sys.modules["tracegrad"] if lib is models.TG else sys.modules["jax"]
  rng = np.random.default_rng(8)
  x, y = rng.normal(size=(32, 28, 28, 1)).astype(np.float32), rng.integers(0, 10, 32).astype(np.int32)
  p = {"w1": (rng.normal(size=(3, 3, 1, 16)) * 0.3).astype(np.float32),
       "w2": (rng.normal(size=(3, 3, 16, 32)) * 0.1).astype(np.float32),
       "d": (rng.normal(size=(32, 10)) * 0.1).astype(np.float32)}

  def loss(p, x, y):
    h = nn.relu(lax.conv_general_dilated(x[None], p["w1"], (1, 1), "SAME", dimension_numbers=NHWC))
    h = nn.relu(lax.conv_general_dilated(h, p["w2"], (2, 2), "SAME", dimension_numbers=NHWC))
    return -nn.log_softmax(m.mean(h, axis=(1, 2)) @ p["d"])[0, y]

  def step(p, x, y):
    per = top.vmap(lib.value_and_grad(loss), in_axes=(None, 0, 0))(p, x, y)
    clip = lambda g: g / m.maximum(1.0, m.sqrt(m.sum(g ** 2, axis=tuple(range(1, g.ndim)), keepdims=True)))
    return lib.tree_map(lambda a, g: a - 0.1 * m.mean(clip(g), axis=0), p, per[1]), m.mean(per[0])
  return step, models._on(lib, p), models._on(lib, (x, y))


def bf16_mlp(lib: models.Lib):
  m, nn = lib.np, lib.nn
  rng = np.random.default_rng(9)
  x, y = rng.normal(size=(128, 784)).astype(np.float32), np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
  p = {"w1": (rng.normal(size=(784, 512)) * 0.05).astype(np.float32),
       "w2": (rng.normal(size=(512, 10)) * 0.05).astype(np.float32)}
  bf = lambda a: a.astype(m.bfloat16)

  def loss(p, x, y):
    h = nn.relu(bf(x) @ bf(p["w1"])).astype(m.float32)
    return -m.mean(m.sum(nn.log_softmax((bf(h) @ bf(p["w2"])).astype(m.float32)) * y, axis=-1))
  return _sgd_step(lib, loss, p, x, y)


def gp(lib: models.Lib):
  """A Gaussian process's hyperparameters fitted by gradient steps on the negative marginal log likelihood, as JAX's
  examples/gaussian_process_regression.py does: an RBF kernel matrix, its Cholesky factor, cho_solve."""
  m = lib.np
  linalg = importlib.import_module("tracegrad.scipy.linalg" if lib is models.TG else "jax.scipy.linalg")
  rng = np.random.default_rng(10)
  x = rng.normal(size=(512, 3)).astype(np.float32)
  y = (np.sin(x.sum(1)) + 0.1 * rng.normal(size=512)).astype(np.float32)
  p = {"amp": np.float32(0.0), "ls": np.float32(0.0), "noise": np.float32(-2.0)}

  def loss(p, x, y):
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    k = m.exp(p["amp"]) * m.exp(-0.5 * sq / m.exp(p["ls"])) + (m.exp(p["noise"]) + 1e-6) * m.eye(x.shape[0])
    chol = m.linalg.cholesky(k)
    alpha = linalg.cho_solve((chol, True), y)
    return (0.5 * y @ alpha + m.log(m.diag(chol)).sum()) / x.shape[0]
  return _sgd_step(lib, loss, p, x, y)


def vae(lib: models.Lib):
  """JAX's examples/mnist_vae.py step: a stax encoder and decoder, a normal draw by reparametrization, Bernoulli
  draws binarizing the batch, momentum from example_libraries.optimizers."""
  tg = lib is models.TG
  m, random = lib.np, _random(lib)
  stax = importlib.import_module("tracegrad.example_libraries.stax" if tg else "jax.example_libraries.stax")
  optimizers = importlib.import_module("tracegrad.example_libraries.optimizers" if tg else
                                       "jax.example_libraries.optimizers")
  Dense, Relu = stax.Dense, stax.Relu
  encoder_init, encode = stax.serial(Dense(512), Relu, Dense(512), Relu, stax.FanOut(2),
                                     stax.parallel(Dense(10), stax.serial(Dense(10), stax.Softplus)))
  decoder_init, decode = stax.serial(Dense(512), Relu, Dense(512), Relu, Dense(28 * 28))
  opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)
  key = random.PRNGKey(0)
  enc_key, dec_key = random.split(key)
  params = (encoder_init(enc_key, (128, 28 * 28))[1], decoder_init(dec_key, (128, 10))[1])
  images = np.random.default_rng(11).uniform(size=(128, 28 * 28)).astype(np.float32)

  def elbo(draw_key, params, batch):
    mu, sigmasq = encode(params[0], batch)
    z = mu + m.sqrt(sigmasq) * random.normal(draw_key, mu.shape)
    logits = decode(params[1], z)
    log_px = -m.sum(m.logaddexp(0.0, m.where(batch, -1.0, 1.0) * logits))
    return log_px + 0.5 * m.sum(1.0 + m.log(sigmasq) - mu ** 2.0 - sigmasq)

  def step(opt_state, images):
    draw_key, data_key = random.split(random.fold_in(key, 0))
    batch = random.bernoulli(data_key, images)
    loss, g = lib.value_and_grad(lambda p: -elbo(draw_key, p, batch) / 128)(get_params(opt_state))
    return opt_update(0, g, opt_state), loss
  return step, opt_init(params), models._on(lib, (images,))


PROGRAMS = {"depthwise": ("depthwise-separable NHWC", depthwise), "conv-transpose": ("conv_transpose NHWC", transposed),
            "conv1d": ("dilated conv1d NWC", conv1d), "conv-bn-pool": ("conv, BN, max pool NHWC", conv_bn_pool),
            "attention": ("einsum attention", attention), "dropout": ("dense + dropout", dropout),
            "rnn": ("lax.scan RNN", rnn), "mixer": ("MLP-Mixer block", mixer), "dp-sgd": ("DP-SGD per-example", dp_sgd),
            "bf16-mlp": ("bfloat16 MLP", bf16_mlp), "gp": ("Gaussian process NLL", gp),
            "vae": ("mnist_vae (stax, momentum)", vae)}


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
  ap.add_argument("--only", choices=list(PROGRAMS), help="run one program")
  as_avx2.add_argument(ap)
  a = ap.parse_args()
  os.environ["TRACEGRAD_TIERED"] = "0"   # the steady steps time full builds, not a quick one awaiting its upgrade
  rounds, min_time = (2, 0.2) if a.quick else (5, 0.5)
  print("tracegrad" + ("; jax installed (loss: the first step's, tracegrad / jax)" if models._have("jax") else "")
        + as_avx2.note(), flush=True)
  models.WORKLOADS.update(PROGRAMS)
  for name in [a.only] if a.only else PROGRAMS: models.bench(name, rounds, min_time, False)


if __name__ == "__main__":
  main()
