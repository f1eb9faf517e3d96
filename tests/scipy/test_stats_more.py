"""tracegrad.scipy.stats' betabinom, binom, dirichlet, gennorm, gumbel_l, gumbel_r, multinomial, nbinom, pareto,
vonmises, wrapcauchy, mode, rankdata, sem and gaussian_kde against jax.scipy.stats: values (tails and edges
included), shapes and dtypes in float32 and with 64-bit types on, and derivatives of some densities. JAX's side runs
under jax.jit, one compile per case, which keeps the file fast."""
import contextlib

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import stats
from oracles import check_grads, eps, x64

jax = pytest.importorskip("jax")
jstats = pytest.importorskip("jax.scipy.stats")

X = np.linspace(-6, 6, 13)
K = np.array([-1, 0, 1, 2, 3, 5, 7, 9])
UNIT = np.array([0.0, 1e-6, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6, 1.0])
ANGLE = np.array([-0.5, 0.0, 0.3, 1.5, np.pi, 4.0, 2 * np.pi, 7.0])
SIMPLEX = np.array([[0.2, 0.5, 1e-4, 0.3, 0.6], [0.3, 0.25, 0.5, 0.7, 0.5], [0.5, 0.25, 0.4999, 0.0, -0.1]])
GUMBEL = ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf")


def col(*v): return np.array(v)[:, None]


# (module, functions, args): each function of the module at args, which broadcast against each other
CASES = [
  ("binom", ("logpmf", "pmf"), (K, col(0, 5, 7), 0.3)), ("binom", ("logpmf",), (K, 4, col(0.0, 1.0), 1.0)),
  ("binom", ("logpmf",), (K / 2, 6, 0.6)),
  ("betabinom", ("logpmf", "pmf"), (K, col(0, 5, 8), col(0.5, 2.0, 9.0), 1.5)),
  ("betabinom", ("logpmf",), (K + 0.5, 6, 2.0, 3.0, 2.0)),
  ("betabinom", ("logpmf",), (K, 4, 1.0, 1.0)),
  ("nbinom", ("logpmf", "pmf"), (K, col(1.0, 2.5, 10.0), 0.3)),
  ("nbinom", ("logpmf",), (K, 3.0, col(0.0, 1.0, 0.7), 2.0)),
  ("gennorm", ("logpdf", "pdf", "cdf"), (X, col(0.5, 1.0, 2.0, 4.5))),
  ("gumbel_l", GUMBEL, (X, 0.5, col(2.0, 0.7))), ("gumbel_l", ("ppf",), (UNIT, 0.5, 2.0)),
  ("gumbel_r", GUMBEL, (X, 0.5, col(2.0, 0.7))), ("gumbel_r", ("ppf",), (UNIT, 0.5, 2.0)),
  ("pareto", ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"), (X + 4, col(0.5, 3.0), 0.5, 1.5)),
  ("pareto", ("ppf",), (np.append(UNIT, [-0.5, 1.5, np.nan]), col(0.5, 3.0), 0.5, 1.5)),
  ("vonmises", ("logpdf", "pdf"), (ANGLE, col(0.5, 2.0, 60.0, 600.0))),
  ("wrapcauchy", ("logpdf", "pdf"), (ANGLE, col(0.1, 0.5, 0.8))),
  ("dirichlet", ("logpdf", "pdf"), (SIMPLEX, np.array([0.5, 2.0, 3.0]))),
  ("dirichlet", ("logpdf",), (SIMPLEX[:2], np.array([1.0, 2.0, 3.0]))),
  ("dirichlet", ("logpdf",), (SIMPLEX[:, 1], np.array([1.0, 2.0, 3.0]))),
]


@contextlib.contextmanager
def types_of(dtype):
  """The block with 64-bit types on in both libraries if dtype is float64."""
  if dtype == np.float32:
    yield np.float32
    return
  was = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", True)
  try:
    with x64():
      yield np.float64
  finally:
    jax.config.update("jax_enable_x64", was)


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request):
  """The dtype of the float arguments (float64 with 64-bit types on)."""
  with types_of(request.param) as d:
    yield d


def cast(args, dtype):
  return tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args)


def jitted(fn, *args, **static):
  """fn(*args, **static) in JAX, compiled."""
  return jax.jit(lambda *a: fn(*a, **static))(*args)


