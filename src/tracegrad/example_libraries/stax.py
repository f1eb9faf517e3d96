"""Neural network layers as jax.example_libraries.stax: a layer is a pair (init_fun, apply_fun) with
init_fun(rng, input_shape) -> (output_shape, params) and apply_fun(params, inputs, **kwargs) -> outputs. A batch
size of -1 in input_shape stays -1 in output_shape, except through a pooling layer, which makes it 0 (as JAX's).

>>> init_fun, apply_fun = serial(Dense(4), Relu, Dense(2), LogSoftmax)
>>> out_shape, params = init_fun(tracegrad.random.key(0), (-1, 3))
>>> out_shape, apply_fun(params, tnp.ones((5, 3))).shape
((-1, 2), (5, 2))
"""
from __future__ import annotations

import functools
import math

from .. import lax
from .. import numpy as tnp
from .. import random
from ..nn import initializers as _init
from ..nn.functions import elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize
from ..nn.initializers import normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose", "ConvTranspose", "BatchNorm",
           "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu",
           "Selu", "Gelu", "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat",
           "Dropout", "serial", "parallel", "shape_dependent", "glorot", "glorot_normal", "randn", "normal", "ones",
           "zeros", "logsoftmax", "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu", "selu",
           "gelu", "standardize"]


def glorot_normal(in_axis: int = -2, out_axis: int = -1, batch_axis=(), dtype=tnp.float32):
  """The initializer tracegrad.nn.initializers.glorot_normal, its axes also given by position (as JAX's)."""
  return _init.variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


glorot, randn, logsoftmax = glorot_normal, normal, log_softmax


def Dense(out_dim: int, W_init=glorot_normal(), b_init=normal()):
  """A fully connected layer: inputs @ W + b, W of shape (in_dim, out_dim), b of shape (out_dim,).

  >>> shape, (W, b) = Dense(3)[0](tracegrad.random.key(0), (-1, 5))
  >>> shape, W.shape, b.shape
  ((-1, 3), (5, 3), (3,))
  """
  def init_fun(rng, input_shape):
    k1, k2 = random.split(rng)
    return tuple(input_shape[:-1]) + (out_dim,), (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return tnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _spatial(dimension_numbers, fn: str):
  if len(dimension_numbers) != 3 or not all(isinstance(s, str) for s in dimension_numbers):
    raise ValueError(f"{fn}: dimension_numbers must be three layout strings such as ('NHWC', 'HWIO', 'NHWC'), got "
                     f"{dimension_numbers!r}")
  lhs, rhs, out = dimension_numbers
  return lhs, rhs, out, [c for c in rhs if c not in "OI"]


def _kernel_shape(lhs_spec, rhs_spec, out_chan, filter_shape, input_shape, fn: str):
  if len(input_shape) != len(lhs_spec):
    raise ValueError(f"{fn}: input_shape {tuple(input_shape)} does not match the layout {lhs_spec!r}")
  sizes = iter(filter_shape)
  return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(sizes) for c in rhs_spec]


