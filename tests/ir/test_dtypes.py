import numpy as np
import pytest

from tracegrad.ir import dtypes as d
from tracegrad.ir.dtypes import promote_types, result_type

# (a, b, result) pairs from JAX's promotion table (64-bit mode off)
TABLE = [
  (d.bool_, d.int8, d.int8), (d.int8, d.uint8, d.int16), (d.uint8, d.int32, d.int32), (d.uint16, d.int16, d.int32),
  (d.int32, d.uint32, d.int32), (d.float16, d.bfloat16, d.float32), (d.uint32, d.float16, d.float16),
  (d.int8, d.bfloat16, d.bfloat16), (d.float16, d.float32, d.float32), (d.bool_, d.float16, d.float16),
  (d.uint8, d.uint16, d.uint16), (d.int16, d.int8, d.int16), (d.bool_, d.bool_, d.bool_),
]


@pytest.mark.parametrize("a,b,want", TABLE)
def test_promotion_table_matches_jax(a, b, want):
  assert promote_types(a, b) is want and promote_types(b, a) is want


@pytest.mark.parametrize("strong,weak,want", [
  ((d.int8, False), (d.int32, True), (d.int8, False)),
  ((d.float16, False), (d.float32, True), (d.float16, False)),
  ((d.int8, False), (d.float32, True), (d.float32, True)),
  ((d.bool_, False), (d.int32, True), (d.int32, True)),
  ((d.uint8, False), (d.int32, True), (d.uint8, False)),
  ((d.bfloat16, False), (d.float32, True), (d.bfloat16, False)),
])
def test_weak_python_scalars_take_the_array_dtype(strong, weak, want):
  assert result_type(strong, weak) == want and result_type(weak, strong) == want


def test_weak_with_weak_stays_weak():
  assert result_type((d.int32, True), (d.float32, True)) == (d.float32, True)


def test_x64_mode_widens_and_narrows():
  assert d.canonicalize(d.float64) is d.float32 and d.canonicalize(d.int64) is d.int32
  d.set_x64(True)
  try:
    assert d.canonicalize(d.float64) is d.float64 and promote_types(d.int32, d.uint32) is d.int64
    assert result_type((d.int64, True), (d.float64, True)) == (d.float64, True)
  finally:
    d.set_x64(False)
  assert promote_types(d.int32, d.uint32) is d.int32


def test_unsupported_dtype_names_it():
  with pytest.raises(TypeError, match="clongdouble|complex256"): d.as_dtype(np.clongdouble)
  with pytest.raises(TypeError, match="not a data type"): d.as_dtype(object())
