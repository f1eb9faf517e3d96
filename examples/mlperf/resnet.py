"""Image classification with a CIFAR-style ResNet, in MLPerf's training structure.

  python3 examples/mlperf/resnet.py                             # synthetic CIFAR-shaped data, train to the target
  python3 examples/mlperf/resnet.py --data-dir cifar-10-batches-py
  BENCHMARK=20 python3 examples/mlperf/resnet.py                # 20 steps, then the throughput

Every option is also read from the environment (BATCH_SIZE=64 ...). Events are logged as `:::MLLOG {...}` lines;
--checkpoint-dir saves each epoch and a rerun resumes from the latest one.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from mllog import MLLogger  # noqa: E402

import tracegrad as tg  # noqa: E402
import tracegrad.numpy as jnp  # noqa: E402
from tracegrad import nn, optim, random  # noqa: E402


@dataclasses.dataclass
class Config(common.RunConfig):
  data_dir: str = ""             # CIFAR-10 python batches; synthetic CIFAR-shaped data when empty
  image_size: int = 32
  width: int = 8                 # channels of the first stage; the next two double it
  blocks: int = 1                # residual blocks per stage: 1 is ResNet-8, 3 is ResNet-20
  batch_size: int = 64
  epochs: int = 10
  lr: float = 0.1
  momentum: float = 0.9
  weight_decay: float = 5e-4
  warmup_epochs: int = 1
  target_accuracy: float = 0.9
  train_samples: int = 4096      # synthetic data only
  eval_samples: int = 1024


class BasicBlock(nn.Module):
  """conv-bn-relu-conv-bn plus the input (through a strided 1x1 conv and bn when the shape changes), then relu."""

  def __init__(self, cin: int, cout: int, stride: int, *, key):
    k1, k2, k3 = random.split(key, 3)
    self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, use_bias=False, key=k1)
    self.bn1 = nn.BatchNorm(cout)
    self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, use_bias=False, key=k2)
    self.bn2 = nn.BatchNorm(cout)
    self.shortcut = None if stride == 1 and cin == cout else \
        nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, padding=0, use_bias=False, key=k3), nn.BatchNorm(cout))

  def __call__(self, x, *, key=None, training: bool = False):
    y = nn.relu(self.bn1(self.conv1(x), training=training))
    y = self.bn2(self.conv2(y), training=training)
    return nn.relu(y + (x if self.shortcut is None else self.shortcut(x, training=training)))


def resnet(width: int, blocks: int, classes: int, *, key) -> nn.Sequential:
  keys = iter(random.split(key, 3 * blocks + 2))
  layers: list = [nn.Conv2d(3, width, 3, padding=1, use_bias=False, key=next(keys)), nn.BatchNorm(width), nn.relu]
  cin = width
  for stage in range(3):
    cout = width * 2 ** stage
    for b in range(blocks):
      layers.append(BasicBlock(cin, cout, 2 if stage and b == 0 else 1, key=next(keys)))
      cin = cout
  layers += [lambda x: jnp.mean(x, axis=(2, 3)), nn.Linear(cin, classes, key=next(keys))]
  return nn.Sequential(*layers)


def load_cifar(data_dir: str):
  def read(name):
    with open(os.path.join(data_dir, name), "rb") as f: d = pickle.load(f, encoding="bytes")
    return d[b"data"].reshape(-1, 3, 32, 32), np.asarray(d[b"labels"], np.int32)
  parts = [read(f"data_batch_{i}") for i in range(1, 6)]
  tx, ty = read("test_batch")
  x, y = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
  mean, std = x.mean((0, 2, 3), keepdims=True), x.std((0, 2, 3), keepdims=True)
  norm = lambda a: ((a - mean) / std).astype(np.float32)
  return norm(x), y, norm(tx), ty


def synthetic_cifar(cfg: Config, rng: np.random.Generator):
  """Ten classes, each a fixed random smooth image, seen through noise and random shifts: learnable, not trivial."""
  s = cfg.image_size
  base = rng.standard_normal((10, 3, s // 4, s // 4)).astype(np.float32)
  templates = base.repeat(4, axis=2).repeat(4, axis=3)

  def draw(n):
    y = rng.integers(0, 10, n).astype(np.int32)
    shifts = rng.integers(-2, 3, (n, 2))
    x = np.stack([np.roll(templates[c], tuple(sh), axis=(1, 2)) for c, sh in zip(y, shifts)])
    return (x + 1.5 * rng.standard_normal(x.shape)).astype(np.float32), y
  return (*draw(cfg.train_samples), *draw(cfg.eval_samples))


def main(argv=None) -> dict:
  cfg = common.parse_config(Config, argv, __doc__)
  logger = MLLogger(cfg.log_file or None)
  logger.event("submission_benchmark", "resnet")
  logger.start("init_start")
  rng, key = common.seed_everything(cfg.seed)
  logger.event("seed", cfg.seed)
  train_x, train_y, eval_x, eval_y = load_cifar(cfg.data_dir) if cfg.data_dir else synthetic_cifar(cfg, rng)
  steps_per_epoch = len(train_x) // cfg.batch_size
  for k, v in (("global_batch_size", cfg.batch_size), ("opt_base_learning_rate", cfg.lr),
               ("train_samples", len(train_x)), ("eval_samples", len(eval_x))):
    logger.event(k, v)

  model = resnet(cfg.width, cfg.blocks, 10, key=key)
  params, bn_state = nn.partition(model)
  total = max(cfg.epochs * steps_per_epoch, 1)
  schedule = optim.warmup_cosine_decay_schedule(cfg.lr / 10, cfg.lr, min(cfg.warmup_epochs * steps_per_epoch, total - 1),
                                                total)
  opt = optim.chain(optim.add_decayed_weights(cfg.weight_decay),
                    optim.sgd(schedule, momentum=cfg.momentum, nesterov=True))
  print(f"ResNet-{6 * cfg.blocks + 2}, {nn.count_params(model):,} parameters, {len(train_x)} training images",
        file=sys.stderr)

  def loss_fn(params, bn_state, x, y):
    logits, updated = nn.apply(nn.combine(params, bn_state), x, training=True)
    loss = -jnp.mean(jnp.take_along_axis(nn.log_softmax(logits), y[:, None], axis=1))
    return loss, nn.partition(updated)[1]

  @tg.jit
  def train_step(state, x, y):
    params, bn_state, opt_state = state
    (loss, bn_state), grads = tg.value_and_grad(loss_fn, has_aux=True)(params, bn_state, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return (optim.apply_updates(params, updates), bn_state, opt_state), loss

  @tg.jit
  def correct(params, bn_state, x, y):
    return jnp.sum(jnp.argmax(nn.combine(params, bn_state)(x), axis=-1) == y)

  def batches(epoch):
    order = np.random.default_rng([cfg.seed, epoch]).permutation(len(train_x))
    for i in range(steps_per_epoch):
      idx = order[i * cfg.batch_size:(i + 1) * cfg.batch_size]
      yield train_x[idx], train_y[idx]

  def evaluate(state):
    params, bn_state, _ = state
    chunks = range(0, len(eval_x), cfg.batch_size)
    return sum(int(correct(params, bn_state, eval_x[i:i + cfg.batch_size], eval_y[i:i + cfg.batch_size]))
               for i in chunks) / len(eval_x)

  report = common.train(logger=logger, state=(params, bn_state, opt.init(params)), epochs=cfg.epochs,
                        batches=batches, step=lambda s, b: train_step(s, *b), evaluate=evaluate,
                        target=cfg.target_accuracy, goal="max", checkpointer=common.Checkpointer(cfg.checkpoint_dir),
                        samples_per_step=cfg.batch_size)
  print(f"resnet: {report}", file=sys.stderr)
  logger.close()
  return report


if __name__ == "__main__":
  main()
