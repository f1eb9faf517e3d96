"""The jax.lax operations of tracegrad.lax.ops against numpy, eagerly and traced: values, shapes and dtypes, jax.lax's
one-dtype rule (a Python number takes the other operand's dtype), and their derivatives and batching."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check, check_grads, check_vmap, np_dtype

rng = np.random.default_rng(0)
BINARY = {"add": (lax.add, np.add), "sub": (lax.sub, np.subtract), "mul": (lax.mul, np.multiply),
          "max": (lax.max, np.maximum), "min": (lax.min, np.minimum)}
DTYPES = ["float32", "float16", "bfloat16", "int8", "int32", "uint8", "bool"]


def rand(shape, dtype: str) -> np.ndarray:
  if dtype == "bool": return rng.random(shape) < 0.5
  if dtype.startswith(("int", "uint")):
    return rng.integers(0 if dtype.startswith("u") else -50, 50, shape).astype(dtype)
  return rng.standard_normal(shape).astype(np.float32).astype(np_dtype(dtype))


def ref_pad(x: np.ndarray, value, config) -> np.ndarray:
  """XLA's pad: interior copies of value between neighbours, then low and high ones (negative ones crop)."""
  for ax, (lo, hi, interior) in enumerate(config):
    n = x.shape[ax]
    shape = list(x.shape)
    shape[ax] = max(n - 1, 0) * (interior + 1) + min(n, 1)
    out = np.full(shape, value, x.dtype)
    out[(slice(None),) * ax + (slice(None, None, interior + 1),)] = x
    width = [(0, 0)] * x.ndim
    width[ax] = (max(lo, 0), max(hi, 0))
    out = np.pad(out, width, constant_values=np.asarray(value).astype(x.dtype))
    x = out[(slice(None),) * ax + (slice(max(-lo, 0), out.shape[ax] - max(-hi, 0)),)]
  return x


@pytest.mark.parametrize("name,dtype", [(n, d) for n in sorted(BINARY) for d in DTYPES if (n, d) != ("sub", "bool")])
def test_binary_ops_match_numpy(name, dtype):
  f, ref = BINARY[name]
  x, y = rand((3, 4), dtype), rand((3, 4), dtype)
  check(f, ref, x, y)
  check(f, ref, x, np.asarray(y[0, 0]))  # a scalar is broadcast


def test_python_numbers_take_the_other_operands_dtype():
  x8, h = rand((4,), "int8"), rand((2, 3), "float16")
  check(lambda a: lax.add(a, 3), lambda a: a + np.int8(3), x8)
  check(lambda a: lax.mul(2.5, a), lambda a: np.float16(2.5) * a, h)
  check(lambda a: lax.sub(1, a), lambda a: np.float16(1) - a, h)
  assert not lax.max(tnp.asarray(h), 0.0).weak_type
  both = lax.add(1.0, 2)
  assert both.dtype == tnp.float32 and both.weak_type and float(both) == 3.0
  assert lax.min(tnp.asarray(x8), 100).dtype == tnp.int8


def test_mismatched_dtypes_and_shapes_raise():
  f32, i32 = tnp.ones(3), tnp.ones(3, tnp.int32)
  with pytest.raises(TypeError, match="add: the operands must have one dtype, got float32 and int32"):
    lax.add(f32, i32)
  with pytest.raises(TypeError, match="sub: .* got int32 and float32"):
    lax.sub(i32, 1.5)  # a float does not take an integer dtype
  with pytest.raises(TypeError, match="max: .* got float16 and bfloat16"):
    lax.max(tnp.ones(2, tnp.float16), tnp.ones(2, tnp.bfloat16))
  with pytest.raises(TypeError, match="mul: .* got float32 and int32"):
    lax.mul(f32, np.int32(2))  # a numpy scalar keeps its dtype
  with pytest.raises(TypeError, match="sub: not defined on bool"):
    lax.sub(tnp.ones(2, bool), True)
  with pytest.raises(ValueError, match=r"min: the operands must have one shape .*\(3,\) and \(2,\)"):
    lax.min(f32, tnp.ones(2))
  with pytest.raises(OverflowError, match="add: Python int 300 is out of range for int8"):
    lax.add(tnp.ones(2, tnp.int8), 300)
  with pytest.raises(TypeError, match="pad: padding_value's dtype int32 differs from the operand's float32"):
    lax.pad(f32, tnp.int32(0), [(1, 1, 0)])


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool"])
def test_convert_element_type(dtype):
  x = (rng.standard_normal((2, 5)) * 20).astype(np.float32)  # floats to integers truncate toward zero
  got = check(lambda a: lax.convert_element_type(a, dtype), lambda a: a.astype(np_dtype(dtype)),
              np.abs(x) if dtype == "uint8" else x)
  assert not got.weak_type
  check(lambda a: lax.convert_element_type(a, tnp.float16), lambda a: a.astype(np.float16), rand((3,), "int8"))


