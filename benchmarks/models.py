"""Training steps of whole models: tracegrad against JAX (when installed) on the same math, shapes and initial
parameters, in one process, interleaved so that machine drift cancels. One row per workload: the steady step time of
each, tracegrad's speed-up over JAX (above 1 means faster), the first step's loss in each (they must agree), the
kernels in tracegrad's compiled step, and the first call in a fresh process (tracegrad with a cold, then a warm disk
cache; JAX with its default, no disk cache). Not a test: a loss that disagrees is flagged, not asserted.

  python3 benchmarks/models.py [--quick] [--only NAME] [--no-first-call] [--busy N]

The steady steps time fully optimised builds (TRACEGRAD_TIERED=0 in this process); the first calls in fresh processes
run with the caller's setting.

--busy N runs the steady steps beside N processes that keep a core busy each (a loaded machine): both libraries
share the cores with them in the same way.

cnn, gpt (and gpt-12, the same with 12 layers) and mlp are written once over a namespace (numpy module, nn, lax, transforms) that is tracegrad's or
JAX's; mlperf-resnet and mlperf-gpt are the steps of examples/mlperf built through its functions, and their JAX
twins are written out in plain JAX from the same weights.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import math
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, NamedTuple

import as_avx2

as_avx2.apply()   # before numpy loads

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp
from run import _have, _mlp_step, _timeit, as_user, mlp_problem

HERE = os.path.dirname(os.path.abspath(__file__))
MLPERF = os.path.join(os.path.dirname(HERE), "examples", "mlperf")


class Lib(NamedTuple):
  """What a model needs from its array library: tracegrad's and JAX's spell these the same."""
  np: Any
  nn: Any
  lax: Any
  jit: Callable
  value_and_grad: Callable
  tree_map: Callable
  leaves: Callable


TG = Lib(tnp, tg.nn, tg.lax, tg.jit, tg.value_and_grad, tg.tree.map, tg.tree.leaves)


@functools.cache
def jax_lib() -> Lib:
  import jax, jax.numpy as jnp
  return Lib(jnp, jax.nn, jax.lax, jax.jit, jax.value_and_grad, jax.tree.map, jax.tree.leaves)


def _block(lib: Lib, out):
  for leaf in lib.leaves(out): leaf.block_until_ready()
  return out


def _sgd(lib: Lib, loss: Callable, lr: float) -> Callable:
  def step(params, *batch):
    value, grads = lib.value_and_grad(loss)(params, *batch)
    return lib.tree_map(lambda p, g: p - lr * g, params, grads), value
  return step


def _adam(lib: Lib, loss: Callable, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Callable:
  """Adam with bias correction over a state (params, mu, nu, count)."""
  def step(state, *batch):
    params, mu, nu, count = state
    value, grads = lib.value_and_grad(loss)(params, *batch)
    count = count + 1
    mu = lib.tree_map(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
    nu = lib.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
    c1, c2 = 1 - b1 ** count, 1 - b2 ** count
    params = lib.tree_map(lambda p, m, v: p - lr * (m / c1) / (lib.np.sqrt(v / c2) + eps), params, mu, nu)
    return (params, mu, nu, count), value
  return step


def _on(lib: Lib, tree): return lib.tree_map(lib.np.asarray, tree)


# cnn: three 3x3 SAME convolutions (the last two of stride 2) with relu, global average pool, dense to 10 classes;
# cnn-nhwc: the same in the channels-last layouts Flax and JAX's examples use (NHWC input, HWIO kernels)

def cnn(lib: Lib, channels_last: bool = False):
  rng = np.random.default_rng(3)
  he = lambda *shape: (rng.normal(size=shape) * np.sqrt(2 / np.prod(shape[1:]))).astype(np.float32)
  params = {"convs": [(he(cout, cin, 3, 3), np.zeros(cout, np.float32)) for cin, cout in ((3, 32), (32, 64), (64, 64))],
            "dense": (he(10, 64).T.copy(), np.zeros(10, np.float32))}
  x = rng.normal(size=(32, 3, 32, 32)).astype(np.float32)
  y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
  layouts, spatial, bias = ("NCHW", "OIHW", "NCHW"), (2, 3), (slice(None), None, None)
  if channels_last:   # the same numbers, laid out channels-last
    params["convs"] = [(w.transpose(2, 3, 1, 0).copy(), b) for w, b in params["convs"]]
    x, layouts, spatial, bias = x.transpose(0, 2, 3, 1).copy(), ("NHWC", "HWIO", "NHWC"), (1, 2), (Ellipsis,)
  m, nn, lax = lib.np, lib.nn, lib.lax

  def loss(params, x, y):
    h = x
    for (w, b), stride in zip(params["convs"], (1, 2, 2)):
      h = lax.conv_general_dilated(h, w, (stride, stride), "SAME", dimension_numbers=layouts)
      h = nn.relu(h + b[bias])
    w, b = params["dense"]
    logits = m.mean(h, axis=spatial) @ w + b
    return -m.mean(m.sum(nn.log_softmax(logits) * y, axis=-1))
  return _sgd(lib, loss, 0.01), _on(lib, params), _on(lib, (x, y))


# gpt: 2 pre-norm layers, d_model 128, 4 heads, causal, GELU MLP, tied embedding, Adam

def gpt(lib: Lib, layers: int = 2, d: int = 128, heads: int = 4, seq: int = 64, batch: int = 8, vocab: int = 256):
  rng = np.random.default_rng(4)
  normal = lambda *shape, std=0.02: (rng.normal(size=shape) * std).astype(np.float32)
  zeros, ones = (lambda n: np.zeros(n, np.float32)), (lambda n: np.ones(n, np.float32))
  params = {"embed": normal(vocab, d), "pos": normal(seq, d), "norm": (ones(d), zeros(d)),
            "layers": [{"norm1": (ones(d), zeros(d)), "qkv": (normal(d, 3 * d), zeros(3 * d)),
                        "out": (normal(d, d, std=0.02 / math.sqrt(2 * layers)), zeros(d)),
                        "norm2": (ones(d), zeros(d)), "fc": (normal(d, 4 * d), zeros(4 * d)),
                        "proj": (normal(4 * d, d, std=0.02 / math.sqrt(2 * layers)), zeros(d))}
                       for _ in range(layers)]}
  ids = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)
  m, nn = lib.np, lib.nn
  norm = lambda x, p: nn.standardize(x, axis=-1) * p[0] + p[1]
  dense = lambda x, p: x @ p[0] + p[1]

  def loss(params, x, y):
    h = m.take(params["embed"], x, axis=0) + params["pos"][:x.shape[1]]
    split = lambda a: a.reshape(x.shape + (heads, d // heads))
    for p in params["layers"]:
      q, k, v = m.split(dense(norm(h, p["norm1"]), p["qkv"]), 3, axis=-1)
      att = nn.dot_product_attention(split(q), split(k), split(v), is_causal=True)
      h = h + dense(att.reshape(x.shape + (d,)), p["out"])
      h = h + dense(nn.gelu(dense(norm(h, p["norm2"]), p["fc"])), p["proj"])
    logits = norm(h, params["norm"]) @ params["embed"].T
    return -m.mean(m.take_along_axis(nn.log_softmax(logits), y[..., None], axis=-1))
  zero = lambda p: np.zeros_like(p)
  state = (params, lib.tree_map(zero, params), lib.tree_map(zero, params), np.float32(0))
  return _adam(lib, loss, 1e-3), _on(lib, state), _on(lib, (ids[:, :-1], ids[:, 1:]))


# mlp: benchmarks/run.py's MLP step, 784-512-512-10, batch 128

def mlp(lib: Lib):
  params, x, y, _ = mlp_problem()
  loss = _mlp_step(lib.np, lambda h: lib.nn.logsumexp(h, axis=1))
  return _sgd(lib, loss, 0.01), _on(lib, params), _on(lib, (x, y))


# examples/mlperf, as resnet.py and gpt.py build their train steps, on synthetic data

def _example(name: str):
  if MLPERF not in sys.path: sys.path.insert(0, MLPERF)
  return __import__(name)


@functools.cache
def _resnet_setup():
  """(config, model, x, y) of examples/mlperf/resnet.py with its defaults, one batch of its synthetic data."""
  resnet, common = _example("resnet"), _example("common")
  cfg = resnet.Config()
  rng, key = common.seed_everything(cfg.seed)
  x, y, _, _ = resnet.synthetic_cifar(dataclasses.replace(cfg, train_samples=cfg.batch_size, eval_samples=1), rng)
  return cfg, resnet.resnet(cfg.width, cfg.blocks, 10, key=key), x, y


def _resnet_schedule(cfg) -> tuple[float, float, int, int]:
  steps_per_epoch = cfg.train_samples // cfg.batch_size
  total = max(cfg.epochs * steps_per_epoch, 1)
  return cfg.lr / 10, cfg.lr, min(cfg.warmup_epochs * steps_per_epoch, total - 1), total


def mlperf_resnet(lib: Lib):
  if lib is not TG: return _jax_resnet()
  from tracegrad import nn, optim
  cfg, model, x, y = _resnet_setup()
  params, bn_state = nn.partition(model)
  opt = optim.chain(optim.add_decayed_weights(cfg.weight_decay),
                    optim.sgd(optim.warmup_cosine_decay_schedule(*_resnet_schedule(cfg)), momentum=cfg.momentum,
                              nesterov=True))

  def loss_fn(params, bn_state, x, y):
    logits, updated = nn.apply(nn.combine(params, bn_state), x, training=True)
    loss = -tnp.mean(tnp.take_along_axis(nn.log_softmax(logits), y[:, None], axis=1))
    return loss, nn.partition(updated)[1]

  def train_step(state, x, y):
    params, bn_state, opt_state = state
    (loss, bn_state), grads = tg.value_and_grad(loss_fn, has_aux=True)(params, bn_state, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return (optim.apply_updates(params, updates), bn_state, opt_state), loss
  return train_step, (params, bn_state, opt.init(params)), _on(TG, (x, y))


def _warmup_cosine(jnp, count, init, peak, warmup: int, total: int, end=0.0):
  warm = init + (peak - init) * jnp.clip(count, 0, warmup) / warmup
  c = jnp.minimum(count - warmup, total - warmup)
  cosine = 0.5 * (1 + jnp.cos(math.pi * c / (total - warmup)))
  alpha = end / peak
  return jnp.where(count < warmup, warm, peak * ((1 - alpha) * cosine + alpha))


def _jax_resnet():
  """The ResNet step in plain JAX: NCHW convolutions, batch norm on the batch's statistics with running ones moved,
  weight decay and Nesterov momentum on a warmup-cosine learning rate, from the tracegrad model's weights."""
  import jax, jax.numpy as jnp
  from tracegrad import nn
  cfg, model, x, y = _resnet_setup()
  a = lambda t: np.asarray(t)
  bn = lambda b: ({"w": a(b.weight), "b": a(b.bias)}, {"mean": a(b.running_mean.value), "var": a(b.running_var.value)})
  stem_conv, stem_bn = model.layers[0], model.layers[1]
  blocks = [l for l in model.layers if type(l).__name__ == "BasicBlock"]
  head = next(l for l in model.layers if isinstance(l, nn.Linear))
  params, stats, strides = {"stem": {"conv": a(stem_conv.weight), "bn": bn(stem_bn)[0]}, "blocks": []}, \
      {"stem": bn(stem_bn)[1], "blocks": []}, []
  for b in blocks:
    p, s = {"conv1": a(b.conv1.weight), "conv2": a(b.conv2.weight)}, {}
    p["bn1"], s["bn1"] = bn(b.bn1)
    p["bn2"], s["bn2"] = bn(b.bn2)
    if b.shortcut is not None:
      p["short"] = a(b.shortcut[0].weight)
      p["short_bn"], s["short_bn"] = bn(b.shortcut[1])
    params["blocks"].append(p)
    stats["blocks"].append(s)
    strides.append(b.conv1.stride[0])
  params["head"] = {"w": a(head.weight), "b": a(head.bias)}

  def conv(x, w, stride):
    pad = w.shape[-1] // 2
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad)] * 2,
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

  def batch_norm(x, p, s, momentum=0.9, eps=1e-5):
    mean = x.mean((0, 2, 3))
    var = jnp.square(x - mean[:, None, None]).mean((0, 2, 3))
    moved = {"mean": momentum * s["mean"] + (1 - momentum) * mean, "var": momentum * s["var"] + (1 - momentum) * var}
    scale = p["w"] / jnp.sqrt(var + eps)
    return (x - mean[:, None, None]) * scale[:, None, None] + p["b"][:, None, None], moved

  def loss_fn(params, stats, x, y):
    new = {"blocks": []}
    h, new["stem"] = batch_norm(conv(x, params["stem"]["conv"], 1), params["stem"]["bn"], stats["stem"])
    h = jax.nn.relu(h)
    for p, s, stride in zip(params["blocks"], stats["blocks"], strides):
      n = {}
      z, n["bn1"] = batch_norm(conv(h, p["conv1"], stride), p["bn1"], s["bn1"])
      z, n["bn2"] = batch_norm(conv(jax.nn.relu(z), p["conv2"], 1), p["bn2"], s["bn2"])
      if "short" in p: h, n["short_bn"] = batch_norm(conv(h, p["short"], stride), p["short_bn"], s["short_bn"])
      h = jax.nn.relu(z + h)
      new["blocks"].append(n)
    logits = h.mean((2, 3)) @ params["head"]["w"].T + params["head"]["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)), new

  schedule = _resnet_schedule(cfg)

  def train_step(state, x, y):
    params, stats, (trace, count) = state
    (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, stats, x, y)
    grads = jax.tree.map(lambda g, p: g + cfg.weight_decay * p, grads, params)
    trace = jax.tree.map(lambda g, t: g + cfg.momentum * t, grads, trace)
    lr = _warmup_cosine(jnp, count, *schedule)
    params = jax.tree.map(lambda p, g, t: p - lr * (g + cfg.momentum * t), params, grads, trace)
    return (params, stats, (trace, count + 1)), loss
  state = (params, stats, (jax.tree.map(np.zeros_like, params), np.int32(0)))
  return train_step, _on(jax_lib(), state), _on(jax_lib(), (x, y))


@functools.cache
def _gpt_setup():
  """(config, model, x, y, dropout key) of examples/mlperf/gpt.py with its defaults, one batch of its corpus."""
  gpt, common = _example("gpt"), _example("common")
  cfg = gpt.Config()
  _, key = common.seed_everything(cfg.seed)
  model_key, dropout_key = tg.random.split(key)
  model = gpt.GPT(cfg.context, cfg.layers, cfg.heads, cfg.width, cfg.dropout, key=model_key)
  text = gpt.load_corpus(100_000)
  x, y = gpt.windows(text, np.random.default_rng(cfg.seed).integers(0, len(text) - cfg.context, cfg.batch_size),
                     cfg.context)
  return cfg, model, x, y, dropout_key


def _gpt_schedule(cfg) -> tuple[float, float, int, int, float]:
  total_steps = cfg.epochs * cfg.steps_per_epoch
  return 0.0, cfg.lr, min(cfg.warmup_steps, max(total_steps - 1, 0)), max(total_steps, 1), cfg.lr / 10


def mlperf_gpt(lib: Lib):
  if lib is not TG: return _jax_gpt()
  cfg, model, x, y, dropout_key = _gpt_setup()
  train_step, opt = _example("gpt").make_train_step(cfg, dropout_key)
  return train_step, (model, opt.init(model)), _on(TG, (x, y, np.int32(0)))


def _jax_gpt():
  """The GPT step in plain JAX: learned positions, pre-norm blocks with causal attention and a GELU MLP, an untied
  head; clipping by global norm, then AdamW (decay on matrices) on a warmup-cosine rate, from the tracegrad weights."""
  import jax, jax.numpy as jnp
  cfg, model, x, y, _ = _gpt_setup()
  if cfg.dropout > 0: raise NotImplementedError("the JAX twin of examples/mlperf/gpt.py has no dropout")
  a = lambda t: np.asarray(t)
  lin = lambda l: {"w": a(l.weight), "b": a(l.bias)}
  params = {"tokens": a(model.tokens.weight), "positions": a(model.positions), "norm": lin(model.norm),
            "head": lin(model.head),
            "blocks": [{"norm1": lin(b.norm1), "q": lin(b.attn.query), "k": lin(b.attn.key), "v": lin(b.attn.value),
                        "o": lin(b.attn.out), "norm2": lin(b.norm2), "fc": lin(b.fc), "proj": lin(b.proj)}
                       for b in model.blocks]}
  heads = cfg.heads
  dense = lambda p, x: x @ p["w"].T + p["b"]
  norm = lambda p, x: jax.nn.standardize(x, axis=-1, epsilon=1e-5) * p["w"] + p["b"]

  split = lambda t: t.reshape(t.shape[:-1] + (heads, t.shape[-1] // heads))

  def loss_fn(params, x, y):
    h = params["tokens"][x] + params["positions"][:x.shape[-1]]
    for p in params["blocks"]:
      z = norm(p["norm1"], h)
      att = jax.nn.dot_product_attention(split(dense(p["q"], z)), split(dense(p["k"], z)), split(dense(p["v"], z)),
                                         is_causal=True)
      h = h + dense(p["o"], att.reshape(h.shape))
      h = h + dense(p["proj"], jax.nn.gelu(dense(p["fc"], norm(p["norm2"], h))))
    logits = dense(params["head"], norm(params["norm"], h))
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[..., None], axis=-1))

  schedule, b1, b2, eps = _gpt_schedule(cfg), 0.9, 0.99, 1e-8

  def train_step(state, x, y, step):
    params, (mu, nu, count) = state
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    g = jnp.sqrt(sum(jnp.sum(jnp.square(u)) for u in jax.tree.leaves(grads)))
    grads = jax.tree.map(lambda u: jnp.where(g < cfg.clip, u, u / g * cfg.clip), grads)
    mu = jax.tree.map(lambda g, m: (1 - b1) * g + b1 * m, grads, mu)
    nu = jax.tree.map(lambda g, v: (1 - b2) * g * g + b2 * v, grads, nu)
    c1, c2 = 1 - b1 ** (count + 1).astype(jnp.float32), 1 - b2 ** (count + 1).astype(jnp.float32)
    lr = _warmup_cosine(jnp, count, *schedule)

    def update(p, m, v):
      u = (m / c1) / (jnp.sqrt(v / c2) + eps)
      return p - lr * (u + cfg.weight_decay * p if p.ndim >= 2 else u)
    return (jax.tree.map(update, params, mu, nu), (mu, nu, count + 1)), loss
  zeros = lambda: jax.tree.map(np.zeros_like, params)
  return train_step, _on(jax_lib(), (params, (zeros(), zeros(), np.int32(0)))), _on(jax_lib(), (x, y, np.int32(0)))


WORKLOADS = {"cnn": ("CNN step b32 32x32", cnn),
             "cnn-nhwc": ("CNN step NHWC", functools.partial(cnn, channels_last=True)),
             "gpt": ("GPT step 2L d128 b8 s64", gpt),
             "gpt-12": ("GPT step 12L d128 b8 s64", functools.partial(gpt, layers=12)),   # a deep one: its compile
             "mlp": ("MLP step 784-512-512-10", mlp), "mlperf-resnet": ("mlperf ResNet-8 step b64", mlperf_resnet),
             "mlperf-gpt": ("mlperf GPT step b32 s64", mlperf_gpt)}


def _losses(lib: Lib, jstep, state, batch) -> tuple[float, float]:
  """The losses of the first two steps from state: the second checks the update too."""
  state, first = jstep(state, *batch)
  return float(first), float(jstep(state, *batch)[1])


def _agree(a: float, b: float, rtol: float = 1e-3) -> bool: return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-6)


