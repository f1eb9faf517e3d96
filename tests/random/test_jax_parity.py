"""tracegrad.random against jax.random bit for bit: keys, bits and every sampler in both threefry schemes (JAX's
default partitionable one and the original), eagerly, under jit and under vmap over keys."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import random as tr

from oracles import x64

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _np(r): return jnp if r is jax.random else tnp


# name: f(random module, key); each is drawn with jax.random and tracegrad.random from the same seed
DRAWS = {
  "split": lambda r, k: r.split(k, 3),
  "split_shape": lambda r, k: r.split(k, (2, 3)),
  "fold_in": lambda r, k: r.fold_in(k, 12345),
  "bits": lambda r, k: r.bits(k, (7,)),
  "bits_0d": lambda r, k: r.bits(k, ()),
  "bits_uint8": lambda r, k: r.bits(k, (5,), _np(r).uint8),
  "bits_uint16": lambda r, k: r.bits(k, (2, 3), _np(r).uint16),
  "uniform": lambda r, k: r.uniform(k, (33,)),
  "uniform_0d": lambda r, k: r.uniform(k),
  "uniform_range": lambda r, k: r.uniform(k, (2, 7), minval=-2.3, maxval=3.7),
  "uniform_float16": lambda r, k: r.uniform(k, (9,), _np(r).float16),
  "uniform_bfloat16": lambda r, k: r.uniform(k, (9,), _np(r).bfloat16),
  "normal": lambda r, k: r.normal(k, (1001,)),
  "normal_0d": lambda r, k: r.normal(k),
  "normal_2d": lambda r, k: r.normal(k, (3, 5)),
  "truncated_normal": lambda r, k: r.truncated_normal(k, -0.5, 3.0, (301,)),
  "exponential": lambda r, k: r.exponential(k, (301,)),
  "gumbel": lambda r, k: r.gumbel(k, (301,)),
  "randint": lambda r, k: r.randint(k, (101,), -3, 9),
  "randint_0d": lambda r, k: r.randint(k, (), 0, 1000),
  "bernoulli": lambda r, k: r.bernoulli(k, 0.3, (101,)),
  "categorical": lambda r, k: r.categorical(k, _np(r).asarray([0.1, 2.0, -1.0]), shape=(50,)),
  "categorical_axis0": lambda r, k: r.categorical(k, _np(r).asarray([[0.1, 2.0, -1.0], [1., 2., 3.]]), axis=0,
                                                  shape=(4, 3)),
  "permutation": lambda r, k: r.permutation(k, 9),
  "permutation_rows": lambda r, k: r.permutation(k, _np(r).arange(12).reshape(4, 3), axis=1),
  "permutation_two_rounds": lambda r, k: r.permutation(k, 3000),
  "choice": lambda r, k: r.choice(k, 10, (4,)),
  "choice_no_replace": lambda r, k: r.choice(k, 10, (4,), replace=False),
  "choice_p": lambda r, k: r.choice(k, 5, (64,), p=_np(r).asarray([0.1, 0.2, 0.3, 0.0, 0.4])),
  "choice_p_no_replace": lambda r, k: r.choice(k, 5, (3,), replace=False,
                                                p=_np(r).asarray([0.1, 0.2, 0.3, 0.0, 0.4])),
}
# drawn under jit and vmap too (the rest only eagerly, to keep the tests fast)
TRANSFORMED = ["split", "bits", "uniform_range", "normal_2d", "truncated_normal", "gumbel", "randint", "permutation"]


def _same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}") if got.dtype.kind == "f" else got,
                                want.view(f"u{want.dtype.itemsize}") if want.dtype.kind == "f" else want)


@pytest.mark.parametrize("name", DRAWS)
def test_matches_jax_bit_for_bit(scheme, name):
  f = DRAWS[name]
  _same(f(tr, tr.key(7)), f(jax.random, jax.random.PRNGKey(7)))


@pytest.mark.parametrize("name", TRANSFORMED)
def test_matches_jax_under_jit_and_vmap(scheme, name):
  f = DRAWS[name]
  want = np.stack([np.asarray(f(jax.random, k)) for k in jax.random.split(jax.random.PRNGKey(3), 3)])
  keys = tr.split(tr.key(3), 3)
  _same(tg.jit(lambda k: f(tr, k))(keys[1]), want[1])
  _same(tg.vmap(lambda k: f(tr, k))(keys), want)


def test_the_documented_draw(scheme):
  want = [1.6226422, 2.0252647, -0.43359444] if scheme else [1.8160863, -0.48262316, 0.33988908]
  np.testing.assert_array_equal(np.asarray(tr.normal(tr.key(0), (3,))), np.float32(want))
  _same(tr.normal(tr.key(0), (3,)), jax.random.normal(jax.random.key(0), (3,)))


@pytest.mark.parametrize("name", ["bits", "uniform", "uniform_range"])
def test_64_bit_words_and_floats_match_jax(scheme, name):
  with x64():
    jax.config.update("jax_enable_x64", True)
    try:
      f = {"bits": lambda r, k: r.bits(k, (5,), _np(r).uint64),
           "uniform": lambda r, k: r.uniform(k, (5,), _np(r).float64),
           "uniform_range": lambda r, k: r.uniform(k, (2, 3), _np(r).float64, -1.5, 2.5)}[name]
      _same(f(tr, tr.key(7)), f(jax.random, jax.random.PRNGKey(7)))
    finally:
      jax.config.update("jax_enable_x64", False)
