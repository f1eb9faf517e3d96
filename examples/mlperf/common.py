"""What both MLPerf-style scripts share: configuration from the command line and the environment, seeding,
checkpoint / resume, and the BENCHMARK=N steps mode."""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import time

import numpy as np
from tqdm import tqdm

import tracegrad as tg


@dataclasses.dataclass
class RunConfig:
  """What every run is configured with, besides its own fields (a subclass adds those)."""
  seed: int = 0
  checkpoint_dir: str = ""       # save each epoch here and resume from the latest
  log_file: str = ""             # :::MLLOG lines go here too


# read from the environment only; --help lists them after the options
ENVIRONMENT = {
  "BENCHMARK=N": "run N training steps, report their throughput and stop (0, the default: a full run)",
  "TRACEGRAD_DEVICE": "cpu (default when a C compiler works), interp, opencl or cuda",
  "TRACEGRAD_SEARCH=W": "search each kernel's optimisation actions with beam width W (cached per machine)",
  "TRACEGRAD_DEBUG=L": "1 logs traces and compiles, 2 each kernel's time, 4 the generated source",
  "TRACEGRAD_CACHE_DIR": "where compiled programs are kept (default ~/.cache/tracegrad)",
}


def parse_config(cls, argv=None, description: str = ""):
  """An instance of the dataclass `cls`: each field from --field-name on the command line, else the environment
  variable FIELD_NAME, else its default (whose type parses the text)."""
  width = max(map(len, ENVIRONMENT))
  epilog = "environment variables:\n" + "\n".join(f"  {k:<{width}}  {v}" for k, v in ENVIRONMENT.items())
  p = argparse.ArgumentParser(description=description, epilog=epilog,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  for f in dataclasses.fields(cls):
    parse = _parser(f.default)
    env = os.environ.get(f.name.upper())
    p.add_argument("--" + f.name.replace("_", "-"), type=parse, default=f.default if env is None else parse(env),
                   help=f"(environment: {f.name.upper()}; default {f.default!r})")
  return cls(**vars(p.parse_args(argv)))


def _parser(default):
  if isinstance(default, bool): return lambda s: s.lower() in ("1", "true", "yes", "on")
  return str if default is None else type(default)


def benchmark_steps() -> int:
  """BENCHMARK=N in the environment: run N training steps, report the throughput and stop (0: a full run)."""
  return int(os.environ.get("BENCHMARK", "0") or 0)


def seed_everything(seed: int) -> tuple[np.random.Generator, tg.Array]:
  return np.random.default_rng(seed), tg.random.key(seed)


class Checkpointer:
  """Saves {"train": pytree, ...} at the end of an epoch to dir/checkpoint.safetensors (atomically, with the epoch
  in the file's metadata) and restores the latest one into a tree of the same structure."""

  def __init__(self, directory: str | None):
    self.path = os.path.join(directory, "checkpoint.safetensors") if directory else None
    if directory: os.makedirs(directory, exist_ok=True)

  def save(self, tree, epoch: int, **info) -> None:
    if self.path: tg.checkpoints.save(self.path, tree, metadata={"epoch": epoch, "info": json.dumps(info)})

  def restore(self, like):
    """(tree, epoch, info) from the latest checkpoint, or (like, 0, {}) when there is none."""
    if not self.path or not os.path.exists(self.path): return like, 0, {}
    from safetensors import safe_open
    with safe_open(self.path, framework="numpy") as f: meta = f.metadata()
    return tg.checkpoints.load(self.path, like), int(meta["epoch"]), json.loads(meta["info"])


def reached(metric: float, target: float, goal: str) -> bool:
  return metric >= target if goal == "max" else metric <= target


def train(*, logger, state, epochs: int, batches, step, evaluate, target: float, goal: str, checkpointer: Checkpointer,
          samples_per_step: int, eval_every: int = 1) -> dict:
  """The MLPerf run: restore the latest checkpoint, then epochs of `step(state, batch) -> (state, loss)` over
  `batches(epoch)`, evaluating every `eval_every` epochs until `evaluate(state)` reaches `target` (goal "max" or
  "min"), checkpointing each epoch. With BENCHMARK=N it runs N steps, reports their throughput and returns."""
  state, first_epoch, info = checkpointer.restore(state)
  if first_epoch: logger.event("resume", first_epoch)
  bench = benchmark_steps()
  logger.end("init_stop")
  logger.start("run_start")
  start = time.perf_counter()
  report = {"status": "aborted", "epochs": first_epoch, "metric": info.get("metric"), "steps": 0}
  for epoch in itertools.count(first_epoch) if bench else range(first_epoch, epochs):
    logger.start("epoch_start", epoch_num=epoch + 1)
    loss = None
    for batch in tqdm(batches(epoch), desc=f"epoch {epoch + 1}", leave=False, disable=None):
      if bench and report["steps"] == 1: warm = time.perf_counter()   # the first step compiles
      state, loss = step(state, batch)
      report["steps"] += 1
      if bench and report["steps"] >= bench:
        loss, timed = float(loss), report["steps"] - 1      # float() waits for the last step
        rate = timed / (time.perf_counter() - warm) if timed else None
        report.update(status="benchmark", loss=loss, steps_per_second=rate,
                      samples_per_second=rate and rate * samples_per_step)
        logger.event("benchmark", report["steps_per_second"], steps=report["steps"])
        return report
    logger.end("epoch_stop", epoch_num=epoch + 1, train_loss=None if loss is None else float(loss))
    report["epochs"] = epoch + 1
    if bench:
      continue
    if (epoch + 1) % eval_every == 0 or epoch + 1 == epochs:
      logger.start("eval_start", epoch_num=epoch + 1)
      metric = float(evaluate(state))
      logger.event("eval_accuracy" if goal == "max" else "eval_loss", metric, epoch_num=epoch + 1)
      logger.end("eval_stop", epoch_num=epoch + 1)
      report["metric"] = metric
      checkpointer.save(state, epoch + 1, metric=metric)
      if reached(metric, target, goal):
        report["status"] = "success"
        break
    else:
      checkpointer.save(state, epoch + 1, metric=report["metric"])
  report["seconds"] = time.perf_counter() - start
  logger.end("run_stop", status=report["status"], time_to_target_s=report["seconds"])
  return report