FIRST_CALL = """
import os, sys, time; sys.path.insert(0, {here!r})
import models
lib = models.TG if {lib!r} == "tracegrad" else models.jax_lib()
step, state, batch = models.WORKLOADS[{name!r}][1](lib)
jstep = lib.jit(step)
t0 = time.perf_counter(); models._block(lib, jstep(state, *batch)); print(time.perf_counter() - t0)
"""


def first_calls(name: str) -> dict:
  """Seconds of the first step in a fresh process: tracegrad with a cold disk cache, then a warm one; JAX's."""
  cache = tempfile.mkdtemp(prefix="tracegrad-bench-")
  env = as_user({**os.environ, "TRACEGRAD_CACHE_DIR": cache})
  # tracegrad's bytecode compiled beforehand, as a pip install leaves JAX's (an editable install under
  # PYTHONDONTWRITEBYTECODE would have each process compile the modules it first imports within the timed call)
  tg_env = {**env, "PYTHONPYCACHEPREFIX": os.path.join(cache, "pycache")}
  tg_env.pop("PYTHONDONTWRITEBYTECODE", None)
  subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(tg.__file__)], env=tg_env, check=True)
  run = lambda lib, env: float(subprocess.run([sys.executable, "-c", FIRST_CALL.format(here=HERE, lib=lib, name=name)],
                                              env=env, capture_output=True, text=True, check=True).stdout.split()[-1])
  try:
    out = {"cold": run("tracegrad", tg_env), "warm": run("tracegrad", tg_env)}
    if _have("jax"): out["jax"] = run("jax", env)
  finally:
    shutil.rmtree(cache, ignore_errors=True)
  return out


