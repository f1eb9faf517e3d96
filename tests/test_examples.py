"""The examples in tiny configurations: they train, report, plot, log MLPerf events, checkpoint and resume."""
import importlib.util
import json
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "examples")
sys.path[:0] = [ROOT, os.path.join(ROOT, "mlperf")]


def _events(capsys) -> list[dict]:
  out = capsys.readouterr().out
  return [json.loads(line[len(":::MLLOG "):]) for line in out.splitlines() if line.startswith(":::MLLOG ")]


def test_digits_trains_and_plots(tmp_path):
  pytest.importorskip("sklearn")
  pytest.importorskip("matplotlib")
  import digits
  plot = tmp_path / "curves.png"
  report = digits.main(["--epochs", "1", "--batch-size", "64", "--lr", "1e-2", "--plot", str(plot)])
  assert report["steps"] == 1437 // 64 * 1 and report["steps_per_second"] > 0
  assert report["test_accuracy"] > 0.6                      # one epoch of 22 steps: well above chance (0.1)
  assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


RESNET_TINY = ["--image-size", "8", "--width", "4", "--batch-size", "16", "--train-samples", "64", "--eval-samples", "32",
               "--warmup-epochs", "0"]


def test_resnet_runs_logs_checkpoints_and_resumes(tmp_path, capsys):
  import resnet
  ckpt = str(tmp_path / "ckpt")
  report = resnet.main(RESNET_TINY + ["--epochs", "2", "--checkpoint-dir", ckpt, "--target-accuracy", "1.01"])
  assert report["status"] == "aborted" and report["epochs"] == 2 and report["steps"] == 8
  events = _events(capsys)
  keys = [e["key"] for e in events]
  for k in ("submission_benchmark", "init_start", "init_stop", "run_start", "epoch_start", "eval_accuracy", "run_stop"):
    assert k in keys, k
  assert keys.index("init_stop") < keys.index("run_start") < keys.index("run_stop")
  assert [e["value"] for e in events if e["key"] == "eval_accuracy"][-1] == report["metric"]
  assert os.path.exists(os.path.join(ckpt, "checkpoint.safetensors"))
  resumed = resnet.main(RESNET_TINY + ["--epochs", "3", "--checkpoint-dir", ckpt, "--target-accuracy", "1.01"])
  events = _events(capsys)
  assert [e["value"] for e in events if e["key"] == "resume"] == [2]
  assert resumed["epochs"] == 3 and resumed["steps"] == 4           # only the third epoch ran


def test_resnet_reaches_an_easy_target_and_benchmark_mode(monkeypatch, capsys):
  import resnet
  report = resnet.main(RESNET_TINY + ["--epochs", "3", "--target-accuracy", "0.0"])
  assert report["status"] == "success" and report["epochs"] == 1
  monkeypatch.setenv("BENCHMARK", "3")
  report = resnet.main(RESNET_TINY)
  assert report["status"] == "benchmark" and report["steps"] == 3 and report["steps_per_second"] > 0


def test_config_comes_from_the_environment(monkeypatch):
  import common
  import resnet
  monkeypatch.setenv("BATCH_SIZE", "7")
  monkeypatch.setenv("LR", "0.5")
  cfg = common.parse_config(resnet.Config, ["--width", "3"])
  assert (cfg.batch_size, cfg.lr, cfg.width) == (7, 0.5, 3)


@pytest.mark.parametrize("script", ["resnet", "gpt"])
def test_help_keeps_usage_lines_and_lists_the_environment(script, capsys):
  module = __import__(script)
  with pytest.raises(SystemExit):
    module.main(["--help"])
  out = capsys.readouterr().out
  usage = [line.strip() for line in module.__doc__.splitlines() if "python3 examples/" in line]
  assert usage and all(line in out for line in usage)   # each usage example on a line of its own
  env = out[out.index("environment variables:"):]
  assert all(name in env for name in ("BENCHMARK=N", "TRACEGRAD_DEVICE", "TRACEGRAD_SEARCH"))


GPT_TINY = ["--context", "16", "--layers", "1", "--heads", "2", "--width", "32", "--batch-size", "8",
            "--steps-per-epoch", "5", "--eval-batches", "2", "--max-bytes", "200000", "--sample-bytes", "8"]


def test_gpt_trains_on_stdlib_text_and_resumes(tmp_path, capsys):
  import gpt
  ckpt = str(tmp_path / "ckpt")
  report = gpt.main(GPT_TINY + ["--epochs", "2", "--checkpoint-dir", ckpt, "--target-loss", "0.0"])
  assert report["status"] == "aborted" and report["epochs"] == 2 and report["steps"] == 10
  events = _events(capsys)
  losses = [e["value"] for e in events if e["key"] == "eval_loss"]
  assert len(losses) == 2 and losses[-1] < losses[0] < 5.6        # below log(256) = 5.55, a uniform guess, and falling
  assert [e["value"] for e in events if e["key"] == "submission_benchmark"] == ["gpt"]
  resumed = gpt.main(GPT_TINY + ["--epochs", "3", "--checkpoint-dir", ckpt, "--target-loss", "0.0"])
  assert [e["value"] for e in _events(capsys) if e["key"] == "resume"] == [2]
  assert resumed["epochs"] == 3 and resumed["steps"] == 5


def test_a_jax_program_runs_with_its_imports_changed_and_matches_jax():
  pytest.importorskip("sklearn")
  import subprocess
  script = os.path.join(ROOT, "jax_port.py")
  run = lambda *extra: subprocess.run([sys.executable, script, "--epochs", "2", *extra], capture_output=True,
                                      text=True, check=True).stdout
  accuracies = lambda out: [float(w.rstrip(",")) for line in out.splitlines() for w in line.split()[-4::3]]
  ours = accuracies(run())
  assert len(ours) == 4 and ours[-1] > 0.8                  # train and test accuracy after each of two epochs
  if importlib.util.find_spec("jax") is not None:
    theirs = accuracies(run("--jax"))                        # the same program on JAX: same start, same batches
    assert max(abs(a - b) for a, b in zip(ours, theirs)) <= 0.01, (ours, theirs)
