"""Complex dtypes in JAX's promotion lattice: weak Python complex scalars, canonical widths, kinds."""
import numpy as np
import pytest

import tracegrad.numpy as tnp
from tracegrad.ir import dtypes as d

TYPES = [d.bool_, d.int8, d.uint8, d.int32, d.float16, d.bfloat16, d.float32, d.complex64]


@pytest.mark.parametrize("a", TYPES, ids=str)
def test_promotion_with_complex_matches_jax(a):
  jnp = pytest.importorskip("jax.numpy")
  for b in [d.complex64, complex]:
    want = jnp.result_type(jnp.dtype(a.name) if a is not d.bfloat16 else jnp.bfloat16, b)
    got = tnp.result_type(a, b)
    assert got == np.dtype(want), (a, b, got, want)


def test_kinds_and_parts():
  assert d.complex64.is_complex and d.complex64.is_inexact and not d.complex64.is_float
  assert d.complex64.real is d.float32 and d.complex128.real is d.float64
  assert d.complex_of(d.float16) is d.complex64 and d.complex64.short == "c64"
  assert d.canonicalize(d.complex128) is d.complex64   # without 64-bit mode, as JAX


def test_weak_complex_scalar_keeps_the_array_width():
  x = tnp.ones(2, tnp.float32) + 1j
  assert x.dtype == tnp.complex64 and not x.weak_type
  assert (tnp.arange(3) * 1j).dtype == tnp.complex64
  assert tnp.asarray(1j).weak_type and tnp.asarray(1j).dtype == tnp.complex64
