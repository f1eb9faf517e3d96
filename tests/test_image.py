"""tracegrad.image against jax.image: resize and scale_and_translate in value, dtype and gradient, for every method,
upsampling and downsampling, with and without antialiasing; and the errors JAX raises."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import image
from oracles import assert_ulps_close

jax = pytest.importorskip("jax")
jnp = jax.numpy

rng = np.random.default_rng(0)
X = rng.standard_normal((2, 9, 7, 3)).astype(np.float32)
METHODS = ["linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
CASES = [((2, 4, 5, 3), True), ((2, 4, 5, 3), False), ((2, 17, 5, 3), True)]   # down, down unfiltered, up and down


def close(got, want, n=32):
  assert_ulps_close(got, np.asarray(want), rel=n, absolute=n)


def jax_all(fns, *args):
  """[f(*args) for f in fns] from one compiled JAX program (compiling dominates these tests' time)."""
  return jax.jit(lambda *a: [f(*a) for f in fns])(*args)


@pytest.mark.parametrize("method", ["nearest"] + METHODS)
def test_resize_matches_jax(method):
  wants = jax_all([lambda x, s=s, a=a: jax.image.resize(x, s, method, antialias=a) for s, a in CASES], X)
  for (shape, antialias), want in zip(CASES, wants):
    close(image.resize(X, shape, method, antialias=antialias), want)


def test_resize_dtypes_match_jax():
  xs = [np.asarray(jnp.asarray(rng.standard_normal((6, 5)) * 10).astype(d))
        for d in ("float16", "bfloat16", "int32", "uint8", "bool")]
  wants = jax.jit(lambda xs: [[jax.image.resize(x, (4, 9), m) for m in ("nearest", "linear")] for x in xs])(xs)
  for x, pair in zip(xs, wants):
    for method, want in zip(("nearest", "linear"), pair):
      got, want = image.resize(x, (4, 9), method), np.asarray(want)
      assert np.dtype(got.dtype.np) == want.dtype, (x.dtype, method)
      assert_ulps_close(got, want, rel=4, absolute=4)


@pytest.mark.parametrize("method", METHODS)
def test_resize_of_a_large_image_gathers_its_few_taps_as_jax_weighs_them_all(method):
  """Known weights whose taps span at most half the input take a gather and a multiply-add per tap, no contraction
  (wider ones, as lanczos5's when shrinking 33 pixels to 11, contract): JAX's values and gradients, float32 and
  bfloat16 (which adds in float32)."""
  x = rng.standard_normal((1, 40, 33, 2)).astype(np.float32)
  cases = [((1, 96, 70, 2), True), ((1, 13, 11, 2), True), ((1, 13, 11, 2), False)]
  ct = rng.standard_normal((1, 96, 70, 2)).astype(np.float32)
  loss = lambda lib: lambda x: (lib.image.resize(x, (1, 96, 70, 2), method) ** 2 * ct).sum()
  half = lambda x: jax.image.resize(x.astype(jnp.bfloat16), (1, 96, 70, 2), method)
  wants = jax_all([lambda x, s=s, a=a: jax.image.resize(x, s, method, antialias=a) for s, a in cases]
                  + [jax.grad(loss(jax)), half], x)
  graph = tracegrad.make_graph(lambda x: image.resize(x, cases[0][0], method))(x)
  assert "tensordot" not in str(graph), graph   # upsampling: 2 to 10 taps of 40 and 33 pixels
  for (shape, antialias), want in zip(cases, wants): close(image.resize(x, shape, method, antialias=antialias), want)
  close(tracegrad.grad(loss(tracegrad))(x), wants[-2], n=64)
  assert_ulps_close(image.resize(x.astype(jnp.bfloat16), (1, 96, 70, 2), method), np.asarray(wants[-1]), 1, 1)


def _value_and_grad(f, ct):
  """f's value and the gradient of sum(f * ct) in every argument."""
  return lambda *a: (f(*a), jax.grad(lambda *b: (f(*b) * ct).sum(), tuple(range(len(a))))(*a))


def _translate(lib, method, antialias):
  return lambda x, s, t: lib.image.scale_and_translate(x, (7, 4, 2), (0, 1), s, t, method, antialias)


XS = X[0, :5, :6, :2], np.array([1.7, 0.6], np.float32), np.array([0.3, -1.2], np.float32)   # image, scale, shift


@pytest.mark.parametrize("method", METHODS)
def test_scale_and_translate_matches_jax(method):
  wants = jax_all([_translate(jax, method, aa) for aa in (True, False)], *XS)
  for antialias, want in zip((True, False), wants):
    close(_translate(tracegrad, method, antialias)(*XS), want)


@pytest.mark.parametrize("method, antialias", [("linear", True), ("lanczos3", False), ("cubic-pytorch", False),
                                               ("area", True)])
def test_scale_and_translate_gradient_matches_jax(method, antialias):
  ct = rng.standard_normal((7, 4, 2)).astype(np.float32)
  f = _translate(tracegrad, method, antialias)
  (want, grads), = jax_all([_value_and_grad(_translate(jax, method, antialias), ct)], *XS)
  close(tracegrad.jit(f)(*XS), want)
  got = tracegrad.grad(lambda *a: (f(*a) * ct).sum(), (0, 1, 2))(*XS)
  for g, w in zip(got, grads): close(g, w, 64)


@pytest.mark.parametrize("method", ["linear", "cubic-pytorch"])
def test_resize_gradient_jit_and_vmap_match_jax(method):
  x, shapes = X[0], ((4, 5, 3), (13, 11, 3))
  cts = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
  f = lambda lib, shape: lambda x: lib.image.resize(x, shape, method, antialias=False)
  wants = jax_all([_value_and_grad(f(jax, shape), ct) for shape, ct in zip(shapes, cts)]
                  + [lambda x: jax.image.resize(X, (2, 4, 5, 3), method)], x)
  for shape, ct, (want, (grad,)) in zip(shapes, cts, wants):
    close(tracegrad.jit(f(tracegrad, shape))(x), want)
    close(tracegrad.grad(lambda x: (f(tracegrad, shape)(x) * ct).sum())(x), grad)
  close(tracegrad.vmap(lambda x: image.resize(x, (4, 5, 3), method))(X), wants[-1])


def test_resize_methods_as_jax():
  for m in image.ResizeMethod:
    assert m.value == jax.image.ResizeMethod[m.name].value
  for name in ("nearest", "linear", "bilinear", "trilinear", "triangle", "lanczos3", "lanczos5", "cubic", "bicubic",
               "tricubic", "cubic-pytorch", "bicubic-pytorch", "area"):
    assert image.ResizeMethod.from_string(name).name == jax.image.ResizeMethod.from_string(name).name
  close(image.resize(X, (2, 4, 5, 3), image.ResizeMethod.LANCZOS3), jax.image.resize(X, (2, 4, 5, 3), "lanczos3"))
  close(image.resize(X.astype(np.int32), X.shape, "cubic"), jax.image.resize(X.astype(np.int32), X.shape, "cubic"))


@pytest.mark.parametrize("call", [
  lambda lib: lib.image.resize(X, (4, 5), "linear"),
  lambda lib: lib.image.resize(X, (2, 4, 5.5, 3), "linear"),
  lambda lib: lib.image.resize(X, (2, 4, 5, 3), "bogus"),
  lambda lib: lib.image.scale_and_translate(X, (2, 4, 5, 3), (1, 2), lib.numpy.ones(2), lib.numpy.zeros(2), "nearest"),
  lambda lib: lib.image.scale_and_translate(X, (4, 5, 3), (1, 2), lib.numpy.ones(2), lib.numpy.zeros(2), "linear"),
])
def test_bad_arguments_raise_as_jax(call):
  with pytest.raises((TypeError, ValueError)) as want:
    call(jax)
  with pytest.raises(want.type, match="resize|scale_and_translate|Unknown resize method"):
    call(tracegrad)


def test_arguments_jax_does_not_check():
  with pytest.raises(ValueError, match="resize: shape .* negative"):
    image.resize(X, (2, -4, 5, 3), "linear")
  with pytest.raises(ValueError, match="scale_and_translate: axes \\[0\\] are not in spatial_dims"):
    image.scale_and_translate(X, (1, 4, 5, 3), (1, 2), tnp.ones(2), tnp.zeros(2), "linear")
  with pytest.raises(ValueError, match="scale_and_translate: scale and translation need one entry"):
    image.scale_and_translate(X, (2, 4, 5, 3), (1, 2), tnp.ones(3), tnp.zeros(2), "linear")
  with pytest.raises(TypeError, match="resize: method"):
    image.resize(X, (2, 4, 5, 3), 1)
