"""Probability distributions as jax.scipy.stats: one module per distribution with its logpdf, pdf, cdf, ... (logpmf and
pmf for the discrete ones), taking loc and scale where scipy does.

>>> tracegrad.scipy.stats.norm.pdf(tnp.asarray([0.0])).round(4)
Array([0.3989], dtype=float32)
"""
from . import (bernoulli, beta, cauchy, chi2, expon, gamma, geom, laplace, logistic, multivariate_normal,  # noqa: F401
               norm, poisson, t, truncnorm, uniform)

__all__ = ["bernoulli", "beta", "cauchy", "chi2", "expon", "gamma", "geom", "laplace", "logistic",
           "multivariate_normal", "norm", "poisson", "t", "truncnorm", "uniform"]
