"""Checkpoints: every dtype round-trips through a safetensors file, writes are atomic, and a load into another
structure, shape or dtype names the leaf."""
import os

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import checkpoints


def _tree():
  return {"params": [{"w": tnp.ones((2, 3)), "b": tnp.zeros(3, tnp.bfloat16)}, {"w": tnp.arange(4, dtype=tnp.int32)}],
          "step": tnp.asarray(7), "mask": tnp.asarray([True, False]), "h": tnp.asarray([1.5], tnp.float16)}


def test_round_trip(tmp_path):
  path = tmp_path / "ckpt.safetensors"
  tree = _tree()
  checkpoints.save(path, tree, metadata={"epoch": 3})
  back = checkpoints.load(path, tree)
  assert tg.tree.structure(back) == tg.tree.structure(tree)
  for a, b in zip(tg.tree.leaves(back), tg.tree.leaves(tree)):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64))
  like = tg.eval_shape(lambda: _tree())
  assert checkpoints.load(path, like)["step"].dtype == tnp.int32
  assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]   # no temporary left behind
  from safetensors import safe_open
  with safe_open(str(path), framework="numpy") as f: assert f.metadata()["epoch"] == "3"


def test_mismatches_name_the_leaf(tmp_path):
  path = tmp_path / "c.safetensors"
  checkpoints.save(path, _tree())
  wrong_shape = _tree()
  wrong_shape["params"][0]["w"] = tnp.ones((3, 2))
  with pytest.raises(ValueError, match="params/0/w.*float32\\[2, 3\\].*float32\\[3, 2\\]"):
    checkpoints.load(path, wrong_shape)
  wrong_dtype = _tree()
  wrong_dtype["step"] = tnp.asarray(7.0)
  with pytest.raises(ValueError, match="'step'"):
    checkpoints.load(path, wrong_dtype)
  missing = _tree()
  missing["extra"] = tnp.ones(1)
  del missing["h"]
  with pytest.raises(KeyError, match=r"missing leaves \['extra'\].*unexpected leaves \['h'\]"):
    checkpoints.load(path, missing)


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
  path = tmp_path / "c.safetensors"
  checkpoints.save(path, {"a": tnp.ones(2)})
  import safetensors.numpy

  def broken(tensors, filename, metadata=None):
    open(filename, "wb").write(b"partial")
    raise OSError("disk full")

  monkeypatch.setattr(safetensors.numpy, "save_file", broken)
  with pytest.raises(OSError, match="disk full"):
    checkpoints.save(path, {"a": tnp.zeros(2)})
  monkeypatch.undo()
  np.testing.assert_array_equal(np.asarray(checkpoints.load(path, {"a": tnp.zeros(2)})["a"]), [1, 1])
  assert sorted(os.listdir(tmp_path)) == ["c.safetensors"]