def _caller(lib: Lib, jstep, state, batch) -> Callable: return lambda: _block(lib, jstep(state, *batch))


def bench(name: str, rounds: int, min_time: float, first: bool) -> dict:
  title, build = WORKLOADS[name]
  libs = {"tracegrad": TG} | ({"jax": jax_lib()} if _have("jax") else {})
  calls, losses = {}, {}
  for k, lib in libs.items():
    step, state, batch = build(lib)
    jstep = lib.jit(step)
    losses[k] = _losses(lib, jstep, state, batch)
    calls[k] = _caller(lib, jstep, state, batch)
    if lib is TG: kernels = len(jstep.lower(state, *batch).compile().kernels)
  best = {k: float("inf") for k in calls}
  for _ in range(rounds):
    for k, fn in calls.items(): best[k] = min(best[k], _timeit(fn, min_time))
  row = {"title": title, "best": best, "losses": losses, "kernels": kernels}
  if first: row["first"] = first_calls(name)
  _print(row)
  return row


def _print(row: dict):
  best, losses = row["best"], row["losses"]
  parts = [f"tracegrad {best['tracegrad'] * 1e3:8.2f} ms"]
  if "jax" in best:
    parts.append(f"jax {best['jax'] * 1e3:7.2f} ms ({best['jax'] / best['tracegrad']:.2f}x jax)")
    tl, jl = losses["tracegrad"], losses["jax"]
    flag = "" if all(_agree(a, b) for a, b in zip(tl, jl)) else \
        f" DISAGREE (second step {tl[1]:.5g} vs {jl[1]:.5g})"
    parts.append(f"loss {tl[0]:.5g} / {jl[0]:.5g}{flag}")
  else:
    parts.append(f"loss {losses['tracegrad'][0]:.5g}")
  parts.append(f"{row['kernels']} kernels")
  if "first" in row:
    f = row["first"]
    parts.append(f"first call cold {f['cold']:.1f} s, warm {f['warm']:.2f} s" +
                 (f", jax {f['jax']:.2f} s" if "jax" in f else ""))
  print(f"{row['title']:<28} " + " | ".join(parts), flush=True)


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
  ap.add_argument("--only", choices=list(WORKLOADS), help="run one workload")
  ap.add_argument("--no-first-call", action="store_true", help="skip the first-call timings in fresh processes")
  ap.add_argument("--busy", type=int, default=0, metavar="N", help="time the steps beside N busy processes")
  as_avx2.add_argument(ap)
  a = ap.parse_args()
  os.environ["TRACEGRAD_TIERED"] = "0"   # the steady steps time full builds, not a quick one awaiting its upgrade
  rounds, min_time = (2, 0.2) if a.quick else (5, 0.5)
  print(f"tracegrad on {tg.default_backend()} ({tg.devices()[0]}); numpy {np.__version__}"
        + ("; jax installed (loss: the first step's, tracegrad / jax)" if _have("jax") else "")
        + (f"; beside {a.busy} busy processes" if a.busy else "") + as_avx2.note(), flush=True)
  with busy(a.busy):
    for name in [a.only] if a.only else WORKLOADS: bench(name, rounds, min_time, not a.no_first_call and not a.busy)


@contextlib.contextmanager
def busy(n: int):
  """n processes spinning on a core each while the block runs."""
  procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
  try:
    yield
  finally:
    for p in procs: p.kill()
    for p in procs: p.wait()


if __name__ == "__main__":
  main()
