"""jaxtyping's annotations on tracegrad Arrays: eagerly, and at trace time under jit, vmap, grad and scan."""
import typing

import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.typing import (Array, Bool, Float, Float32, Inexact, Int, Integer, Num, Shaped, TypeCheckError, UInt8,
                              typechecked)

pytest.importorskip("beartype")


@typechecked
def affine(x: Float[Array, "b n"], w: Float[Array, "n m"], bias: Float[Array, " m"]) -> Float[Array, "b m"]:
  return x @ w + bias


@typechecked
def count(mask: Bool[Array, "*batch"], ids: Int[Array, "*batch 3"]) -> Shaped[Array, "..."]:
  return mask.sum() + ids.sum()


def _args(b=2, n=3, m=4, dtype=tnp.float32):
  return tnp.ones((b, n), dtype), tnp.ones((n, m), dtype), tnp.zeros((m,), dtype)


def test_dtype_names_match_jaxtyping():
  cases = [(Float32, tnp.float32, True), (Float, tnp.bfloat16, True), (Float, tnp.float16, True), (Float, tnp.int32,
           False), (Int, tnp.int8, True), (Int, tnp.uint32, False), (UInt8, tnp.uint8, True), (Integer, tnp.uint32, True), (UInt8, tnp.int8, False),
           (Bool, tnp.bool_, True), (Num, tnp.bool_, False), (Num, tnp.int16, True), (Inexact, tnp.complex64, True),
           (Shaped, tnp.bool_, True)]
  for kind, dt, ok in cases:
    assert isinstance(tnp.zeros((2,), dt), kind[Array, " n"]) is ok, (kind, dt)


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_named_dimensions_bind_across_arguments(how):
  f = affine if how == "eager" else tracegrad.jit(affine)
  assert f(*_args()).shape == (2, 4)
  x, w, b = _args()
  with pytest.raises(TypeCheckError, match="parameter 'w'"): f(x, tnp.ones((5, 4)), b)
  with pytest.raises(TypeCheckError, match="parameter 'bias'"): f(x, w, tnp.zeros(5))
  with pytest.raises(TypeCheckError, match="parameter 'x'"): f(x.astype(tnp.int32), w, b)


def test_variadic_fixed_and_any_dimensions():
  assert count(tnp.ones((2, 5), bool), tnp.ones((2, 5, 3), tnp.int32)).shape == ()
  assert count(tnp.asarray(True), tnp.ones(3, tnp.int32)).shape == ()
  with pytest.raises(TypeCheckError, match="parameter 'ids'"): count(tnp.ones(2, bool), tnp.ones((2, 4), tnp.int32))
  with pytest.raises(TypeCheckError, match="parameter 'ids'"): count(tnp.ones(2, bool), tnp.ones((3, 3), tnp.int32))


def test_return_annotation_is_checked():
  @typechecked
  def wrong(x: Float[Array, " n"]) -> Float[Array, " n"]:
    return x[:-1]
  with pytest.raises(TypeCheckError, match="return"): wrong(tnp.ones(3))


def test_under_vmap_the_check_sees_one_example():
  out = tracegrad.vmap(affine, in_axes=(0, None, None))(tnp.ones((7, 2, 3)), tnp.ones((3, 4)), tnp.zeros(4))
  assert out.shape == (7, 2, 4)
  with pytest.raises(TypeCheckError, match="parameter 'x'"):
    tracegrad.vmap(affine, in_axes=(0, None, None))(tnp.ones((7, 3)), tnp.ones((3, 4)), tnp.zeros(4))


def test_under_grad_and_scan():
  g = tracegrad.grad(lambda w, x, b: affine(x, w, b).sum())(tnp.ones((3, 4)), tnp.ones((2, 3)), tnp.zeros(4))
  np.testing.assert_allclose(np.asarray(g), np.full((3, 4), 2.0))

  def body(carry, x):
    return carry + affine(x, tnp.ones((3, 4)), tnp.zeros(4)).sum(), None
  total, _ = lax.scan(body, tnp.float32(0.0), tnp.ones((5, 2, 3)))
  assert float(total) == 5 * 2 * 4 * 3
  with pytest.raises(TypeCheckError, match="parameter 'w'"): lax.scan(body, tnp.float32(0.0), tnp.ones((5, 2, 2)))


def test_jit_checks_once_per_trace():
  calls = []

  @tracegrad.jit
  @typechecked
  def f(x: Float[Array, " n"]) -> Float[Array, " n"]:
    calls.append(1)
    return x * 2
  for _ in range(3): f(tnp.ones(3))
  assert len(calls) == 1


def test_opt_in_checks_every_jitted_function():
  def f(x: Float[Array, "n n"]) -> Float[Array, " n"]:
    return x.sum(0)
  square = tnp.ones((2, 3))
  assert tracegrad.jit(f)(square).shape == (3,)   # off: annotations are not checked
  tracegrad.config.update("tracegrad_typecheck", True)
  try:
    with pytest.raises(TypeCheckError, match="parameter 'x'"): tracegrad.jit(f)(square)
    assert tracegrad.jit(f)(tnp.ones((3, 3))).shape == (3,)
  finally:
    tracegrad.config.update("tracegrad_typecheck", False)


LIBRARY = [tnp.linalg.solve, tnp.linalg.inv, tnp.linalg.det, tnp.linalg.slogdet, tnp.linalg.cholesky, tnp.linalg.eigh,
           tnp.linalg.eig, tnp.linalg.eigvals, tnp.linalg.eigvalsh, tnp.linalg.svdvals,
           tracegrad.nn.dot_product_attention]


@pytest.mark.parametrize("fn", LIBRARY, ids=lambda f: f.__name__)
def test_library_annotations_resolve(fn):
  hints = typing.get_type_hints(fn)
  shaped = lambda h: hasattr(h, "dim_str") or any(shaped(a) for a in typing.get_args(h))
  assert any(shaped(h) for h in hints.values()), hints


def test_library_annotations_check():
  inv, det = typechecked(tnp.linalg.inv), typechecked(tnp.linalg.det)
  a = tnp.asarray(np.array([[[2.0, 1.0], [1.0, 3.0]]] * 4, np.float32))
  np.testing.assert_allclose(np.asarray(inv(a)), np.linalg.inv(np.asarray(a)), rtol=1e-6)
  assert det(a).shape == (4,)
  assert det(np.eye(3)).shape == ()   # numpy arrays pass too
  with pytest.raises(TypeCheckError, match="parameter 'a'"): inv(tnp.ones((2, 3)))
  attention = typechecked(tracegrad.nn.dot_product_attention)
  q, kv = tnp.ones((2, 5, 4, 8)), tnp.ones((2, 6, 4, 8))
  assert attention(q, kv, kv).shape == (2, 5, 4, 8)
  with pytest.raises(TypeCheckError, match="parameter 'value'"): attention(q, kv, tnp.ones((2, 6, 4, 7)))


def test_environment_variable_turns_checking_on(tmp_path):
  import subprocess
  import sys
  script = tmp_path / "check.py"
  script.write_text("import tracegrad, tracegrad.numpy as tnp\nfrom tracegrad.typing import Array, Float\n"
                    "def f(x: Float[Array, 'n n']): return x.sum()\n"
                    "try:\n  tracegrad.jit(f)(tnp.ones((2, 3)))\nexcept TypeError as e:\n  print(type(e).__name__)\n")
  env = {**__import__("os").environ, "TRACEGRAD_TYPECHECK": "1", "TRACEGRAD_DEVICE": "interp"}
  out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
  assert out.stdout.strip() == "TypeCheckError", out.stderr[-2000:]
