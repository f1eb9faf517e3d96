"""The order kernels run in (lower/locality.py): a kernel reading a big cold buffer runs next to another reader of it,
and every reordering keeps each item after what it reads and control-flow items where they were."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.lower import locality
from tracegrad.lower.kernel import Kernel
from tracegrad.lower.schedule import _written, schedule

from kernel_eval import run_program


@st.composite
def programs(draw):
  """Items 0..n-1, item i writing buffer i and reading some earlier items' buffers or some inputs' (buffers n...);
  a few items are control-flow blocks (reading None)."""
  n = draw(st.integers(2, 24))
  barriers = set(draw(st.lists(st.integers(0, n - 1), max_size=2)))
  inputs = list(range(n, n + 4))
  reads = {i: None if i in barriers else set(draw(st.lists(st.sampled_from(list(range(i)) + inputs), max_size=4)))
           for i in range(n)}
  sizes = {b: draw(st.sampled_from([4, 64 << 10, 256 << 10, 1 << 20, 3 << 20])) for b in range(n + 4)}
  return n, reads, sizes


@settings(max_examples=300, deadline=None, derandomize=True)
@given(programs(), st.sampled_from([0, 1 << 20, None]))
def test_order_keeps_dependencies_and_barriers(prog, cold_bytes):
  n, reads, sizes = prog
  out = locality.near_readers(list(range(n)), reads.get, lambda i: i, sizes.get, cold_bytes=cold_bytes)
  assert sorted(out) == list(range(n))
  at = {v: k for k, v in enumerate(out)}
  for i, rs in reads.items():
    assert all(at[b] < at[i] for b in rs or () if b < n), (out, i)
    if rs is None:   # a barrier: the items on each side of it stay there
      assert {v for v in out[:at[i]]} == set(range(i)), out


def test_a_cold_operand_draws_its_next_reader():
  """x is read by a, then (after c, which b needs) by b: b and c move up to just before a; d, needing a, stays
  after it."""
  sizes = {"x": 1 << 20, "y": 1 << 20, "a": 4, "c": 4, "b": 4, "d": 4}
  reads = {"x": set(), "y": set(), "a": {"x"}, "c": {"y"}, "b": {"x", "c"}, "d": {"a"}}
  out = locality.near_readers(["x", "y", "a", "c", "d", "b"], reads.get, lambda i: i, sizes.get, cold_bytes=1 << 20)
  assert out == ["x", "y", "c", "b", "a", "d"]
  # not when the operand is warm, nor when the later reader needs the first one's result
  assert locality.near_readers(["x", "y", "a", "c", "d", "b"], reads.get, lambda i: i, sizes.get,
                               cold_bytes=4 << 20) == ["x", "y", "a", "c", "d", "b"]
  needs_a = {**reads, "c": {"y", "a"}}
  assert locality.near_readers(["x", "y", "a", "c", "d", "b"], needs_a.get, lambda i: i, sizes.get,
                               cold_bytes=1 << 20) == ["x", "y", "a", "c", "d", "b"]


def _attention_grads(q, k, v, g):
  def loss(q, k, v):
    s = tnp.einsum("bhid,bhjd->bhij", q, k) / 8.0
    p = tg.nn.softmax(s, axis=-1)
    return (tnp.tanh(tnp.einsum("bhij,bhjd->bhid", p, v)) * g).sum()
  return tg.grad(loss, argnums=(0, 1, 2))(q, k, v)


def test_attention_dv_runs_after_the_softmax_backward(monkeypatch):
  """dV = P^T dO and the softmax's backward both read P: they run one after the other, whatever else the backward
  pass wrote since P (the test takes every buffer for big and cold), and the program computes the same gradients."""
  rng = np.random.default_rng(0)
  shape = (2, 2, 16, 8)
  q, k, v, g = (rng.normal(size=shape).astype(np.float32) for _ in range(4))
  monkeypatch.setattr(locality, "COLD_BYTES", 0)
  monkeypatch.setattr(locality, "BIG_BYTES", 0)
  prog = schedule(tg.make_graph(_attention_grads)(q, k, v, g))
  writers = [_written(kn, nums) if isinstance(kn, Kernel) else set() for kn, nums in zip(prog.kernels, prog.calls)]
  (p,) = {b for w in writers for b in w if prog.buffers[b].size == 2 * 2 * 16 * 16 and
          sum(b in nums for nums in prog.calls) == 4}   # P: its softmax, P @ V, the softmax backward, dV
  readers = [i for i, nums in enumerate(prog.calls) if p in nums and p not in writers[i]]
  assert len(readers) == 3 and readers[2] - readers[1] == 1, [kn.name for kn in prog.kernels]
  for got, want in zip(run_program(prog, [q, k, v, g]), _reference(q, k, v, g)):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _reference(q, k, v, g):
  """The attention's gradients in float64 numpy."""
  q, k, v, g = (x.astype(np.float64) for x in (q, k, v, g))
  s = np.einsum("bhid,bhjd->bhij", q, k) / 8.0
  p = np.exp(s - s.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  do = g * (1 - np.tanh(np.einsum("bhij,bhjd->bhid", p, v)) ** 2)
  dp = np.einsum("bhid,bhjd->bhij", do, v)
  ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / 8.0
  return np.einsum("bhij,bhjd->bhid", ds, k), np.einsum("bhij,bhid->bhjd", ds, q), np.einsum("bhij,bhid->bhjd", p, do)
