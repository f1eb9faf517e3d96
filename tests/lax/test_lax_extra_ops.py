"""lax.mulhi and lax.conv_general_dilated_local against jax.lax: values, shapes, dtypes, gradients and errors."""
import numpy as np
import pytest

import tracegrad
from tracegrad import lax
from oracles import assert_ulps_close, x64

jax = pytest.importorskip("jax")
jlax = jax.lax

rng = np.random.default_rng(0)


def _ints(dt: str, n: int) -> np.ndarray:
  info = np.iinfo(dt)
  a = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
  a[:6] = [info.min, info.max, info.min, 0, 1, info.max]  # the corners: paired with b's below
  return a


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_mulhi_matches_jax(dt):
  a, b = _ints(dt, 64), _ints(dt, 64)[::-1].copy()
  b[:6] = [np.iinfo(dt).min, np.iinfo(dt).max, np.iinfo(dt).max, np.iinfo(dt).min, np.iinfo(dt).max, 1]
  want = np.asarray(jlax.mulhi(a, b))
  assert_ulps_close(lax.mulhi(a, b), want)
  assert_ulps_close(tracegrad.jit(lax.mulhi)(a, b), want)
  assert_ulps_close(tracegrad.vmap(lax.mulhi)(a.reshape(8, 8), b.reshape(8, 8)), want.reshape(8, 8))


@pytest.mark.parametrize("dt", ["int64", "uint64"])
def test_mulhi_64_bits_matches_jax(dt):
  with x64():
    jax.config.update("jax_enable_x64", True)
    try:
      a, b = _ints(dt, 32), _ints(dt, 32)[::-1].copy()
      assert_ulps_close(lax.mulhi(a, b), np.asarray(jlax.mulhi(a, b)))
    finally:
      jax.config.update("jax_enable_x64", False)


def test_mulhi_broadcasts_and_weak_scalars_as_jax():
  a = np.array([[2**30, -7, 5]], np.int32)
  b = np.array([[8], [3]], np.int32)
  for x, y in [(a, b), (a, 2**31 - 1), (-3, a), (np.int32(-9), a)]:
    got, want = lax.mulhi(x, y), jlax.mulhi(x, y)
    assert_ulps_close(got, np.asarray(want))
  assert lax.mulhi(5, 7).weak_type and not lax.mulhi(a, 7).weak_type


def test_mulhi_bad_operands_raise_as_jax():
  i32, i16, f32 = np.ones(3, np.int32), np.ones(3, np.int16), np.ones(3, np.float32)
  cases = [(i32, i16), (f32, f32), (np.ones(3, bool), np.ones(3, bool)), (np.ones((2, 3), np.int32), i32),
           (np.ones((2, 3), np.int32), np.ones((4, 3), np.int32))]
  for x, y in cases:
    with pytest.raises(TypeError):
      jlax.mulhi(x, y)
    with pytest.raises(TypeError, match="mulhi"):
      lax.mulhi(x, y)


# ---- conv_general_dilated_local ----

LOCAL = [  # (lhs shape, dimension_numbers, filter_shape, strides, padding, lhs_dilation, rhs_dilation)
  ((2, 3, 5, 6), None, (2, 3), (1, 1), "VALID", None, None),
  ((2, 5, 6, 3), ("NHWC", "HWIO", "NHWC"), (2, 3), (2, 1), "SAME", None, (1, 2)),
  ((1, 5, 6, 2), ("NHWC", "WHIO", "NCHW"), (3, 2), (1, 2), ((1, 0), (2, 1)), (2, 1), None),
  ((2, 3, 7), ("NCH", "OIH", "NHC"), (3,), (2,), "SAME", None, None),
]


def _local_case(i):
  xs, dn, fs, strides, pad, ld, rd = LOCAL[i]
  x = rng.standard_normal(xs).astype(np.float32)
  patches = jax.eval_shape(lambda x: jlax.conv_general_dilated_patches(x, fs, strides, pad, ld, rd, dn), x)
  d = jlax.conv_dimension_numbers(xs, (1, 1) + fs, dn)
  shape = [0] * len(xs)
  shape[d.rhs_spec[0]] = 4
  for j in range(1, len(xs)): shape[d.rhs_spec[j]] = patches.shape[d.out_spec[j]]
  w = rng.standard_normal(shape).astype(np.float32)
  return x, w, lambda l: (lambda x, w: l.conv_general_dilated_local(x, w, strides, pad, fs, ld, rd, dn))


@pytest.mark.parametrize("i", range(len(LOCAL)))
def test_conv_local_matches_jax_in_value_and_gradient(i):
  x, w, f = _local_case(i)
  ct = rng.standard_normal(jax.eval_shape(f(jlax), x, w).shape).astype(np.float32)

  # the value and the gradient of sum(out * ct), from one compiled JAX program
  want, (gx, gw) = jax.jit(lambda x, w, ct: (lambda o, pull: (o, pull(ct)))(*jax.vjp(f(jlax), x, w)))(x, w, ct)
  got, pull = tracegrad.vjp(f(lax), x, w)
  tx, tw = pull(ct)
  assert_ulps_close(got, np.asarray(want), rel=16, absolute=16)
  assert_ulps_close(tx, np.asarray(gx), rel=16, absolute=16)
  assert_ulps_close(tw, np.asarray(gw), rel=16, absolute=16)
  if i == 0: assert_ulps_close(tracegrad.jit(f(lax))(x, w), np.asarray(want), rel=16, absolute=16)


def test_conv_local_precision_and_dtype_as_jax():
  x, w, _ = _local_case(0)
  h, hw = x.astype(np.float16), w.astype(np.float16)
  args = ((1, 1), "VALID", (2, 3))
  want = np.asarray(jax.jit(lambda h, hw: jlax.conv_general_dilated_local(h, hw, *args, precision="highest"))(h, hw))
  for p in (None, "highest", lax.Precision.HIGHEST, ("highest", "default")):
    assert_ulps_close(lax.conv_general_dilated_local(h, hw, *args, precision=p), want, rel=8, absolute=8)


def test_conv_local_bad_shapes_raise_as_jax():
  x, w, _ = _local_case(0)
  bad = [(x, w[:, :-1]), (x, w[..., :-1]), (x, w[0]), (x[0], w)]
  for xb, wb in bad:
    with pytest.raises(TypeError):  # traced only: JAX checks shapes before it compiles
      jax.eval_shape(lambda x, w: jlax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 3)), xb, wb)
    with pytest.raises(TypeError, match="conv_general_dilated_local: .*rhs"):
      lax.conv_general_dilated_local(xb, wb, (1, 1), "VALID", (2, 3))
  with pytest.raises(TypeError, match="filter_shape"):
    lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 3, 1))