def compare(ours, theirs, rel=64, abs_=16, values=None):
  """ours has theirs' shape and dtype, and its values (or `values`) within rel ulps plus abs ulps of the largest
  finite magnitude (at least 1); NaN and infinities where they are."""
  ours, theirs = np.asarray(ours), np.asarray(theirs)
  assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours.shape, ours.dtype, theirs.shape, theirs.dtype)
  want = theirs if values is None else np.asarray(values, theirs.dtype)
  e = eps(want.dtype) if want.dtype.kind == "f" else 0
  finite = np.abs(want[np.isfinite(want)])
  np.testing.assert_allclose(ours, want, rtol=rel * e, atol=abs_ * e * max(1.0, finite.max(initial=0.0)))


def scipy_values(mod, fn, args):
  """scipy's values where JAX's float64 ones lose digits: its betaln is off by up to 1e-7 relative."""
  if mod != "betabinom": return None
  sst = pytest.importorskip("scipy.stats")
  return getattr(sst.betabinom, fn)(np.floor(args[0]), *args[1:])


@pytest.mark.parametrize("mod,fns,args", CASES, ids=[f"{m}-{i}" for i, (m, *_) in enumerate(CASES)])
def test_matches_jax(mod, fns, args, dtype):
  args = cast(args, dtype)
  theirs = jitted(lambda *a: [getattr(getattr(jstats, mod), f)(*a) for f in fns], *args)
  for f, want in zip(fns, theirs):
    values = scipy_values(mod, f, args) if dtype == np.float64 else None
    compare(getattr(getattr(stats, mod), f)(*args), want, values=values)


# (module, function, args) outside the parameters' domain, where both give NaN (JAX's eagerly: XLA's compiled exp and
# sub may fold a NaN away)
INVALID = [("betabinom", "logpmf", (K[:4], col(-1.0, 4.0, 4.0), col(1.0, 0.0, 1.0), col(1.0, 1.0, -1.0))),
           ("gumbel_l", "pdf", (X[:4], 0.0, col(0.0, -1.0))), ("gumbel_l", "sf", (X[:4], 0.0, col(0.0, -1.0))),
           ("gumbel_r", "logcdf", (X[:4], 0.0, col(0.0, -1.0))), ("gumbel_r", "sf", (X[:4], 0.0, col(0.0, -1.0))),
           ("vonmises", "pdf", (X[:4], col(0.0, -1.0))), ("wrapcauchy", "pdf", (ANGLE[:4], col(0.0, 1.0, -0.5)))]


@pytest.mark.parametrize("mod,fn,args", INVALID, ids=[f"{m}.{f}" for m, f, _ in INVALID])
def test_invalid_parameters_give_nan(mod, fn, args):
  args = cast(args, np.float32)
  compare(getattr(getattr(stats, mod), fn)(*args), getattr(getattr(jstats, mod), fn)(*args))


def test_tails_keep_their_digits():
  """Far tails, where 1 - (a number near 1) would lose them: against JAX where its formula keeps them, else scipy."""
  sst = pytest.importorskip("scipy.stats")
  right, left = np.float32([3.0, 10.0, 20.0, 60.0]), np.float32([-60.0, -20.0, -3.0, 1.0, 2.0, 3.0])
  far, near = np.float32([1e3, 1e6, 1e30]), np.float32([0.0, 1e-3, 0.1, 2 * np.pi - 1e-3])
  # (a function of a stats module, JAX's reference if not the same function of jax.scipy.stats, scipy's values)
  cases = [(lambda s: s.gumbel_r.sf(right), lambda j: jax.numpy.exp(j.gumbel_r.logsf(right)), None),
           (lambda s: s.gumbel_r.logsf(-left), None, None), (lambda s: s.gumbel_l.cdf(left), None, None),
           (lambda s: s.gumbel_l.logcdf(left), None, sst.gumbel_l.logcdf(left.astype(float))),
           (lambda s: s.pareto.sf(far, 2.5), None, None),
           (lambda s: s.vonmises.logpdf(np.float32([0.0, np.pi]), 1e4), None, None),
           (lambda s: s.wrapcauchy.logpdf(near, 0.999), None,
            sst.wrapcauchy.logpdf(near.astype(float), float(np.float32(0.999))))]
  theirs = jitted(lambda: [(reference or f)(jstats) for f, reference, _ in cases])
  for (f, _, values), want in zip(cases, theirs):
    compare(f(stats), want, rel=8, values=values)


def test_integer_arguments_promote_to_the_default_float(dtype):
  k = np.arange(4)
  fns = [lambda s: s.binom.pmf(k, 3, 0.5), lambda s: s.nbinom.logpmf(k, 2, 0.5), lambda s: s.gumbel_r.logpdf(k),
         lambda s: s.pareto.logpdf(k, 2), lambda s: s.norm.logpdf(k)]
  for f, want in zip(fns, jitted(lambda: [f(jstats) for f in fns])):
    compare(f(stats), want)