def test_movement_ops_match_numpy():
  x = rand((2, 3, 4), "float32")
  check(lambda a: lax.transpose(a, (2, 0, 1)), lambda a: np.transpose(a, (2, 0, 1)), x)
  check(lambda a: lax.reshape(a, (4, 6)), lambda a: a.reshape(4, 6), x)
  check(lambda a: lax.reshape(a, (3, 8), dimensions=(1, 0, 2)), lambda a: a.transpose(1, 0, 2).reshape(3, 8), x)
  check(lambda a: lax.slice(a, (0, 1, 1), (2, 3, 4), (1, 1, 2)), lambda a: a[0:2, 1:3, 1:4:2], x)
  check(lambda a: lax.slice(a, (1, 0, 0), (2, 3, 4)), lambda a: a[1:2], x)
  v = rand((3,), "int8")
  check(lambda a: lax.broadcast_in_dim(a, (2, 3, 4), (1,)), lambda a: np.broadcast_to(a[None, :, None], (2, 3, 4)), v)
  check(lambda a: lax.broadcast_in_dim(a, (5, 3), (0, 1)), lambda a: np.broadcast_to(a, (5, 3)), x[:1, :, 0])
  check(lambda a: lax.broadcast_in_dim(a, (2, 2), ()), lambda a: np.full((2, 2), a), np.float32(1.5))


def test_movement_op_errors():
  x = tnp.ones((2, 3))
  with pytest.raises(ValueError, match="transpose: .* not a permutation"): lax.transpose(x, (0, 0))
  with pytest.raises(ValueError, match=r"reshape: cannot reshape an array of shape \(2, 3\) into shape \(4,\)"):
    lax.reshape(x, (4,))
  with pytest.raises(ValueError, match="slice: .* do not fit shape"): lax.slice(x, (0, 2), (2, 1))
  with pytest.raises(ValueError, match="broadcast_in_dim: cannot put"): lax.broadcast_in_dim(x, (2, 3), (1, 0))
  with pytest.raises(ValueError, match="broadcast_in_dim: cannot put"): lax.broadcast_in_dim(x, (2, 4), (0, 1))
  with pytest.raises(TypeError, match="slice: strides must be a sequence of ints"): lax.slice(x, (0, 0), (1, 1), 2)
  with pytest.raises(ValueError, match="pad: padding_config needs one"): lax.pad(x, 0.0, [(1, 1, 0)])
  with pytest.raises(ValueError, match="pad: padding_config needs one"): lax.pad(x, 0.0, [(0, 0, -1), (0, 0, 0)])
  with pytest.raises(ValueError, match="pad: .* crops more"): lax.pad(x, 0.0, [(-2, -1, 0), (0, 0, 0)])


@pytest.mark.parametrize("config", [[(1, 2, 0), (0, 0, 1)], [(-1, 2, 2), (2, -3, 1)], [(0, 0, 0), (-4, 1, 0)],
                                    [(3, -1, 1), (0, 0, 0)]])
@pytest.mark.parametrize("dtype,value", [("float32", 0.0), ("float32", -np.inf), ("int32", -7), ("bool", True),
                                         ("bfloat16", 2.5)])
def test_pad_matches_xla_semantics(config, dtype, value):
  x = rand((3, 4), dtype)
  check(lambda a: lax.pad(a, value, config), lambda a: ref_pad(a, value, config), x)


def test_reduce_sum_keeps_the_dtype():
  for dtype in ("float32", "int8", "uint8"):
    x = rand((3, 4, 2), dtype)
    check(lambda a: lax.reduce_sum(a, (0, 2)), lambda a: a.sum((0, 2), dtype=a.dtype), x)
  h = rand((5, 40), "float16")
  check(lambda a: lax.reduce_sum(a, (1,)), lambda a: a.astype(np.float32).sum(1).astype(np.float16), h)
  check(lambda a: lax.reduce_sum(a, (1,)), lambda a: a.any(1), rand((3, 4), "bool"))


def test_grads_and_vmap():
  x, y = rand((3, 4), "float32"), rand((3, 4), "float32")
  check_grads(lambda a, b: lax.mul(lax.max(a, b), lax.sub(a, 0.5)), (x, y))
  check_grads(lambda a, v: lax.pad(a, v, [(1, -1, 1), (0, 2, 0)]), (x, np.float32(0.3)))
  check_grads(lambda a: lax.reduce_sum(lax.broadcast_in_dim(a, (2, 3, 4), (1, 2)), (0, 1)), (x,))
  xs = rand((5, 3, 4), "float32")
  check_vmap(lambda a: lax.pad(a, -1.0, [(1, 0, 2), (-1, 1, 0)]), (xs,))
  check_vmap(lambda a, b: lax.add(lax.transpose(a, (1, 0)), b), (xs, xs.transpose(0, 2, 1)))
  check_vmap(lambda a: lax.reduce_sum(lax.slice(a, (0, 1), (3, 4), (2, 1)), (1,)), (xs,), in_axes=1)

  def square_of_sum(a):
    s = lax.reduce_sum(lax.min(a, 0.0), (0, 1))
    return lax.mul(s, s)
  check_vmap(tg.grad(square_of_sum), (xs,))
