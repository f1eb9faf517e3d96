"""A graph's fingerprint is the same for the same computation traced again and differs when anything the program
computes differs: an op, a constant (its sign too), a dtype, a shape, which input is which, the lowering's code."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.lower import fingerprint as fp
from tracegrad.lower.schedule import prepare

X = np.linspace(-1, 1, 6, dtype=np.float32)


def key(f, *args):
  return fp.fingerprint(prepare(tg.make_graph(f)(*(args or (X,)))))


def test_same_computation_traced_again():
  assert key(lambda x: tnp.tanh(x) * 2 + x.sum()) == key(lambda y: tnp.tanh(y) * 2 + y.sum())
  assert key(lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2, x)) == key(lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2, x))


@pytest.mark.parametrize("other", [
  lambda x: x * 3,                         # a constant
  lambda x: x * 2 + 0.0 * x.sum(),         # another op
  lambda x: x.astype(np.float16) * 2,      # a dtype
  lambda x: x[:5] * 2,                     # a shape
  lambda x: lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v * 3, x),   # control flow
])
def test_differs_with_the_computation(other):
  assert key(other) != key(lambda x: x * 2) and key(other) is not None


def test_constants_by_value_and_sign():
  assert key(lambda x: x + 0.0) != key(lambda x: x + -0.0)
  assert key(lambda x: x + np.arange(6, dtype=np.float32)) != key(lambda x: x + np.arange(6, 0, -1, dtype=np.float32))
  assert key(lambda x: x + np.arange(6, dtype=np.float32)) == key(lambda x: x + np.arange(6, dtype=np.float32))


def test_inputs_by_position():
  y = X[::-1].copy()
  assert key(lambda a, b: a - b, X, y) != key(lambda a, b: b - a, X, y)


def test_large_constants_are_not_fingerprinted():
  big = np.ones(fp.CONST_BYTES_MAX // 4 + 1, np.float32)
  assert key(lambda x: x + tnp.asarray(big)[:6]) is None


def test_covers_the_code(monkeypatch):
  before = key(lambda x: x * 2)
  monkeypatch.setattr(fp, "code_digest", lambda: "another lowering")
  assert key(lambda x: x * 2) != before


def test_a_graph_as_traced_has_a_key_of_its_own():
  """The traced form names the program too (a warm start then skips prepare): the same for the same computation, other
  for another, and not the prepared form's."""
  traced = lambda f: fp.fingerprint(tg.make_graph(f)(X))
  assert traced(lambda x: tnp.tanh(x) * 2) == traced(lambda y: tnp.tanh(y) * 2) is not None
  assert traced(lambda x: tnp.tanh(x) * 2) != traced(lambda x: tnp.tanh(x) * 3)
  assert traced(lambda x: tnp.tanh(x) * 2) != key(lambda x: tnp.tanh(x) * 2)


def test_a_custom_jvp_is_keyed_by_its_function_alone():
  """Its Python rule changes only derivatives, which the traced graph already holds: the lowering reads the function."""
  def make(scale):
    @tg.custom_jvp
    def f(x): return tnp.maximum(x, 0.0) * scale
    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0] * scale))
    return f
  traced = lambda f: fp.fingerprint(tg.make_graph(f)(X))
  assert traced(make(2.0)) == traced(make(2.0)) is not None
  assert traced(make(2.0)) != traced(make(3.0))