def test_multinomial(dtype):
  p = np.array([0.2, 0.5, 0.3], dtype)
  xs, ns = np.array([[1, 2, 0], [0, 0, 4], [1, 1, 1], [0, 0, 0]]), [3, 4, 4, 0]
  theirs = jitted(lambda p: [(jstats.multinomial.logpmf(x, n, p), jstats.multinomial.pmf(x, n, p))
                             for x, n in zip(xs, ns)] + [[jstats.multinomial.logpmf(x, 3, p) for x in xs]], p)
  for x, n, (logpmf, pmf) in zip(xs, ns, theirs):
    compare(stats.multinomial.logpmf(x, n, p), logpmf)
    compare(stats.multinomial.pmf(x, n, p), pmf)
  # a stack of counts is judged row by row (JAX compares the stack's grand total with n, so gives -inf for each)
  compare(stats.multinomial.logpmf(xs, 3, p), np.stack(theirs[-1]))
  with pytest.raises(ValueError, match="multinomial.logpmf: x and n must be of integer type"):
    stats.multinomial.logpmf(np.array([1.0, 2.0]), 3, p[:2])


def test_dirichlet_checks_its_shapes():
  with pytest.raises(ValueError, match="dirichlet.logpdf: alpha must be one-dimensional"):
    stats.dirichlet.logpdf(SIMPLEX, np.ones((3, 1)))
  with pytest.raises(ValueError, match=r"dirichlet.logpdf: x must have 3 or 2 entries .*x.shape=\(4,\)"):
    stats.dirichlet.logpdf(np.full(4, 0.25), np.ones(3))


# (module, function, args, the arguments JAX can differentiate by: with respect to a gumbel scale, or a ppf's p, its
# xlogy(-1, .) gives a float0 error)
GRADS = [("gumbel_r", "logpdf", (0.7, 0.5, 2.0), (0, 1)), ("gumbel_l", "logcdf", (-1.5, 0.5, 2.0), (0, 1, 2)),
         ("gumbel_l", "ppf", (0.3, 0.5, 2.0), ()), ("pareto", "logpdf", (3.0, 2.5, 0.5), (0, 1, 2)),
         ("gennorm", "logpdf", (0.6, 1.5), (0, 1)), ("gennorm", "cdf", (-0.8, 2.5), (0,)),
         ("vonmises", "logpdf", (1.1, 3.0), (0, 1)), ("wrapcauchy", "logpdf", (2.0, 0.4), (0, 1)),
         ("binom", "logpmf", (3.0, 7.0, 0.35), (2,)), ("nbinom", "logpmf", (2.0, 3.5, 0.4), (1, 2))]


@pytest.mark.parametrize("case", GRADS, ids=[f"{m}.{f}" for m, f, *_ in GRADS])
def test_gradients(case):
  """Against JAX where it can take the derivative, and against finite differences (forward and reverse mode)."""
  mod, fn, args, with_jax = case
  ours, theirs = getattr(getattr(stats, mod), fn), getattr(getattr(jstats, mod), fn)
  args = [np.float32(a) for a in args]
  if with_jax:
    want = jax.jit(jax.grad(theirs, argnums=with_jax))(*args)
    got = tg.grad(ours, argnums=with_jax)(*[tnp.asarray(a) for a in args])
    for g, w in zip(got, want): compare(g, w, rel=256)
  check_grads(ours, args, modes=("fwd", "rev"))


def test_dirichlet_gradient_matches_jax():
  x, alpha = SIMPLEX[:, 0].astype(np.float32), np.float32([0.5, 2.0, 3.0])
  compare(tg.grad(lambda a: stats.dirichlet.logpdf(x, a))(tnp.asarray(alpha)),
          jax.jit(jax.grad(lambda a: jstats.dirichlet.logpdf(x, a)))(alpha), rel=256)


# (input, axis, keepdims)
MODES = [(np.array([[1, 2, 2, 3], [3, 3, 1, 1], [5, 4, 4, 5]]), a, k) for a, k in ((0, False), (1, True), (None, False),
                                                                              (None, True), (-1, False))] + [
  (np.array([[1.0, np.nan, np.nan, 2.0, 5.0], [np.nan, np.nan, 1.0, 1.0, 1.0], [-0.0, 0.0, 1.0, 1.0, 3.0]]), 1, False),
  (np.array([True, False, True]), 0, False), (np.float32(3.0), 0, True), (np.arange(24).reshape(2, 3, 4) % 3, 1, False),
  (np.zeros((0, 3), np.float32), 0, False), (np.zeros((3, 0), np.int32), 1, True)]


