"""tracegrad.random: Threefry matches the published known answers, draws are pure functions of their key (the same
eagerly, under jit and under vmap), and each distribution has the right statistics."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import random as tr

from oracles import x64

N = 20000


def _u32(v): return tnp.asarray(np.uint32(v))


@pytest.mark.parametrize("key,ctr,want", [
  ((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
  ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
  ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
])
def test_threefry_known_answers(key, ctr, want):
  got = tr.threefry2x32(*map(_u32, key), *map(_u32, ctr))
  assert tuple(int(g) for g in got) == want


def test_keys_split_and_fold_in():
  k = tr.key(0)
  np.testing.assert_array_equal(np.asarray(tr.PRNGKey(0)), [0, 0])
  np.testing.assert_array_equal(np.asarray(tr.split(k)), [[1797259609, 2579123966], [928981903, 3453687069]])
  ks = np.asarray(tr.split(k, 5))
  assert ks.shape == (5, 2) and len({tuple(r) for r in ks}) == 5
  assert not np.array_equal(np.asarray(tr.fold_in(k, 1)), np.asarray(tr.fold_in(k, 2)))
  np.testing.assert_array_equal(np.asarray(tr.key(2 ** 40 + 7)), [0, 7])
  with pytest.raises(TypeError, match="uint32\\[2\\]"):
    tr.uniform(np.zeros(3, np.uint32))
  with pytest.raises(TypeError, match="integer scalar"):
    tr.key(1.5)


# jax.random.key_data(jax.random.key(seed)) (and jax.random.PRNGKey(seed)) in JAX 0.10.2: the seed's low 32 bits,
# after its high 32 bits as an int64 with jax_enable_x64 on (else 0)
JAX_KEYS = [   # seed, words with x64 off, words with x64 on
  (-1, [0, 4294967295], [4294967295, 4294967295]),
  (-5, [0, 4294967291], [4294967295, 4294967291]),
  (-2 ** 31, [0, 2147483648], [4294967295, 2147483648]),
  (-2 ** 31 - 1, [0, 2147483647], [4294967295, 2147483647]),
  (2 ** 31 - 1, [0, 2147483647], [0, 2147483647]),
  (2 ** 32 - 1, [0, 4294967295], [0, 4294967295]),
  (2 ** 32, [0, 0], [1, 0]),
  (2 ** 63 - 1, [0, 4294967295], [2147483647, 4294967295]),
  (-2 ** 63, [0, 0], [2147483648, 0]),
  (0, [0, 0], [0, 0]),
  (42, [0, 42], [0, 42]),
]


@pytest.mark.parametrize("seed,off,on", JAX_KEYS)
def test_key_words_match_jax(seed, off, on):
  np.testing.assert_array_equal(np.asarray(tr.key(seed)), off)
  np.testing.assert_array_equal(np.asarray(tr.PRNGKey(seed)), off)
  with x64():
    np.testing.assert_array_equal(np.asarray(tr.key(seed)), on)


def test_key_from_an_array_seed_matches_jax():
  for seed, off, on in [(np.int64(-1), [0, 4294967295], [4294967295, 4294967295]),
                        (np.int64(2 ** 40 + 7), [0, 7], [256, 7]), (np.int8(-1), [0, 4294967295], [0, 4294967295])]:
    np.testing.assert_array_equal(np.asarray(tr.key(seed)), off)
    with x64():
      np.testing.assert_array_equal(np.asarray(tr.key(seed)), on)
      np.testing.assert_array_equal(np.asarray(tg.jit(tr.key)(seed)), on)
  np.testing.assert_array_equal(np.asarray(tr.key(True)), [0, 1])   # a Python bool is an int, as in JAX
  with pytest.raises(TypeError, match="key: the seed must be an integer scalar, got bool"):
    tr.key(tnp.asarray(True))


@pytest.mark.parametrize("seed", [2 ** 63, -2 ** 63 - 1, 2 ** 64, 2 ** 70])
def test_key_seed_beyond_int64_raises_as_in_jax(seed):
  with pytest.raises(OverflowError, match=f"key: the seed {seed} does not fit in int64"):
    tr.key(seed)


DRAWS = {
  "uniform": lambda k: tr.uniform(k, (7,), minval=-2.0, maxval=3.0),
  "normal": lambda k: tr.normal(k, (2, 3)),
  "normal_many": lambda k: tr.normal(k, (4096,)),
  "truncated_normal": lambda k: tr.truncated_normal(k, -0.5, 3.0, (512,)),
  "randint": lambda k: tr.randint(k, (6,), -3, 9),
  "bernoulli": lambda k: tr.bernoulli(k, 0.3, (5,)),
  "gumbel": lambda k: tr.gumbel(k, (4,)),
  "exponential": lambda k: tr.exponential(k, (4,)),
  "categorical": lambda k: tr.categorical(k, tnp.asarray([0.1, 2.0, -1.0]), shape=(5,)),
  "permutation": lambda k: tr.permutation(k, 9),
  "choice": lambda k: tr.choice(k, 10, (4,), replace=False),
  "choice_p": lambda k: tr.choice(k, 5, (64,), p=tnp.asarray([0.1, 0.2, 0.3, 0.0, 0.4])),
  "bits": lambda k: tr.bits(k, (3,)),
}


@pytest.mark.parametrize("name", DRAWS)
def test_the_same_eagerly_under_jit_and_under_vmap(name):
  f = DRAWS[name]
  keys = tr.split(tr.key(7), 3)
  eager = [np.asarray(f(keys[i])) for i in range(3)]
  # bit for bit: the samplers' transcendentals come from portable_math, which every device rounds alike
  np.testing.assert_array_equal(np.asarray(tg.jit(f)(keys[1])), eager[1])
  np.testing.assert_array_equal(np.asarray(tg.vmap(f)(keys)), np.stack(eager))
  np.testing.assert_array_equal(np.asarray(tg.jit(tg.vmap(f))(keys)), np.stack(eager))
  assert not all(np.array_equal(eager[0], e) for e in eager[1:])


def _ks(sample: np.ndarray, cdf) -> float:
  """The Kolmogorov-Smirnov distance of a sample from a distribution."""
  x = np.sort(sample.astype(np.float64))
  c = cdf(x)
  n = len(x)
  return float(max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)))


LIMIT = 1.95 / math.sqrt(N)   # the 0.1% critical value of the KS distance


def test_continuous_distributions():
  k1, k2, k3, k4 = tr.split(tr.key(1), 4)
  u = np.asarray(tr.uniform(k1, (N,), minval=-1.0, maxval=3.0))
  assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 3
  assert _ks(u, lambda x: (x + 1) / 4) < LIMIT
  z = np.asarray(tr.normal(k2, (N,)))
  erf = np.vectorize(math.erf)
  assert _ks(z, lambda x: 0.5 * (1 + erf(x / math.sqrt(2)))) < LIMIT
  e = np.asarray(tr.exponential(k3, (N,)))
  assert e.min() >= 0 and _ks(e, lambda x: 1 - np.exp(-x)) < LIMIT
  g = np.asarray(tr.gumbel(k4, (N,)))
  assert _ks(g, lambda x: np.exp(-np.exp(-x))) < LIMIT
  d = np.asarray(tr.uniform(k1, (N,), dtype=tnp.float16))
  assert d.dtype == np.float16 and 0.45 < d.astype(np.float32).mean() < 0.55


def test_discrete_distributions():
  k1, k2, k3, k4, k5 = tr.split(tr.key(2), 5)
  r = np.asarray(tr.randint(k1, (N,), 3, 8))
  assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6, 7}
  assert np.abs(np.bincount(r - 3) / N - 0.2).max() < 0.015
  b = np.asarray(tr.bernoulli(k2, 0.25, (N,)))
  assert b.dtype == np.bool_ and abs(b.mean() - 0.25) < 0.015
  p = np.array([0.1, 0.6, 0.3])
  c = np.asarray(tr.categorical(k3, tnp.log(tnp.asarray(p)), shape=(N,)))
  np.testing.assert_allclose(np.bincount(c, minlength=3) / N, p, atol=0.015)
  perm = np.asarray(tr.permutation(k4, 50))
  assert sorted(perm) == list(range(50)) and not np.array_equal(perm, np.arange(50))
  x = np.arange(12.0).reshape(6, 2)
  assert sorted(map(tuple, np.asarray(tr.permutation(k4, x)))) == sorted(map(tuple, x))
  picked = np.asarray(tr.choice(k5, 30, (10,), replace=False))
  assert len(set(picked)) == 10 and picked.max() < 30
  weighted = np.asarray(tr.choice(k5, tnp.asarray([5.0, 6.0, 7.0]), (N,), p=tnp.asarray(p)))
  np.testing.assert_allclose([np.mean(weighted == v) for v in (5, 6, 7)], p, atol=0.015)
  with pytest.raises(ValueError, match="without replacement"):
    tr.choice(k5, 3, (4,), replace=False)


def test_choice_checks_its_arguments():
  k = tr.key(0)
  with pytest.raises(ValueError, match=r"choice: p must be .*1-D.* \(a = 3\), got p of shape \(2,\)"):
    tr.choice(k, 3, (2,), p=tnp.asarray([0.5, 0.5]))
  with pytest.raises(ValueError, match=r"choice: p .*\(a.shape\[axis\] = 4\), got p of shape \(1, 4\)"):
    tr.choice(k, tnp.ones((3, 4)), (2,), axis=1, p=tnp.ones((1, 4)) / 4)
  with pytest.raises(ValueError, match="choice: a must be greater than 0 unless no samples are taken"):
    tr.choice(k, 0, (2,))
  with pytest.raises(ValueError, match="choice: axis 2 is out of bounds"):
    tr.choice(k, tnp.ones((3, 4)), (2,), axis=2)
  with pytest.raises(ValueError, match=r"choice: shape must hold non-negative ints, got \(-1,\)"):
    tr.choice(k, 3, (-1,))
  assert tr.choice(k, 0, (0,)).shape == (0,)
  assert set(np.asarray(tr.choice(k, tnp.asarray(3), (20,))).tolist()) <= {0, 1, 2}   # a scalar array is an int


@pytest.mark.parametrize("draw", [
  lambda k: tr.uniform(k, (3,), minval=tnp.zeros((2, 3))),
  lambda k: tr.randint(k, (3,), tnp.zeros((2, 3), tnp.int32), 5),
  lambda k: tr.bernoulli(k, tnp.full((2, 3), 0.5), (3,)),
  lambda k: tr.truncated_normal(k, tnp.zeros((2, 3)), 1.0, (3,)),
  lambda k: tr.categorical(k, tnp.zeros((2, 3, 4)), shape=(3,)),
])
def test_parameters_must_broadcast_to_the_shape(draw):
  with pytest.raises(ValueError, match=r"parameter shapes .*\(2, 3\).* must broadcast to the shape argument \(3,\)"):
    draw(tr.key(0))


def test_parameters_may_broadcast_up_to_the_shape():
  k = tr.key(0)
  assert tr.uniform(k, (2, 3), minval=tnp.zeros(3)).shape == (2, 3)
  assert tr.bernoulli(k, tnp.full((3,), 0.5), (2, 3)).shape == (2, 3)
  assert tr.categorical(k, tnp.zeros((3, 4)), shape=(5, 3)).shape == (5, 3)


def test_truncated_normal():
  x = np.asarray(tr.truncated_normal(tr.key(3), -2.0, 1.0, (N,)))
  assert x.dtype == np.float32 and x.min() >= -2.0 and x.max() <= 1.0
  erf = np.vectorize(math.erf)
  phi = lambda v: 0.5 * (1 + erf(v / math.sqrt(2)))
  assert _ks(x, lambda v: (phi(v) - phi(-2.0)) / (phi(1.0) - phi(-2.0))) < LIMIT
  assert tr.truncated_normal(tr.key(0), tnp.zeros(3), 1.0).shape == (3,)
