"""The Array API (2024.12) surface of tracegrad.numpy: dtype objects, the inspection namespace, device= keywords, the
functions the standard adds (astype, nextafter, unique_*, meshgrid, from_dlpack, linalg.cross, linalg.diagonal) and
the array object's protocol methods, against numpy and JAX."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp

from oracles import FLOATS, INTS, arrays, assert_close, check, np_dtype, shapes, x64

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
         "float32", "float64"]


# ---- dtypes ----
@pytest.mark.parametrize("name", NAMES)
def test_namespace_dtypes_are_the_dtypes_arrays_carry(name):
  d = getattr(tnp, name)
  with x64():
    assert tnp.zeros(1, d).dtype == d and tnp.zeros(1, d).dtype is d
  assert d == d and d == np.dtype(d.np) and np.dtype(d.np) == d and d == name and not d != d
  assert hash(d) == hash(np.dtype(d.np))
  assert np.dtype(d) == d.np and np.zeros(2).astype(d).dtype == d.np
  assert np.asarray([1, 0], dtype=d).dtype == d.np
  assert d.__name__ == name and d.dtype == d.np


def test_dtype_equality_as_jax():
  jnp = pytest.importorskip("jax.numpy")
  assert tnp.asarray(True).dtype == tnp.bool and jnp.asarray(True).dtype == jnp.bool
  assert (tnp.float32 == np.float32) == (jnp.dtype(jnp.float32) == np.float32) is True
  assert (tnp.float32 == tnp.float64) == (jnp.dtype(jnp.float32) == jnp.float64) is False
  assert (tnp.int32 == "int32") == (jnp.dtype(jnp.int32) == "int32") is True
  assert tnp.float32 != tnp.int32 and tnp.bool != np.int8 and tnp.float32 != 3 and tnp.float32 != None  # noqa: E711
  assert tnp.float32 != "no dtype: at all" and tnp.float32 not in ["a, b", "float64"]
  assert {np.dtype("float32"): 1}[tnp.float32] == 1
  assert tnp.bool(1).dtype is tnp.bool


def test_result_type_takes_python_types_as_weak():
  jnp = pytest.importorskip("jax.numpy")
  for args in [(int, tnp.int8), (float, tnp.float16), (int,), (float, int), (bool, tnp.uint8)]:
    assert tnp.result_type(*args).name == jnp.result_type(*(getattr(jnp, a.name) if hasattr(a, "name") else a
                                                          for a in args)).name, args


def test_issubdtype_and_bool_namespace():
  assert type(tnp.issubdtype(tnp.float32, tnp.floating)) is bool and type(tnp.can_cast(tnp.int8, tnp.int32)) is bool
  assert type(tnp.can_cast(tnp.float32, tnp.int32, "same_kind")) is bool
  assert tnp.issubdtype(tnp.float32, tnp.floating) and tnp.issubdtype(tnp.bool, tnp.bool)
  assert not tnp.issubdtype(tnp.bool, tnp.integer) and tnp.issubdtype(tnp.uint8, tnp.unsignedinteger)


def test_finfo_iinfo_dtype():
  jnp = pytest.importorskip("jax.numpy")
  for name in FLOATS:
    f, j = tnp.finfo(getattr(tnp, name)), jnp.finfo(getattr(jnp, name))
    assert f.dtype is getattr(tnp, name) and f.dtype == j.dtype
    assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (j.bits, j.eps, j.max, j.min, j.smallest_normal)
  for name in INTS:
    i, j = tnp.iinfo(getattr(tnp, name)), jnp.iinfo(getattr(jnp, name))
    assert i.dtype is getattr(tnp, name) and (i.bits, i.min, i.max) == (j.bits, j.min, j.max)
  with pytest.raises(ValueError, match="finfo"): tnp.finfo(tnp.int8)
  with pytest.raises(ValueError, match="iinfo"): tnp.iinfo(tnp.float32)


@pytest.mark.parametrize("name", NAMES)
def test_isdtype_as_jax(name):
  jnp = pytest.importorskip("jax.numpy")
  kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]
  for k in kinds + [("bool", "real floating"), ("complex floating",), tnp.int8]:
    jk = jnp.int8 if k is tnp.int8 else k
    assert tnp.isdtype(getattr(tnp, name), k) == jnp.isdtype(getattr(jnp, name), jk), (name, k)


def test_isdtype_signature_and_errors():
  import inspect
  assert list(inspect.signature(tnp.isdtype).parameters) == ["dtype", "kind"]
  assert tnp.isdtype(dtype=tnp.float32, kind="complex floating") is False
  with pytest.raises(ValueError, match="isdtype: unrecognized kind 'floats'"): tnp.isdtype(tnp.float32, "floats")


# ---- the inspection namespace ----
def test_namespace_info():
  info = tnp.__array_namespace_info__()
  assert tnp.__array_api_version__ == "2024.12"
  assert info.capabilities()["boolean indexing"] is True and "max dimensions" in info.capabilities()
  assert info.default_device() in info.devices()
  assert info.default_dtypes() == {"real floating": tnp.float32, "complex floating": tnp.complex64,
                                   "integral": tnp.int32, "indexing": tnp.int32}
  assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64"}
  assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
  assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32"}
  assert info.dtypes(kind="complex floating") == {"complex64": tnp.complex64}
  with x64():
    assert info.default_dtypes()["real floating"] is tnp.float64
    assert set(info.dtypes(kind="numeric")) >= {"int64", "uint64", "float64", "complex128"}
  with pytest.raises(ValueError, match="unknown kind"): info.dtypes(kind="float")


# ---- device= ----
CREATORS = [("zeros", ((2, 3),)), ("ones", ((2,),)), ("empty", ((1,),)), ("full", ((2,), 7)), ("arange", (4,)),
            ("linspace", (0, 1, 5)), ("eye", (3,)), ("asarray", ([1, 2],)), ("zeros_like", (np.ones(2),)),
            ("ones_like", (np.ones(2),)), ("empty_like", (np.ones(2),)), ("full_like", (np.ones(2), 3))]


@pytest.mark.parametrize("fn,args", CREATORS, ids=[c[0] for c in CREATORS])
def test_device_keyword(fn, args):
  dev = tracegrad.devices()[0]
  want = getattr(tnp, fn)(*args)
  for device in (None, dev):
    got = getattr(tnp, fn)(*args, device=device)
    assert_close(got, want)
    assert got.device == dev
  with pytest.raises(ValueError, match="not one of this process's devices"):
    getattr(tnp, fn)(*args, device=object())


def test_to_device_and_device():
  dev = tracegrad.devices()[0]
  x = tnp.arange(3)
  assert x.device == dev and x.to_device(dev).device == dev
  assert_close(x.to_device(dev), np.arange(3, dtype=np.int32))
  assert_close(tnp.asarray(x, device=x.device), np.arange(3, dtype=np.int32))


# ---- astype ----
@given(st.sampled_from(["bool"] + INTS + FLOATS), st.sampled_from(["bool"] + INTS + FLOATS), shapes(max_dims=2),
       st.data())
def test_astype(src, dst, shape, data):
  x = data.draw(arrays(src, shape, low=0, high=100))
  got = tnp.astype(tnp.asarray(x), getattr(tnp, dst))
  with np.errstate(all="ignore"): want = x.astype(np_dtype(dst))
  assert_close(got, want)
  assert tnp.astype(x, getattr(tnp, dst), copy=True, device=tracegrad.devices()[0]).dtype is getattr(tnp, dst)


def test_astype_of_weak_and_canonical():
  assert not tnp.astype(tnp.asarray(1.0) * 2, tnp.float32).weak_type
  assert tnp.astype(tnp.arange(2), tnp.int64).dtype is tnp.int32   # without 64-bit mode, as JAX
  with x64(): assert tnp.astype(tnp.arange(2), tnp.int64).dtype is tnp.int64


# ---- nextafter ----
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nextafter(dtype):
  x = np.array([1, -1, 0, -0.0, np.inf, -np.inf, np.nan, 1, 3, 2.5, 1e-3, -1e-3], dtype)
  y = np.array([2, 2, -1, 1, 0, 0, 1, np.nan, 3, -np.inf, 0, 0], dtype)
  with x64():
    check(tnp.nextafter, np.nextafter, x, y, rtol=0, atol=0)
    got = np.asarray(tnp.nextafter(x, y))
  want = np.nextafter(x, y)
  assert np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))  # bit for bit, signed zeros too


def test_nextafter_promotes_as_jax():
  jnp = pytest.importorskip("jax.numpy")
  assert tnp.nextafter(1, 2).dtype == jnp.nextafter(1, 2).dtype and tnp.nextafter(1, 2).weak_type
  assert tnp.nextafter(tnp.int8(1), 2).dtype == jnp.nextafter(jnp.int8(1), 2).dtype
  assert_close(tnp.nextafter(tnp.bfloat16(1), 2), np.asarray(jnp.nextafter(jnp.bfloat16(1), 2)))


# ---- unique_* ----
@given(st.sampled_from(["int8", "uint16", "float32"]), shapes(max_dims=3), st.data())
def test_unique_family(dtype, shape, data):
  x = data.draw(arrays(dtype, shape, low=0, high=4))
  if dtype == "float32" and x.size: x.flat[0] = np.nan
  a = tnp.asarray(x)
  vals, idx, inv, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
  inv = inv.reshape(x.shape)
  r = tnp.unique_all(a)
  for got, want in zip(r, (vals, idx, inv, counts)):
    assert_close(got, want if got is r.values else want.astype(np.int32))
  assert_close(tnp.unique_values(a), vals)
  assert_close(tnp.unique_counts(a).counts, counts.astype(np.int32))
  assert_close(tnp.unique_inverse(a).inverse_indices, inv.astype(np.int32))


def test_unique_as_jax_and_traced():
  jnp = pytest.importorskip("jax.numpy")
  x = np.array([[3.0, np.nan], [1.0, np.nan]], np.float32)
  for t, j in zip(tnp.unique_all(x), jnp.unique_all(x)): assert_close(t, np.asarray(j))
  assert tnp.unique_all(x)._fields == ("values", "indices", "inverse_indices", "counts")
  with pytest.raises(TypeError, match="unique_values: the array .* is traced"):
    tracegrad.make_graph(tnp.unique_values)(tnp.ones(3))


# ---- meshgrid ----
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_meshgrid(indexing, sparse, n):
  xs = [np.arange(k + 2, dtype=[np.float32, np.int32, np.uint8][k]) for k in range(n)]
  got, want = tnp.meshgrid(*xs, indexing=indexing, sparse=sparse), np.meshgrid(*xs, indexing=indexing, sparse=sparse)
  assert len(got) == len(want)
  for g, w in zip(got, want): assert_close(g, w)


def test_meshgrid_errors():
  with pytest.raises(ValueError, match="meshgrid: indexing must be 'xy' or 'ij'"): tnp.meshgrid(tnp.ones(2), indexing="x")
  with pytest.raises(ValueError, match=r"meshgrid: every input must be 1-D, argument 1 has shape \(2, 2\)"):
    tnp.meshgrid(tnp.ones(2), tnp.ones((2, 2)))


# ---- dlpack ----
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float16", "float32"])
def test_dlpack_round_trip(dtype):
  x = np.arange(6).reshape(2, 3).astype(np_dtype(dtype))
  a = tnp.asarray(x)
  assert a.__dlpack_device__() == (1, 0)
  assert_close(np.from_dlpack(a), x)
  assert_close(tnp.from_dlpack(x), x)
  assert_close(tnp.from_dlpack(a), x)
  with pytest.raises(TypeError, match="from_dlpack: list does not support DLPack"): tnp.from_dlpack([1])


# ---- the array object ----
def test_setitem_is_refused_with_a_pointer_to_at():
  x = tnp.zeros(3)
  with pytest.raises(TypeError, match=r"immutable.*x\.at\[0\]\.set\(value\)"): x[0] = 1
  with pytest.raises(TypeError, match="immutable"): x[1:] = tnp.ones(2)


def test_array_namespace():
  x = tnp.ones(2)
  assert x.__array_namespace__() is tnp and x.__array_namespace__(api_version="2024.12") is tnp
  with pytest.raises(ValueError, match="api_version '2021.12' is not supported"):
    x.__array_namespace__(api_version="2021.12")


# ---- linalg ----
@given(st.sampled_from(["int16", "float32"]), st.sampled_from([(3,), (2, 3), (4, 1, 3)]),
       st.sampled_from([(3,), (1, 3), (2, 3)]), st.data())
def test_linalg_cross(dtype, sa, sb, data):
  a, b = data.draw(arrays(dtype, sa)), data.draw(arrays(dtype, sb))
  check(tnp.linalg.cross, np.cross, a, b)
  check(tnp.cross, np.cross, np.moveaxis(a, -1, 0), b, axisa=0, axisc=0)


def test_linalg_cross_errors_as_jax():
  with pytest.raises(ValueError, match=r"linalg.cross: both arrays must have 3 components along axis -1, got shapes "
                                       r"\(2, 3\) and \(2, 2\)"):
    tnp.linalg.cross(tnp.ones((2, 3)), tnp.ones((2, 2)))
  with pytest.raises(ValueError, match="cross: the vectors must have 2 or 3 components"):
    tnp.cross(tnp.ones(4), tnp.ones(3))


@given(st.sampled_from(["bool", "int8", "float32"]), shapes(min_dims=2, max_dims=4), st.integers(-4, 4), st.data())
def test_linalg_diagonal(dtype, shape, offset, data):
  x = data.draw(arrays(dtype, shape))
  check(lambda a: tnp.linalg.diagonal(a, offset=offset), lambda a: np.diagonal(a, offset, -2, -1), x)


def test_linalg_diagonal_needs_a_matrix():
  with pytest.raises(ValueError, match=r"linalg.diagonal: x must have at least two dimensions, got shape \(3,\)"):
    tnp.linalg.diagonal(tnp.ones(3))


@pytest.mark.parametrize("dtype,want32,want64", [("bool", "int32", "int64"), ("int8", "int32", "int64"),
                                                 ("uint8", "uint32", "uint64"), ("uint32", "uint32", "uint64"),
                                                 ("int32", "int32", "int64"), ("float16", "float16", "float16")])
def test_linalg_trace_dtype_as_jax(dtype, want32, want64):
  x = np.ones((2, 3, 3), np_dtype(dtype))
  assert tnp.linalg.trace(x).dtype == want32
  with x64():
    got = tnp.linalg.trace(x)
    assert got.dtype == want64
    assert_close(got, np.full(2, 3, np_dtype(want64)))


@pytest.mark.parametrize("n,m,k", [(2, 3, 2 ** 31), (0, None, 2 ** 31), (3, 2, -2 ** 40), (3, 4, 4), (3, 4, -3)])
def test_eye_with_a_diagonal_outside_the_matrix(n, m, k):
  assert_close(tnp.eye(n, m, k=k), np.eye(n, m, k=k, dtype=np.float32))
