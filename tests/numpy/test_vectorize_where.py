"""vectorize with gufunc signatures, the one-argument where and array_equiv on shapes that do not broadcast, against
jax.numpy: values, shapes, dtypes, gradients and the exceptions JAX raises."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import same
from oracles import ulps

jax = pytest.importorskip("jax")
jnp = jax.numpy

rng = np.random.default_rng(0)


# ---- array_equiv ----

@pytest.mark.parametrize("s, t", [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (4,)), ((5, 2, 3), (4, 3)),
                                  ((2, 3), (5, 2, 4)), ((), (3,))])
def test_array_equiv_matches_jax(s, t):
  a, b = np.ones(s, np.float32), np.ones(t, np.float32)
  same(tnp.array_equiv(a, b), jnp.array_equiv(a, b))
  same(tracegrad.jit(tnp.array_equiv)(a, b), jnp.array_equiv(a, b))


@pytest.mark.parametrize("s, t", [((2,), (3,)), ((2, 3), (2, 4)), ((3, 1), (2, 4))])
def test_array_equiv_raises_as_jax_for_one_rank_that_does_not_broadcast(s, t):
  a, b = np.ones(s), np.ones(t)
  with pytest.raises(TypeError):
    jnp.array_equiv(a, b)
  with pytest.raises(TypeError, match=r"array_equiv: a1 of shape"):
    tnp.array_equiv(a, b)


# ---- where(condition) ----

@pytest.mark.parametrize("kw", [{}, dict(size=3), dict(size=5, fill_value=-1), dict(size=2, fill_value=(7, 8))])
def test_one_argument_where_is_nonzero(kw):
  c = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
  same(tnp.where(c, **kw), jnp.where(c, **kw))
  same(tnp.where(c > 0, **kw), jnp.where(c > 0, **kw))
  if kw: same(tracegrad.jit(lambda c: tnp.where(c, **kw))(c), jnp.where(c, **kw))


def test_where_bad_arguments_raise_as_jax():
  c = np.array([True, False])
  for args, kw, err in [((c, 1), {}, TypeError), ((c, None, 2), {}, TypeError), ((c, 1, 2), dict(size=3), ValueError),
                        ((c, 1, 2), dict(fill_value=0), ValueError), ((np.array(1),), {}, ValueError),
                        (([0, 1],), {}, TypeError)]:
    with pytest.raises(err):
      jnp.where(*args, **kw)
    with pytest.raises(err, match="where"):
      tnp.where(*args, **kw)
  with pytest.raises(TypeError, match="size"):  # a traced condition needs size=, as in JAX
    tracegrad.jit(tnp.where)(c)


# ---- vectorize ----

def _cross(lib):
  return lambda a, b: lib.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


SIGNED = [  # (signature, function of the library, argument shapes)
  ("(n),(n)->()", lambda lib: lambda u, v: (u * v).sum(), [(4, 3), (3,)]),
  ("(k),(k)->(k)", _cross, [(1, 2, 3), (2, 1, 3)]),
  ("(m,n),(n)->(m)", lambda lib: lambda m, v: m @ v, [(2, 3), (4, 3)]),
  ("(m,n)->(n),(m)", lambda lib: lambda m: (m.sum(0), lib.tanh(m).max(1)), [(5, 1, 2, 3)]),
  ("(),(n)->(n)", lambda lib: lambda s, v: s * v + 1, [(4, 1), (5, 2)]),
  ("()->()", lambda lib: lambda x: lib.sin(x) * x, [(2, 3)]),
  ("(n)->(n,n)", lambda lib: lambda v: v[:, None] * v[None, :], [(1, 3)]),
]


@pytest.mark.parametrize("i", range(len(SIGNED)))
def test_vectorize_with_signature_matches_jax(i):
  sig, fn, shapes = SIGNED[i]
  args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  argnums = tuple(range(len(args)))
  loss = lambda g: lambda *a: sum((o ** 2).sum() for o in jax.tree.leaves(g(*a)))
  jf = jnp.vectorize(fn(jnp), signature=sig)
  want, gw = jax.jit(lambda *a: (jf(*a), jax.grad(loss(jf), argnums)(*a)))(*args)  # one compile for JAX's side
  f = tnp.vectorize(fn(tnp), signature=sig)
  same(f(*args), want, rtol=ulps(4), atol=ulps(4))
  same(tracegrad.jit(f)(*args), want, rtol=ulps(4), atol=ulps(4))
  same(tracegrad.grad(loss(f), argnums)(*args), gw, rtol=ulps(8), atol=ulps(8))


def test_vectorize_without_signature_and_excluded_as_jax():
  a, b = np.arange(6, dtype=np.int32).reshape(2, 1, 3), np.array([1, 5, 3], np.int32)
  for fn, args, excluded, kw in [(lambda lib: lambda x, y: x * y + 1, (a, b), frozenset(), {}),
                                 (lambda lib: lambda x: lib.stack([x, x]), (b,), frozenset(), {}),
                                 (lambda lib: lambda x, n, y: x * n + y, (a, 3, 2.5), {1}, {}),
                                 (lambda lib: lambda x, y, scale=1: x * scale - y, (a, b), {"scale"}, {"scale": 4})]:
    same(tnp.vectorize(fn(tnp), excluded=excluded)(*args, **kw), jnp.vectorize(fn(jnp), excluded=excluded)(*args, **kw))
  # None passes through as an excluded argument, where it has no core dimensions
  g = lambda x, y: x if y is None else x + y
  same(tnp.vectorize(g)(b, None), jnp.vectorize(g)(b, None))
  same(tnp.vectorize(g, signature="(),()->()")(b, None), jnp.vectorize(g, signature="(),()->()")(b, None))
  # keywords not in excluded are vectorized as numpy does (jax.numpy 0.10.2 drops them)
  h = lambda x, y=0: x - y
  same(tnp.vectorize(h)(b, y=np.array([[1], [2]], np.int32)), np.vectorize(h)(b, y=np.array([[1], [2]])), dtype=False)
  f = tnp.vectorize(lambda x: x)
  assert f.__name__ == "<lambda>" and tnp.vectorize(np.sin).__name__ == "sin"


@pytest.mark.parametrize("sig, fn, args, err", [
  ("(n)->(m)", lambda a: a, [(3,)], None),
  ("(n)->()", lambda a: a, [(3,)], ValueError),
  ("(n)->(),()", lambda a: a, [(3,)], TypeError),
  ("(n)->(n)", lambda a: (a, a), [(3,)], TypeError),
  ("(n),(n)->()", lambda a, b: a.sum(), [(3,), (4,)], ValueError),
  ("(n),(n)->()", lambda a, b: a.sum(), [(3,)], TypeError),
  ("(m,n),(n)->(m)", lambda m, v: m @ v, [(3,), (3,)], ValueError),
  ("(n)->(n)", lambda a: a, [(2, 3), (4,)], TypeError),
  ("()->()", lambda a, b: a, [(2, 3), (4,)], TypeError),
  ("(n->(n)", lambda a: a, [(3,)], ValueError),
  ("(n)->(n,)", lambda a: a, [(3,)], ValueError),
  (None, lambda a, b: a, [(2, 3), (4,)], ValueError),
  ("(n)->(n)", lambda a: a, [(0,)], "ok"),
  ("(n),(m)->(n)", lambda a, b: a * b.sum(), [(2, 3), (1, 4)], "ok"),
])
def test_vectorize_bad_calls_raise_as_jax(sig, fn, args, err):
  xs = [np.ones(s, np.float32) for s in args]
  if err in (None, "ok"):
    same(tnp.vectorize(fn, signature=sig)(*xs), jnp.vectorize(fn, signature=sig)(*xs))
    return
  with pytest.raises(err):
    jnp.vectorize(fn, signature=sig)(*xs)
  with pytest.raises(err, match="vectorize"):
    tnp.vectorize(fn, signature=sig)(*xs)


def test_vectorize_bad_arguments_raise_as_jax():
  for excluded, err in [({1.5}, TypeError), ({-1}, ValueError)]:
    with pytest.raises(err):
      jnp.vectorize(abs, excluded=excluded)
    with pytest.raises(err, match="vectorize: excluded"):
      tnp.vectorize(abs, excluded=excluded)
  with pytest.raises(ValueError, match="vectorize: argument 0 is None"):
    tnp.vectorize(lambda a: a, signature="(n)->(n)")(None)
  with pytest.raises(TypeError, match="vectorize: keyword arguments"):
    tnp.vectorize(lambda a, b=1: a, signature="(n)->(n)")(np.ones(3), b=2)


@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_vectorize_rank_promotion_as_jax(mode):
  f, sig = lambda u, v: (u * v).sum(), "(n),(n)->()"
  a, b = np.ones((2, 3), np.float32), np.ones(3, np.float32)
  err = pytest.raises(ValueError) if mode == "raise" else pytest.warns(UserWarning)
  with jax.numpy_rank_promotion(mode), err:
    jnp.vectorize(f, signature=sig)(a, b)
  err = pytest.raises(ValueError, match="vectorize") if mode == "raise" else pytest.warns(UserWarning, match="vectorize")
  with tracegrad.numpy_rank_promotion(mode), err:
    tnp.vectorize(f, signature=sig)(a, b)
  with tracegrad.numpy_rank_promotion(mode):   # one loop rank (the size-1 axis broadcasts): no promotion
    same(tnp.vectorize(f, signature=sig)(a, b[None]), jnp.vectorize(f, signature=sig)(a, b[None]))
