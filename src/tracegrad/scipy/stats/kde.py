"""Kernel density estimation with Gaussian kernels, as jax.scipy.stats.gaussian_kde.

>>> kde = tracegrad.scipy.stats.gaussian_kde(tnp.asarray([-1.0, 0.0, 0.5, 2.0]))
>>> kde.evaluate(tnp.asarray([0.0, 5.0])).round(4)
Array([0.2685, 0.0007], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from ... import random
from ...array import Array
from ...tree import register_pytree_node_class
from ..linalg import cholesky, solve_triangular
from ..special import logsumexp, ndtr
from .promote import float_dtype

__all__ = ["gaussian_kde"]


def _log_kernel(points: Array, centers: Array, log_norm) -> Array:
  """log_norm - |points_j - centers_i|^2 / 2 for whitened points (d, m) and centers (d, n), as an (m, n) matrix."""
  diff = points.T[:, None, :] - centers.T[None, :, :]
  return log_norm - 0.5 * tnp.sum(diff * diff, axis=-1)


def _convolve(cov: Array, centers: Array, weights: Array, points: Array) -> Array:
  """sum_i weights_i N(points_j; centers_i, cov) for each point j, whitened by cov's Cholesky factor."""
  low = cholesky(cov, lower=True)
  log_norm = -tnp.sum(tnp.log(tnp.diagonal(low))) - 0.5 * cov.shape[0] * math.log(2 * math.pi)
  logk = _log_kernel(solve_triangular(low, points, lower=True), solve_triangular(low, centers, lower=True), log_norm)
  return tnp.sum(weights * tnp.exp(logk), axis=-1)