@pytest.mark.parametrize("a,axis,keepdims", MODES, ids=range(len(MODES)))
def test_mode_matches_jax(a, axis, keepdims):
  ours, theirs = stats.mode(a, axis, keepdims=keepdims), jstats.mode(a, axis, keepdims=keepdims)
  compare(ours.mode, theirs.mode, rel=0, abs_=0)
  compare(ours.count, theirs.count, rel=0, abs_=0)


def test_mode_with_64_bit_types_under_jit_and_its_errors(dtype):
  a = np.array([[1, 2, 2, 3], [3, 3, 1, 1], [5, 4, 4, 5]]).astype(dtype)
  ours, theirs = tg.jit(lambda x: stats.mode(x, axis=1))(a), jstats.mode(a, axis=1)
  compare(ours.mode, theirs.mode, rel=0, abs_=0)
  compare(ours.count, theirs.count, rel=0, abs_=0)
  with pytest.raises(NotImplementedError, match="mode: nan_policy='omit'"):
    stats.mode(a, nan_policy="omit")
  with pytest.raises(ValueError, match="mode: illegal nan_policy"):
    stats.mode(a, nan_policy="skip")


RANKED = np.array([[3.0, 1, 4, 1, 5, 9, 2, 6, 5, 3], [2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
                   [1, np.nan, 2, 3, 4, 5, 6, 7, 8, 9],
                   [-0.0, 0.0, -np.inf, np.inf, 1, 1, 1, 0, -1, 2]])


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_matches_jax(method):
  a = RANKED.astype(np.float32)
  compare(stats.rankdata(a, method, axis=1), jstats.rankdata(a, method, axis=1), rel=0, abs_=0)
  compare(stats.rankdata(a[[0, 1, 3]], method), jstats.rankdata(a[[0, 1, 3]], method), rel=0, abs_=0)


@pytest.mark.parametrize("a,axis", [(np.array([[1, 2, 2], [3, 3, 1]]), 0), (np.array([True, False, True]), None),
                                    (np.float32(2.0), None), (np.zeros((2, 0)), 1), (np.zeros((2, 0)), None)])
def test_rankdata_of_other_inputs(a, axis):
  compare(stats.rankdata(a, axis=axis), jstats.rankdata(a, axis=axis), rel=0, abs_=0)


def test_rankdata_with_64_bit_types_under_jit_and_its_errors(dtype):
  a = RANKED[:2].astype(dtype)
  compare(tg.jit(lambda x: stats.rankdata(x, "average", axis=1))(a), jstats.rankdata(a, "average", axis=1), rel=0,
          abs_=0)
  compare(stats.rankdata(np.arange(3)), jstats.rankdata(np.arange(3)), rel=0, abs_=0)
  with pytest.raises(ValueError, match="rankdata: unknown method 'mean'"):
    stats.rankdata(a, "mean")
  with pytest.raises(NotImplementedError, match="rankdata: nan_policy='raise'"):
    stats.rankdata(a, nan_policy="raise")


def test_sem_matches_jax(dtype):
  a = np.array([[1.0, 2.0, 4.0, 8.0], [3.0, -1.0, 0.5, 2.0], [0.0, 0.0, 1.0, 7.0]], dtype)
  holes = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan, 2.0, 2.5, 0.0]], dtype)
  calls = [(a, 0, 1, False, "propagate"), (a, 1, 0, True, "propagate"), (a, None, 2, False, "propagate"),
           (np.arange(6).reshape(2, 3), -1, 1, False, "propagate"), (holes, 1, 1, False, "propagate"),
           (holes, 1, 1, True, "omit"), (holes, None, 0, False, "omit")]
  theirs = jitted(lambda a, holes: [jstats.sem(x, ax, dd, nan_policy=nan, keepdims=kd)
                                    for x, ax, dd, kd, nan in calls], a, holes)
  for (x, axis, ddof, keepdims, nan_policy), want in zip(calls, theirs):
    compare(stats.sem(x, axis, ddof, nan_policy, keepdims=keepdims), want, rel=8)
  with pytest.raises(ValueError, match="sem: nan_policy 'raise' is not supported"):
    stats.sem(a, nan_policy="raise")


