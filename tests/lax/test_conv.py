"""lax.conv_general_dilated against a direct numpy convolution (loops over output positions), in value and, through
finite differences, in gradient."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check_grads, ulps

rng = np.random.default_rng(0)


def ref_conv(x, w, strides, pads, dil, groups):
  """NCHW by OIHW with explicit (low, high) pads, the textbook way."""
  xp = np.pad(x, [(0, 0), (0, 0), *pads]).astype(np.float64)
  n, c, h, wd = xp.shape
  o, ci, kh, kw = w.shape
  oh, ow = (h - (kh - 1) * dil[0] - 1) // strides[0] + 1, (wd - (kw - 1) * dil[1] - 1) // strides[1] + 1
  out = np.zeros((n, o, oh, ow))
  for k in range(o):
    g = k // (o // groups)
    for i in range(oh):
      for j in range(ow):
        patch = xp[:, g * ci:(g + 1) * ci, i * strides[0]:i * strides[0] + (kh - 1) * dil[0] + 1:dil[0],
                   j * strides[1]:j * strides[1] + (kw - 1) * dil[1] + 1:dil[1]]
        out[:, k, i, j] = (patch * w[k]).sum((1, 2, 3))
  return out


def same_pads(spatial, window, strides, dil):
  return [(t // 2, t - t // 2) for t in (max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
                                         for n, k, s, d in zip(spatial, window, strides, dil))]


CASES = [  # (x shape NCHW, w shape OIHW, strides, padding, dilation, groups)
  ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), "VALID", (1, 1), 1),
  ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), "SAME", (1, 1), 1),
  ((1, 4, 8, 9), (6, 2, 3, 2), (2, 3), "SAME", (1, 2), 2),
  ((1, 2, 5, 5), (3, 2, 2, 3), (1, 2), ((1, 2), (0, 1)), (2, 1), 1),
  # unit strides and output rows of 16 or more: the windows read from the padded input in place (conv._direct)
  ((2, 3, 5, 18), (4, 3, 3, 3), (1, 1), "SAME", (1, 1), 1),
  ((1, 4, 6, 20), (6, 2, 3, 2), (1, 1), ((2, 0), (1, 3)), (2, 1), 2),
  ((1, 2, 4, 24), (3, 2, 2, 3), (1, 1), ((0, 1), (0, 2)), (1, 1), 1),
  # strided, with rows of 16 or more
  ((2, 3, 6, 34), (4, 3, 3, 3), (2, 2), "SAME", (1, 1), 1),
  ((1, 4, 5, 40), (6, 2, 3, 2), (1, 2), ((2, 0), (1, 3)), (2, 1), 2),
  ((2, 4, 6, 36), (8, 4, 1, 1), (2, 2), "VALID", (1, 1), 1),
  ((1, 2, 7, 40), (3, 2, 3, 3), (2, 2), "SAME", (2, 2), 1),
  ((1, 2, 4, 50), (2, 2, 2, 2), (1, 3), "VALID", (1, 1), 1),
  ((1, 2, 4, 50), (2, 2, 2, 2), (1, 3), ((1, 1), (0, 4)), (1, 2), 1),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_matches_the_direct_sum(case):
  xs, ws, strides, padding, dil, groups = CASES[case]
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  pads = same_pads(xs[2:], ws[2:], strides, dil) if padding == "SAME" else [(0, 0)] * 2 if padding == "VALID" else padding
  want = ref_conv(x, w, strides, pads, dil, groups)
  f = lambda x, w: lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=dil, feature_group_count=groups)
  np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=ulps(840), atol=ulps(840))
  np.testing.assert_allclose(np.asarray(tg.jit(f)(x, w)), want, rtol=ulps(840), atol=ulps(840))
  check_grads(lambda x, w: f(x, w).sum() * 0.1, (x, w), modes=("rev",))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_matches_jax_in_value_and_gradient(case):
  jax = pytest.importorskip("jax")
  xs, ws, strides, padding, dil, groups = CASES[case]
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  f = lambda lx, x, w: lx.conv_general_dilated(x, w, strides, padding, rhs_dilation=dil, feature_group_count=groups)
  np.testing.assert_allclose(np.asarray(f(lax, x, w)), np.asarray(f(jax.lax, x, w)), rtol=ulps(840), atol=ulps(840))
  ct = rng.standard_normal(np.shape(f(jax.lax, x, w))).astype(np.float32)
  loss = lambda lx, tnp_: lambda x, w: tnp_.sum(f(lx, x, w) * ct)
  got = tg.grad(loss(lax, tnp), argnums=(0, 1))(x, w)
  want = jax.grad(loss(jax.lax, jax.numpy), argnums=(0, 1))(x, w)
  for g, wg in zip(got, want): np.testing.assert_allclose(np.asarray(g), np.asarray(wg), rtol=ulps(840), atol=ulps(840))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_channels_last_convolution_matches_the_direct_sum(case):
  """Each case in NHWC / HWIO / NHWC: where it stores its windows (strides, or rows under 16), one feature group
  stores them channels-last, (n, positions, taps * channels), and runs a matmul by the filter flattened to (taps *
  channels, outputs); the values, and the gradients against finite differences (and JAX's, when installed)."""
  xs, ws, strides, padding, dil, groups = CASES[case]
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  pads = same_pads(xs[2:], ws[2:], strides, dil) if padding == "SAME" else [(0, 0)] * 2 if padding == "VALID" else padding
  want = ref_conv(x, w, strides, pads, dil, groups).transpose(0, 2, 3, 1)
  xl, wl = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
  dn = ("NHWC", "HWIO", "NHWC")
  f = lambda lx, x, w: lx.conv_general_dilated(x, w, strides, padding, rhs_dilation=dil, feature_group_count=groups,
                                               dimension_numbers=dn)
  np.testing.assert_allclose(np.asarray(tg.jit(lambda x, w: f(lax, x, w))(xl, wl)), want, rtol=ulps(840),
                             atol=ulps(840))
  check_grads(lambda x, w: f(lax, x, w).sum() * 0.1, (xl, wl), modes=("rev",))
  if groups == 1 and tg.default_backend() == "cpu" and (strides != (1, 1) or want.shape[2] < 16):
    from tracegrad.lower.schedule import schedule
    prog = schedule(tg.make_graph(lambda x, w: f(lax, x, w))(xl, wl))
    (k,) = [k for k in prog.kernels if k.reduce is not None]
    assert k.loops[-1].extent == ws[0] and [l.extent for l in k.reduce.loops] == [ws[1] * ws[2] * ws[3]]
  if groups == 1 and tg.default_backend() == "cpu" and strides != (1, 1):
    # x's cotangent: every tap's cotangent as one matmul of the positions by the filter, then each element's sum of
    # the taps that reach it, by a kernel of its own; both channels-last
    from tracegrad.lower.schedule import schedule
    ct = np.ones(want.shape, np.float32)
    taps, sums = schedule(tg.make_graph(tg.grad(lambda x, w, ct: (f(lax, x, w) * ct).sum()))(xl, wl, ct)).kernels
    assert taps.loops[-1].extent == ws[1] * ws[2] * ws[3] and sums.loops[-1].extent == xs[1] and not sums.phases
  try:
    import jax
  except ImportError:
    return
  ct = rng.standard_normal(want.shape).astype(np.float32)
  loss = lambda lx, m: lambda x, w: m.sum(f(lx, x, w) * ct)
  got = tg.jit(tg.grad(loss(lax, tnp), argnums=(0, 1)))(xl, wl)
  for g, wg in zip(got, jax.grad(loss(jax.lax, jax.numpy), argnums=(0, 1))(xl, wl)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(wg), rtol=ulps(840), atol=ulps(840))


def test_unit_stride_windows_are_read_in_place_on_a_cpu():
  """A unit-stride convolution with rows of 16 outputs or more reads its windows from the padded input inside each
  contraction (forward, filter gradient): no kernel writes an im2col copy (taps times the input). Its input's
  gradient is one such convolution of the output's cotangent, with no scatter. A strided one keeps the copy, and its
  input's gradient writes each element once too: every tap's cotangent, then their sum for each element."""
  from tracegrad.lower.schedule import schedule
  if tg.default_backend() != "cpu": pytest.skip("the CPU's convolution")
  x, w = rng.standard_normal((4, 8, 16, 16)).astype(np.float32), rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
  windows = x.size * 9

  def program(strides, argnums):
    loss = lambda x, w: (lax.conv_general_dilated(x, w, strides, "SAME") ** 2).sum()
    return schedule(tg.make_graph(tg.grad(loss, argnums))(x, w))

  assert windows not in [b.size for b in program((1, 1), 1).buffers]
  assert windows // 4 in [b.size for b in program((2, 2), 1).buffers]   # stride 2: 8 x 8 positions of 9 taps
  prog = program((1, 1), 0)
  assert windows not in [b.size for b in prog.buffers]
  assert not any(s.mode for k in prog.kernels for s in k.stores), [k.name for k in prog.kernels]
  assert sum(k.reduce is not None and k.loops[-1].extent == 16 for k in prog.kernels) == 2   # forward, x's gradient
  assert not any(s.mode for k in program((2, 2), 0).kernels for s in k.stores)


def test_layouts_and_errors():
  x, w = rng.standard_normal((2, 6, 5, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
  got = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  want = lax.conv_general_dilated(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (1, 1), "SAME")
  np.testing.assert_allclose(np.asarray(got), np.asarray(want).transpose(0, 2, 3, 1), rtol=ulps(84), atol=ulps(84))
  one_d = lax.conv(rng.standard_normal((2, 3, 9)).astype(np.float32), rng.standard_normal((5, 3, 4)).astype(np.float32),
                   (2,), "VALID")
  assert one_d.shape == (2, 5, 3)
  with pytest.raises(ValueError, match="feature_group_count"):
    lax.conv_general_dilated(np.ones((1, 3, 4, 4), np.float32), np.ones((2, 2, 1, 1), np.float32), (1, 1), "VALID",
                             feature_group_count=2)
  with pytest.raises(ValueError, match="padding"):
    lax.conv(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 1, 1), np.float32), (1, 1), "FULL")


LHS_DILATION_CASES = [  # (x shape NCHW, w shape OIHW, strides, explicit padding, lhs_dilation, rhs_dilation)
  ((2, 3, 5, 4), (4, 3, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), (1, 1)),
  ((1, 2, 4, 5), (3, 2, 3, 2), (1, 2), ((2, 1), (1, 0)), (2, 3), (1, 1)),
  ((1, 2, 4, 4), (2, 2, 2, 2), (2, 1), ((1, -1), (0, 1)), (3, 2), (2, 1)),
  ((1, 2, 3, 9), (2, 2, 2, 3), (1, 1), ((1, 1), (2, 2)), (2, 2), (1, 1)),   # 19 wide: read in place
  # unit strides: one convolution of x per phase (conv._phased), some phases without a tap, kernel dilations that
  # share a factor with the lhs dilation or not, cropping
  ((1, 2, 4, 5), (3, 2, 1, 1), (1, 1), ((0, 1), (1, 0)), (3, 2), (1, 1)),
  ((1, 2, 5, 4), (2, 2, 3, 2), (1, 1), ((1, -1), (2, 1)), (2, 2), (2, 3)),
  ((1, 3, 6, 17), (4, 3, 4, 4), (1, 1), ((3, 3), (3, 3)), (2, 2), (1, 1)),   # a 4 x 4 transposed conv, 18 wide phases
  ((2, 1, 3, 3), (1, 1, 3, 3), (1, 1), ((0, 0), (-1, 4)), (3, 1), (1, 2)),
]


@pytest.mark.parametrize("case", range(len(LHS_DILATION_CASES)))
def test_lhs_dilation_is_a_convolution_of_the_zero_dilated_input(case):
  xs, ws, strides, padding, ld, rd = LHS_DILATION_CASES[case]
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  xd = np.zeros(xs[:2] + tuple((n - 1) * d + 1 for n, d in zip(xs[2:], ld)), np.float32)
  xd[:, :, ::ld[0], ::ld[1]] = x
  xd = xd[:, :, max(-padding[0][0], 0):xd.shape[2] - max(-padding[0][1], 0),
          max(-padding[1][0], 0):xd.shape[3] - max(-padding[1][1], 0)]
  want = ref_conv(xd, w, strides, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], rd, 1)
  f = lambda m, x, w: m.conv_general_dilated(x, w, strides, padding, lhs_dilation=ld, rhs_dilation=rd)
  np.testing.assert_allclose(np.asarray(f(lax, x, w)), want, rtol=ulps(840), atol=ulps(840))
  np.testing.assert_allclose(np.asarray(tg.jit(lambda x, w: f(lax, x, w))(x, w)), want, rtol=ulps(840), atol=ulps(840))
  jax = pytest.importorskip("jax")
  np.testing.assert_allclose(np.asarray(f(jax.lax, x, w)), want, rtol=ulps(840), atol=ulps(840))
  loss = lambda m: lambda x, w: (f(m, x, w) ** 2).sum()
  got, want_g = tg.grad(loss(lax), argnums=(0, 1))(x, w), jax.grad(loss(jax.lax), argnums=(0, 1))(x, w)
  for g, wg in zip(got, want_g): np.testing.assert_allclose(np.asarray(g), wg, rtol=ulps(840), atol=ulps(840))
  t = rng.standard_normal(xs).astype(np.float32)
  _, got_t = tg.jvp(lambda x: f(lax, x, w), (x,), (t,))
  want_t = jax.jvp(lambda x: f(jax.lax, x, w), (x,), (t,))[1]
  np.testing.assert_allclose(np.asarray(got_t), want_t, rtol=ulps(840), atol=ulps(840))


