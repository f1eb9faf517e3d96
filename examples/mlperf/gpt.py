"""A byte-level GPT language model on the Python standard library's own source, in MLPerf's training structure.

  python3 examples/mlperf/gpt.py                                # train until the validation loss reaches the target
  python3 examples/mlperf/gpt.py --layers 4 --width 256 --context 128
  BENCHMARK=20 python3 examples/mlperf/gpt.py                   # 20 steps, then the throughput

The corpus is the stdlib's top-level .py files (sorted, read as bytes: a vocabulary of 256, nothing to download),
split 90/10 into training and validation text. An epoch is --steps-per-epoch batches of random windows; the loss is
in nats per byte. Every option is also read from the environment (BATCH_SIZE=64 ...). Events are logged as
`:::MLLOG {...}` lines; --checkpoint-dir saves each epoch and a rerun resumes from the latest one.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from mllog import MLLogger  # noqa: E402

import tracegrad as tg  # noqa: E402
import tracegrad.numpy as jnp  # noqa: E402
from tracegrad import nn, optim, random  # noqa: E402

VOCAB = 256


@dataclasses.dataclass
class Config(common.RunConfig):
  context: int = 64              # bytes the model sees; it predicts each next one
  layers: int = 2
  heads: int = 4
  width: int = 128
  batch_size: int = 32
  steps_per_epoch: int = 100
  epochs: int = 10
  lr: float = 3e-3
  weight_decay: float = 0.1
  warmup_steps: int = 50
  clip: float = 1.0
  dropout: float = 0.0
  target_loss: float = 1.7       # validation cross-entropy, nats per byte
  eval_batches: int = 8
  max_bytes: int = 2_000_000     # of the corpus, before the split
  prompt: str = "def "
  sample_bytes: int = 80         # generated after training, from --prompt
  temperature: float = 0.0       # 0: greedy


class Block(nn.Module):
  """Pre-LayerNorm transformer block: x + attention(norm(x)), then x + mlp(norm(x)), dropout on each branch."""

  def __init__(self, width: int, heads: int, rate: float, *, key):
    k1, k2, k3 = random.split(key, 3)
    self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
    self.attn = nn.MultiHeadAttention(width, heads, key=k1)
    self.fc = nn.Linear(width, 4 * width, key=k2)
    self.proj = nn.Linear(4 * width, width, key=k3)
    self.drop = nn.Dropout(rate)

  def __call__(self, x, *, key=None, training: bool = False):
    k1, k2 = random.split(key) if key is not None else (None, None)
    x = x + self.drop(self.attn(self.norm1(x), causal=True), key=k1, training=training)
    return x + self.drop(self.proj(nn.gelu(self.fc(self.norm2(x)))), key=k2, training=training)


class GPT(nn.Module):
  """Byte embedding plus learned positions, `layers` blocks, a final LayerNorm and a linear head to 256 logits."""
  static = ("context",)

  def __init__(self, context: int, layers: int, heads: int, width: int, rate: float = 0.0, *, key):
    keys = random.split(key, layers + 3)
    self.context = context
    self.tokens = nn.Embedding(VOCAB, width, key=keys[0])
    self.tokens.weight = self.tokens.weight * 0.02
    self.positions = random.normal(keys[1], (context, width)) * 0.02
    self.blocks = tuple(Block(width, heads, rate, key=k) for k in keys[3:])
    self.norm = nn.LayerNorm(width)
    self.head = nn.Linear(width, VOCAB, key=keys[2])
    self.drop = nn.Dropout(rate)

  def __call__(self, ids, *, key=None, training: bool = False):
    if ids.shape[-1] > self.context:
      raise ValueError(f"GPT: {ids.shape[-1]} ids exceed the context of {self.context} learned positions")
    keys = random.split(key, len(self.blocks) + 1) if key is not None else [None] * (len(self.blocks) + 1)
    x = self.tokens(ids) + self.positions[:ids.shape[-1]]
    x = self.drop(x, key=keys[0], training=training)
    for block, k in zip(self.blocks, keys[1:]):
      x = block(x, key=k, training=training)
    return self.head(self.norm(x))


def load_corpus(max_bytes: int) -> np.ndarray:
  """The standard library's top-level modules' source, concatenated in sorted order, as uint8."""
  files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
  chunks, total = [], 0
  for path in files:
    with open(path, "rb") as f: data = f.read()
    chunks.append(data[:max_bytes - total])
    total += len(chunks[-1])
    if total >= max_bytes: break
  return np.frombuffer(b"".join(chunks), np.uint8)


def windows(text: np.ndarray, starts: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
  """(inputs, targets): the bytes at starts + [0, context) and the ones after each, as int32 (batch, context)."""
  w = text[starts[:, None] + np.arange(context + 1)].astype(np.int32)
  return w[:, :-1], w[:, 1:]


def loss_fn(params, x, y, key=None, training=False):
  """The mean next-byte cross-entropy of the model `params` on windows x with targets y."""
  logits = params(x, key=key, training=training)
  return -jnp.mean(jnp.take_along_axis(nn.log_softmax(logits), y[..., None], axis=-1))


def make_train_step(cfg, dropout_key):
  """(train_step, optimizer): train_step((params, opt_state), x, y, step) -> (new state, loss), to be jitted; clipping
  by global norm, then AdamW (decay on matrices) on a warmup-cosine rate."""
  total_steps = cfg.epochs * cfg.steps_per_epoch
  schedule = optim.warmup_cosine_decay_schedule(0.0, cfg.lr, min(cfg.warmup_steps, max(total_steps - 1, 0)),
                                                max(total_steps, 1), end_value=cfg.lr / 10)
  matrices = lambda params: tg.tree.map(lambda p: p.ndim >= 2, params)
  opt = optim.chain(optim.clip_by_global_norm(cfg.clip),
                    optim.adamw(schedule, b2=0.99, weight_decay=cfg.weight_decay, mask=matrices))

  def train_step(state, x, y, step):
    params, opt_state = state
    key = random.fold_in(dropout_key, step) if cfg.dropout > 0 else None
    loss, grads = tg.value_and_grad(loss_fn)(params, x, y, key, training=True)
    updates, opt_state = opt.update(grads, opt_state, params)
    return (optim.apply_updates(params, updates), opt_state), loss
  return train_step, opt


def main(argv=None) -> dict:
  cfg = common.parse_config(Config, argv, __doc__)
  logger = MLLogger(cfg.log_file or None)
  logger.event("submission_benchmark", "gpt")
  logger.start("init_start")
  _, key = common.seed_everything(cfg.seed)
  logger.event("seed", cfg.seed)
  text = load_corpus(cfg.max_bytes)
  split = len(text) * 9 // 10
  train_text, eval_text = text[:split], text[split:]
  if len(eval_text) <= cfg.context + 1:
    raise ValueError(f"gpt: --max-bytes={cfg.max_bytes} leaves {len(eval_text)} validation bytes, fewer than a window "
                     f"of --context={cfg.context} + 1")
  eval_starts = np.random.default_rng([cfg.seed, 1 << 30]).integers(
      0, len(eval_text) - cfg.context, (cfg.eval_batches, cfg.batch_size))
  eval_set = [windows(eval_text, s, cfg.context) for s in eval_starts]
  for k, v in (("global_batch_size", cfg.batch_size), ("opt_base_learning_rate", cfg.lr),
               ("opt_learning_rate_warmup_steps", cfg.warmup_steps), ("opt_weight_decay", cfg.weight_decay),
               ("opt_gradient_clip_norm", cfg.clip), ("max_sequence_length", cfg.context),
               ("train_samples", cfg.steps_per_epoch * cfg.batch_size),
               ("eval_samples", cfg.eval_batches * cfg.batch_size)):
    logger.event(k, v)

  model_key, dropout_key = random.split(key)
  model = GPT(cfg.context, cfg.layers, cfg.heads, cfg.width, cfg.dropout, key=model_key)
  train_step, opt = make_train_step(cfg, dropout_key)
  train_step = tg.jit(train_step)
  print(f"GPT: {cfg.layers} layers, width {cfg.width}, {cfg.heads} heads, context {cfg.context}, "
        f"{nn.count_params(model):,} parameters; {len(train_text):,} training bytes, {len(eval_text):,} validation",
        file=sys.stderr)

  @tg.jit
  def forward(params, x, y):
    """(mean loss, logits) at inference: evaluation and sampling share this one program."""
    logits = params(x)
    return -jnp.mean(jnp.take_along_axis(nn.log_softmax(logits), y[..., None], axis=-1)), logits

  def batches(epoch):
    rng = np.random.default_rng([cfg.seed, epoch])
    for i in range(cfg.steps_per_epoch):
      x, y = windows(train_text, rng.integers(0, len(train_text) - cfg.context, cfg.batch_size), cfg.context)
      yield x, y, np.int32(epoch * cfg.steps_per_epoch + i)

  def evaluate(state):
    params, _ = state
    return sum(float(forward(params, x, y)[0]) for x, y in eval_set) / len(eval_set)

  def sample(params, prompt: bytes, n: int) -> bytes:
    """n bytes of continuation, greedy at temperature 0, else drawn from softmax(logits / temperature). The window
    is the last `context` bytes, left-aligned and zero-padded on the right in the first row of an evaluation-shaped
    batch, so the evaluation's compiled program serves every step (causal attention never sees the padding)."""
    rng = np.random.default_rng([cfg.seed, 1 << 31])
    out = list(prompt[-cfg.context:] or b"\n")
    start = len(out)
    for _ in range(n):
      window = out[-cfg.context:]
      ids = np.zeros((cfg.batch_size, cfg.context), np.int32)
      ids[0, :len(window)] = window
      logits = np.asarray(forward(params, ids, ids)[1])[0, len(window) - 1].astype(np.float64)
      if cfg.temperature > 0:
        p = np.exp((logits - logits.max()) / cfg.temperature)
        out.append(int(rng.choice(VOCAB, p=p / p.sum())))
      else:
        out.append(int(np.argmax(logits)))
    return bytes(out[start:])

  latest = {}

  def step(state, batch):
    latest["state"], loss = train_step(state, *batch)
    return latest["state"], loss

  checkpointer = common.Checkpointer(cfg.checkpoint_dir)
  state = (model, opt.init(model))
  report = common.train(logger=logger, state=state, epochs=cfg.epochs, batches=batches, step=step, evaluate=evaluate,
                        target=cfg.target_loss, goal="min", checkpointer=checkpointer, samples_per_step=cfg.batch_size)
  print(f"gpt: {report}", file=sys.stderr)
  if report["status"] != "benchmark" and cfg.sample_bytes > 0:
    params = latest["state"][0] if latest else checkpointer.restore(state)[0][0]
    text = cfg.prompt + sample(params, cfg.prompt.encode(), cfg.sample_bytes).decode(errors="replace")
    print(f"sample (temperature {cfg.temperature}): {text!r}", file=sys.stderr)
  logger.close()
  return report


if __name__ == "__main__":
  main()