RNG = np.random.default_rng(0)
DATA1, DATA2 = RNG.normal(size=20), RNG.normal(size=(2, 30))
WEIGHTS = RNG.uniform(0.1, 1.0, 30)
# (dataset, bw_method, weights, points)
KDES = [(DATA1, None, None, np.linspace(-4, 4, 9)), (DATA2, None, None, RNG.normal(size=(2, 5)) * 2),
        (DATA2, "silverman", WEIGHTS, RNG.normal(size=(2, 5))), (DATA2, 0.3, None, np.array([0.5, -0.5])),
        (DATA1, lambda kde: 0.5 * kde.neff ** -0.2, WEIGHTS[:20], np.float32(0.7))]


def kde_results(lib, random, data, bw, weights, points, mean, cov):
  """Everything a gaussian_kde of lib computes, by name."""
  kde = lib.gaussian_kde(data, bw, weights)
  out = {name: getattr(kde, name) for name in ("neff", "dataset", "weights", "covariance", "inv_cov")}
  out.update(evaluate=kde.evaluate(points), pdf=kde.pdf(points), call=kde(points), logpdf=kde.logpdf(points),
             logpdf_far=kde.logpdf(points * 30), integrate_gaussian=kde.integrate_gaussian(mean, cov),
             integrate_kde=kde.integrate_kde(lib.gaussian_kde(data[..., ::2] + 0.5)),
             resample=kde.resample(random.key(3), (4,)))
  if kde.d == 1: out["integrate_box_1d"] = kde.integrate_box_1d(-1.0, 0.5)
  return out


@pytest.mark.parametrize("case,dtype", [(c, np.float32) for c in KDES] + [(KDES[2], np.float64)],
                         ids=[f"float32-{i}" for i in range(len(KDES))] + ["float64-2"])
def test_gaussian_kde_matches_jax(case, dtype):
  with types_of(dtype):
    check_gaussian_kde(*case, dtype)


def check_gaussian_kde(data, bw, weights, points, dtype):
  data, points = data.astype(dtype), np.asarray(points, dtype)
  weights = None if weights is None else weights.astype(dtype)
  d = 1 if data.ndim == 1 else data.shape[0]
  mean, cov = np.full(d, 0.3, dtype), np.eye(d, dtype=dtype) * 0.5
  ours = kde_results(stats, tg.random, tnp.asarray(data), bw, weights, points, mean, cov)
  theirs = jitted(lambda *a: kde_results(jstats, jax.random, a[0], bw, *a[1:]), data, weights, points, mean, cov)
  assert ours.keys() == theirs.keys()
  for name, want in theirs.items():
    compare(ours[name], want, rel=256)


def test_gaussian_kde_is_a_pytree_and_checks_its_arguments():
  kde = stats.gaussian_kde(DATA2.astype(np.float32))
  pts = np.float32([[0.1, 2.0], [0.3, -1.0]])
  compare(tg.jit(lambda k, x: k.logpdf(x))(kde, pts), kde.logpdf(pts), rel=8)
  leaves = tg.tree.leaves(kde)
  assert len(leaves) == 5 and all(isinstance(leaf, tg.Array) for leaf in leaves)
  assert tg.tree.map(lambda v: v * 1, kde).d == 2
  with pytest.raises(ValueError, match="points have dimension 3, the dataset has dimension 2"):
    kde.evaluate(np.zeros((3, 4), np.float32))
  with pytest.raises(ValueError, match="integrate_box_1d: needs one-dimensional data"):
    kde.integrate_box_1d(0.0, 1.0)
  with pytest.raises(NotImplementedError, match="integrate_box"):
    kde.integrate_box(np.zeros(2), np.ones(2))
  with pytest.raises(ValueError, match="integrate_gaussian: mean must have shape"):
    kde.integrate_gaussian(np.zeros(3), np.eye(2))
  with pytest.raises(ValueError, match="weights must be one-dimensional of length n=30"):
    stats.gaussian_kde(DATA2, weights=np.ones(29))
  with pytest.raises(ValueError, match="bw_method must be"):
    stats.gaussian_kde(DATA2, bw_method="wide")
  with pytest.raises(ValueError, match="more than one element"):
    stats.gaussian_kde(np.ones(1))


def test_gaussian_kde_set_bandwidth_recomputes_the_covariance():
  kde = stats.gaussian_kde(DATA2.astype(np.float32))
  kde.set_bandwidth("silverman")
  compare(kde.covariance, jstats.gaussian_kde(DATA2.astype(np.float32), "silverman").covariance, rel=256)
  kde.set_bandwidth(None)
  compare(kde.covariance, jstats.gaussian_kde(DATA2.astype(np.float32), "silverman").covariance, rel=256)
  kde.set_bandwidth(0.2)
  compare(kde.inv_cov, jstats.gaussian_kde(DATA2.astype(np.float32), 0.2).inv_cov, rel=256)
