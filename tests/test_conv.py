"""lax.conv_general_dilated against a direct numpy convolution (loops over output positions), in value and, through
finite differences, in gradient."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import lax
from oracles import check_grads

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
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_matches_the_direct_sum(case):
  xs, ws, strides, padding, dil, groups = CASES[case]
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  pads = same_pads(xs[2:], ws[2:], strides, dil) if padding == "SAME" else [(0, 0)] * 2 if padding == "VALID" else padding
  want = ref_conv(x, w, strides, pads, dil, groups)
  f = lambda x, w: lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=dil, feature_group_count=groups)
  np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(np.asarray(tg.jit(f)(x, w)), want, rtol=1e-4, atol=1e-4)
  check_grads(lambda x, w: f(x, w).sum() * 0.1, (x, w), modes=("rev",))


def test_layouts_and_errors():
  x, w = rng.standard_normal((2, 6, 5, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
  got = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  want = lax.conv_general_dilated(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (1, 1), "SAME")
  np.testing.assert_allclose(np.asarray(got), np.asarray(want).transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
  one_d = lax.conv(rng.standard_normal((2, 3, 9)).astype(np.float32), rng.standard_normal((5, 3, 4)).astype(np.float32),
                   (2,), "VALID")
  assert one_d.shape == (2, 5, 3)
  with pytest.raises(ValueError, match="feature_group_count"):
    lax.conv_general_dilated(np.ones((1, 3, 4, 4), np.float32), np.ones((2, 2, 1, 1), np.float32), (1, 1), "VALID",
                             feature_group_count=2)
  with pytest.raises(ValueError, match="padding"):
    lax.conv(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 1, 1), np.float32), (1, 1), "FULL")