def test_a_transposed_convolution_multiplies_no_inserted_zero():
  """A convolution of an input with zeros between its elements (lhs dilation 2, a stride-2 transposed convolution)
  runs as one convolution of the input per phase of the output: its products are the kernel's taps times the input's
  own elements, not a quarter of them times inserted zeros."""
  from tracegrad.lower.schedule import schedule
  x, w = rng.standard_normal((2, 8, 16, 16)).astype(np.float32), rng.standard_normal((4, 8, 4, 4)).astype(np.float32)
  f = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)), lhs_dilation=(2, 2))
  out = f(x, w)
  assert out.shape == (2, 4, 32, 32)
  flops = sum(k.cost()[0] for k in schedule(tg.make_graph(f)(x, w)).kernels)
  assert flops < 1.25 * 2 * x.size * w.size // 8, flops   # each input element meets each of its 16 taps once
  xd = np.zeros((2, 8, 31, 31), np.float32)
  xd[:, :, ::2, ::2] = x
  np.testing.assert_allclose(np.asarray(out), ref_conv(xd, w, (1, 1), [(2, 2), (2, 2)], (1, 1), 1),
                             rtol=ulps(840), atol=ulps(840))


@pytest.mark.parametrize("strides", [(1, 1), (2, 1)])
def test_second_derivatives_and_batching_of_a_convolution(strides):
  """The input's gradient of a unit-stride convolution is a convolution (conv_general_dilated's transpose rule), so
  differentiating it again, in either mode, and batching it, go through the same rules; against finite differences,
  per-example slices and JAX."""
  from oracles import check_vmap
  x, w = rng.standard_normal((2, 3, 5, 6)).astype(np.float32), rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
  f = lambda x, w: lax.conv_general_dilated(x, w, strides, ((1, 1), (0, 1)), rhs_dilation=(1, 2))
  check_grads(lambda x, w: (f(x, w) ** 2).sum() * 0.01, (x, w), order=2)
  dx = lambda x, w: tg.grad(lambda x: (f(x, w) ** 2).sum())(x)
  check_vmap(lambda x: dx(x[None], w)[0], (x,))
  check_vmap(lambda x: tg.grad(lambda x: (f(x[None], w) ** 2).sum())(x), (x,))
  jax = pytest.importorskip("jax")
  jf = lambda x, w: jax.lax.conv_general_dilated(x, w, strides, ((1, 1), (0, 1)), rhs_dilation=(1, 2))
  t = rng.standard_normal(x.shape).astype(np.float32)
  hvp = lambda g, grad, jvp: jvp(lambda x: grad(lambda x: (g(x, w) ** 2).sum())(x), (x,), (t,))[1]
  np.testing.assert_allclose(np.asarray(hvp(f, tg.grad, tg.jvp)), np.asarray(hvp(jf, jax.grad, jax.jvp)),
                             rtol=ulps(4096), atol=ulps(4096) * 100)


def test_a_convolution_prints_as_one_node():
  g = tg.make_graph(lambda x, w: lax.conv(x, w, (1, 1), "SAME"))(np.ones((1, 2, 4, 4), np.float32),
                                                                  np.ones((3, 2, 3, 3), np.float32))
  assert "conv_general_dilated" in str(g) and "gather" not in str(g)


def test_lhs_dilation_errors():
  x, w = np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32)
  with pytest.raises(ValueError, match="conv_general_dilated: padding 'SAME' is ambiguous with lhs_dilation"):
    lax.conv_general_dilated(x, w, (1, 1), "SAME", lhs_dilation=(2, 2))
  with pytest.raises(ValueError, match="conv_general_dilated: window_strides, lhs_dilation and rhs_dilation need 2"):
    lax.conv_general_dilated(x, w, (1, 1), "VALID", lhs_dilation=(2,))
