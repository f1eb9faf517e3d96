"""Probability distributions as jax.scipy.stats: one module per distribution with its logpdf, pdf, cdf, ... (logpmf and
pmf for the discrete ones), taking loc and scale where scipy does; and mode, rankdata, sem and gaussian_kde.

>>> tracegrad.scipy.stats.norm.pdf(tnp.asarray([0.0])).round(4)
Array([0.3989], dtype=float32)
"""
from . import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,  # noqa: F401
               gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm, pareto, poisson,
               t, truncnorm, uniform, vonmises, wrapcauchy)
from .descriptive import mode, rankdata, sem  # noqa: F401
from .kde import gaussian_kde  # noqa: F401

__all__ = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "gaussian_kde",
           "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "mode", "multinomial",
           "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "rankdata", "sem", "t", "truncnorm", "uniform",
           "vonmises", "wrapcauchy"]