def _window_out(n: int, k: int, s: int, pad) -> int:
  """The length of a strided window's output along one dimension of length n (-1, an unknown batch, stays -1)."""
  if pad == "SAME": return -(-n // s)
  if pad == "VALID": return (n - k) // s + 1
  lo, hi = pad
  return (n + lo + hi - k) // s + 1


def _pads(padding, n: int, fn: str) -> list:
  if isinstance(padding, str):
    if padding not in ("SAME", "VALID"):
      raise ValueError(f"{fn}: padding must be 'SAME', 'VALID' or (low, high) pairs, got {padding!r}")
    return [padding] * n
  pads = [tuple(p) for p in padding]
  if len(pads) != n or any(len(p) != 2 for p in pads):
    raise ValueError(f"{fn}: padding needs {n} (low, high) pairs, one per spatial dimension, got {padding!r}")
  return pads


def GeneralConv(dimension_numbers, out_chan: int, filter_shape, strides=None, padding="VALID", W_init=None,
                b_init=normal(1e-6)):
  """A convolution layer with the layouts of dimension_numbers (input, kernel, output), e.g. ('NHWC', 'HWIO', 'NHWC');
  the bias has the output's rank, 1 except along its channels.

  >>> shape, (W, b) = GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3))[0](tracegrad.random.key(0), (2, 1, 8, 8))
  >>> shape, W.shape, b.shape
  ((2, 4, 6, 6), (4, 1, 3, 3), (1, 4, 1, 1))
  """
  fn = "GeneralConv"
  lhs_spec, rhs_spec, out_spec, spatial = _spatial(dimension_numbers, fn)
  one = (1,) * len(filter_shape)
  strides = tuple(strides or one)
  pads = _pads(padding, len(filter_shape), fn)
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel = _kernel_shape(lhs_spec, rhs_spec, out_chan, filter_shape, input_shape, fn)
    sizes = {c: _window_out(input_shape[lhs_spec.index(c)], kernel[rhs_spec.index(c)], s, p)
             for c, s, p in zip(spatial, strides, pads)}
    out = tuple(input_shape[lhs_spec.index("N")] if c == "N" else out_chan if c == "C" else sizes[c] for c in out_spec)
    k1, k2 = random.split(rng)
    return out, (W_init(k1, kernel), b_init(k2, [out_chan if c == "C" else 1 for c in out_spec]))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def _transpose_pads(k: int, s: int, pad) -> tuple[int, int]:
  """(low, high) padding of the input-dilated convolution that transposes a convolution padded `pad`."""
  if pad == "SAME":
    total = k + s - 2
    low = k - 1 if s > k - 1 else -(-total // 2)
  elif pad == "VALID":
    total, low = k + s - 2 + max(k - s, 0), k - 1
  else:
    return tuple(pad)
  return low, total - low


def GeneralConvTranspose(dimension_numbers, out_chan: int, filter_shape, strides=None, padding="VALID", W_init=None,
                         b_init=normal(1e-6)):
  """A transposed convolution layer (as jax.lax.conv_transpose, the kernel not flipped); 'SAME' and 'VALID' name the
  padding of the forward convolution, (low, high) pairs the padding of the transposed one.

  >>> ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME")[0](tracegrad.random.key(0), (1, 4, 4, 3))[0]
  (1, 8, 8, 2)
  """
  fn = "GeneralConvTranspose"
  lhs_spec, rhs_spec, out_spec, spatial = _spatial(dimension_numbers, fn)
  one = (1,) * len(filter_shape)
  strides = tuple(strides or one)
  given = _pads(padding, len(filter_shape), fn)
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel = _kernel_shape(lhs_spec, rhs_spec, out_chan, filter_shape, input_shape, fn)
    sizes = {}
    for c, s, p in zip(spatial, strides, given):
      k = kernel[rhs_spec.index(c)]
      sizes[c] = (input_shape[lhs_spec.index(c)] - 1) * s - k + 2 + sum(_transpose_pads(k, s, p))
    out = tuple(input_shape[lhs_spec.index("N")] if c == "N" else out_chan if c == "C" else sizes[c] for c in out_spec)
    k1, k2 = random.split(rng)
    return out, (W_init(k1, kernel), b_init(k2, [out_chan if c == "C" else 1 for c in out_spec]))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    pads = [_transpose_pads(W.shape[rhs_spec.index(c)], s, p) for c, s, p in zip(spatial, strides, given)]
    return lax.conv_general_dilated(inputs, W, one, pads, strides, one, dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon: float = 1e-5, center: bool = True, scale: bool = True, beta_init=zeros,
              gamma_init=ones):
  """Normalises the inputs over `axis` (their mean and variance in each call), then scales by gamma and shifts by
  beta, both shaped as the input without `axis` (() when scale or center is False).

  >>> shape, (beta, gamma) = BatchNorm()[0](tracegrad.random.key(0), (8, 5, 5, 3))
  >>> shape, beta.shape, gamma.shape
  ((8, 5, 5, 3), (3,), (3,))
  """
  axis = (axis,) if isinstance(axis, int) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    return input_shape, (beta_init(k1, shape) if center else (), gamma_init(k2, shape) if scale else ())

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    expand = tuple(None if i in axis else slice(None) for i in range(tnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if scale: z = gamma[expand] * z
    return z + beta[expand] if center else z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A layer without parameters applying fun(inputs, **fun_kwargs).

  >>> init_fun, apply_fun = elementwise(tnp.abs)
  >>> apply_fun((), tnp.asarray([-2.0, 3.0]))
  Array([2., 3.], dtype=float32)
  """
  def init_fun(rng, input_shape): return input_shape, ()
  def apply_fun(params, inputs, **kwargs): return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(tnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(tnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _with_batch_and_channels(values, fill, spec):
  """values (one per spatial dimension) with `fill` put at the batch and channel positions of spec (N first and C last
  without one)."""
  axes = (0, len(values) + 1) if spec is None else (spec.index("N"), spec.index("C"))
  out = list(values)
  for i in sorted(axes): out.insert(i, fill)
  return tuple(out), axes


def _pooling(name: str, computation, init_value, average: bool = False):
  def layer(window_shape, strides=None, padding="VALID", spec=None):
    window_shape = tuple(window_shape)
    strides = tuple(strides or (1,) * len(window_shape))
    window, axes = _with_batch_and_channels(window_shape, 1, spec)
    steps, _ = _with_batch_and_channels(strides, 1, spec)
    pads = _pads(padding, len(window), name)

    def init_fun(rng, input_shape):
      if len(input_shape) != len(window):
        raise ValueError(f"{name}: input_shape {tuple(input_shape)} needs {len(window)} dimensions for a window of "
                         f"{window_shape}")
      return tuple(max(0, _window_out(n, k, s, p)) for n, k, s, p in zip(input_shape, window, steps, pads)), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_value, computation, window, steps, padding)
      if not average: return out
      spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in axes)
      counts = lax.reduce_window(tnp.ones(spatial, inputs.dtype), 0.0, lax.add, window_shape, strides, padding)
      for i in sorted(axes): counts = tnp.expand_dims(counts, i)
      return out / counts
    return init_fun, apply_fun
  layer.__name__ = layer.__qualname__ = name
  layer.__doc__ = (f"A {name} layer over window_shape (spatial dimensions only) with strides and padding; spec "
                   f"names the layout (such as 'NHWC', the default).\n\n  >>> {name}((2, 2))[0](None, (1, 4, 4, 3))[0]"
                   f"\n  (1, 3, 3, 3)\n  ")
  return layer


MaxPool = _pooling("MaxPool", lax.max, -tnp.inf)
SumPool = _pooling("SumPool", lax.add, 0.0)
AvgPool = _pooling("AvgPool", lax.add, 0.0, average=True)


def _flatten_layer():
  def init_fun(rng, input_shape): return (input_shape[0], math.prod(input_shape[1:])), ()
  def apply_fun(params, inputs, **kwargs): return tnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


def _identity_layer():
  def init_fun(rng, input_shape): return input_shape, ()
  def apply_fun(params, inputs, **kwargs): return inputs
  return init_fun, apply_fun


Flatten = _flatten_layer()     # every dimension but the first into one
Identity = _identity_layer()


def FanOut(num: int):
  """A layer giving `num` copies of its input (a list), for parallel.

  >>> FanOut(2)[0](None, (3,))
  ([(3,), (3,)], ())
  """
  def init_fun(rng, input_shape): return [input_shape] * num, ()
  def apply_fun(params, inputs, **kwargs): return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum():
  def init_fun(rng, input_shape): return input_shape[0], ()
  def apply_fun(params, inputs, **kwargs): return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum()      # the sum of a list of inputs


def FanInConcat(axis: int = -1):
  """A layer concatenating a list of inputs along axis.

  >>> FanInConcat()[0](None, [(2, 3), (2, 4)])
  ((2, 7), ())
  """
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(s[ax] for s in input_shape)
    return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

  def apply_fun(params, inputs, **kwargs): return tnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train"):
  """Dropout as stax's: in mode 'train' each input is kept with probability `rate` (as JAX's stax, rate is the
  probability of keeping) and scaled by 1 / rate; apply_fun needs rng=key. Other modes pass inputs through.

  >>> Dropout(0.5)[1]((), tnp.ones(4), rng=tracegrad.random.key(0)).shape
  (4,)
  """
  def init_fun(rng, input_shape): return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng")
    if rng is None:
      raise ValueError("Dropout: apply_fun needs a key; call apply_fun(params, inputs, rng=key) with a key from "
                       "tracegrad.random.key")
    if mode != "train": return inputs
    keep = random.bernoulli(rng, rate, inputs.shape)
    return tnp.where(keep, inputs / rate, 0)
  return init_fun, apply_fun


def _layer_keys(rng, n: int):
  if rng is None: return [None] * n
  keys = random.split(rng, n)
  return [keys[i] for i in range(n)]


def serial(*layers):
  """The layers one after another: params is a list of each layer's params, and a key given as rng= is split
  among them.

  >>> init_fun, apply_fun = serial(Dense(3), Tanh)
  >>> init_fun(tracegrad.random.key(0), (2, 4))[0]
  (2, 3)
  """
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, p = init(layer_rng, input_shape)
      params.append(p)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    for fun, p, r in zip(apply_funs, params, _layer_keys(rng, len(apply_funs))):
      inputs = fun(p, inputs, rng=r, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """The layers side by side: a sequence of inputs (one per layer) gives the sequence of their outputs.

  >>> init_fun, apply_fun = serial(FanOut(2), parallel(Dense(3), Identity), FanInConcat())
  >>> init_fun(tracegrad.random.key(0), (2, 4))[0]
  (2, 7)
  """
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    if len(input_shape) != len(init_funs):
      raise ValueError(f"parallel: {len(init_funs)} layers need as many input shapes, got {len(input_shape)}")
    outs = [init(r, s) for init, r, s in zip(init_funs, _layer_keys(rng, len(init_funs)), input_shape)]
    return tuple(o for o, _ in outs), tuple(p for _, p in outs)

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    keys = _layer_keys(rng, len(apply_funs))
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, keys)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built by make_layer(input_shape) once the input's shape is known (at init and at each apply).

  >>> init_fun, apply_fun = shape_dependent(lambda shape: Dense(shape[-1]))
  >>> init_fun(tracegrad.random.key(0), (2, 5))[0]
  (2, 5)
  """
  def init_fun(rng, input_shape): return make_layer(input_shape)[0](rng, input_shape)
  def apply_fun(params, inputs, **kwargs): return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