@register_pytree_node_class
class gaussian_kde:
  """A Gaussian kernel density estimate of the points dataset (d, n), each weighted (weights (n,), equal by default),
  with bandwidth factor bw_method: 'scott' (the default), 'silverman', a scalar, or a function of the estimate.

  >>> kde = tracegrad.scipy.stats.gaussian_kde(tnp.asarray([[0.0, 1.0, 2.0], [0.0, 1.0, 0.0]]))
  >>> kde.d, kde.n, kde.pdf(tnp.asarray([1.0, 0.5])).round(4)
  (2, 3, Array([0.1522], dtype=float32))
  """
  __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

  def __init__(self, dataset, bw_method=None, weights=None):
    dataset = tnp.atleast_2d(tnp.asarray(dataset))
    if dataset.dtype.kind == "c": raise NotImplementedError("gaussian_kde: complex data is not supported")
    if dataset.size <= 1:
      raise ValueError(f"gaussian_kde: dataset must have more than one element; got shape {dataset.shape}")
    n = dataset.shape[1]
    if weights is None:
      dataset = dataset.astype(float_dtype(dataset))
      weights = tnp.full(n, 1.0 / n, dataset.dtype)
    else:
      dt = float_dtype(dataset, weights)
      dataset, weights = dataset.astype(dt), tnp.atleast_1d(tnp.asarray(weights)).astype(dt)
      if weights.shape != (n,):
        raise ValueError(f"gaussian_kde: weights must be one-dimensional of length n={n}; got shape {weights.shape}")
      weights = weights / tnp.sum(weights)
    self.dataset, self.weights = dataset, weights
    self.neff = 1 / tnp.sum(weights ** 2)
    self.set_bandwidth("scott" if bw_method is None else bw_method)

  def set_bandwidth(self, bw_method=None) -> None:
    """Recompute the kernel covariance in place for a new bandwidth method (None keeps the current one), as scipy
    does; jax.scipy.stats.gaussian_kde has no such method (it raises NotImplementedError)."""
    if bw_method is None: return
    if isinstance(bw_method, str) and bw_method in ("scott", "silverman"):
      base = self.neff if bw_method == "scott" else self.neff * (self.d + 2) / 4.0
      factor = tnp.power(base, -1.0 / (self.d + 4))
    elif not isinstance(bw_method, str) and tnp.isscalar(bw_method):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a scalar or a callable; got "
                       f"{bw_method!r}")
    data_cov = tnp.atleast_2d(tnp.cov(self.dataset, rowvar=True, bias=False, aweights=self.weights))
    self.covariance = data_cov * factor ** 2
    self.inv_cov = tnp.linalg.inv(data_cov) / factor ** 2

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    kde = cls.__new__(cls)
    kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
    return kde

  @property
  def d(self) -> int: return self.dataset.shape[0]

  @property
  def n(self) -> int: return self.dataset.shape[1]

  def _points(self, points) -> Array:
    points = tnp.atleast_2d(tnp.asarray(points))
    if points.dtype.kind == "c": raise NotImplementedError("gaussian_kde: complex points are not supported")
    d, m = points.shape
    if d != self.d:
      if d != 1 or m != self.d:
        raise ValueError(f"gaussian_kde: points have dimension {d}, the dataset has dimension {self.d}")
      points = points.reshape(self.d, 1)
    return points.astype(float_dtype(self.dataset, points))

  def _log_kernels(self, points) -> Array:
    """log N(points_j; dataset_i, covariance), whitened by the Cholesky factor of inv_cov, as an (m, n) matrix."""
    points = self._points(points)
    white = cholesky(self.inv_cov.astype(points.dtype), lower=True)
    log_norm = tnp.sum(tnp.log(tnp.diagonal(white))) - 0.5 * self.d * math.log(2 * math.pi)
    return _log_kernel(white.T @ points, white.T @ self.dataset.astype(points.dtype), log_norm)

  def evaluate(self, points) -> Array:
    """The estimated density at each of the points (d, m), or at one point (d,)."""
    return tnp.sum(self.weights * tnp.exp(self._log_kernels(points)), axis=-1)

  def __call__(self, points) -> Array: return self.evaluate(points)

  def pdf(self, x) -> Array: return self.evaluate(x)

  def logpdf(self, x) -> Array:
    """The log of the estimated density, without underflow far from the data."""
    return logsumexp(self._log_kernels(x) + tnp.log(self.weights), axis=-1)

  def integrate_gaussian(self, mean, cov) -> Array:
    """The integral of the estimate times the Gaussian density N(mean, cov)."""
    mean = tnp.atleast_1d(tnp.squeeze(tnp.asarray(mean)))
    cov = tnp.atleast_2d(tnp.asarray(cov))
    if mean.shape != (self.d,):
      raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape ({self.d},); got {mean.shape}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"gaussian_kde.integrate_gaussian: cov must have shape ({self.d}, {self.d}); got {cov.shape}")
    return _convolve(self.covariance + cov, self.dataset, self.weights, mean[:, None])[0]

  def integrate_box_1d(self, low, high) -> Array:
    """The estimate's mass between the scalars low and high, for one-dimensional data."""
    if self.d != 1: raise ValueError(f"gaussian_kde.integrate_box_1d: needs one-dimensional data; d={self.d}")
    if tnp.ndim(low) != 0 or tnp.ndim(high) != 0:
      raise ValueError("gaussian_kde.integrate_box_1d: the limits of integration must be scalars")
    sigma = tnp.sqrt(self.covariance[0, 0])
    data = self.dataset[0]
    return tnp.sum(self.weights * (ndtr((high - data) / sigma) - ndtr((low - data) / sigma)))

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not supported, as in JAX: the mass of a d-dimensional box needs the multivariate normal CDF."""
    raise NotImplementedError("gaussian_kde.integrate_box: only 1-D boxes are supported; use integrate_box_1d")

  def integrate_kde(self, other: gaussian_kde) -> Array:
    """The integral of the product of this estimate and another one of the same dimension."""
    if other.d != self.d:
      raise ValueError(f"gaussian_kde.integrate_kde: the estimates' dimensions differ ({self.d} and {other.d})")
    small, large = (self, other) if self.n < other.n else (other, self)
    each = _convolve(self.covariance + other.covariance, large.dataset, large.weights, small.dataset)
    return tnp.sum(each * small.weights)

  def resample(self, key, shape=()) -> Array:
    """Draws from the estimate, (d,) + shape (transposed as JAX does): a data point picked by weight plus Gaussian
    noise of the kernel's covariance."""
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
    eps = random.multivariate_normal(eps_key, tnp.zeros(self.d, self.covariance.dtype), self.covariance, shape=shape,
                                     dtype=self.dataset.dtype).T
    return self.dataset[:, ind] + eps
