"""tracegrad.errors: the exceptions raised where JAX raises its own, caught by jax.errors' names and base types; and
the conversions of arrays to Python values, each raising what JAX (or numpy) raises."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp


def _programs(m, np_):
  return {
    "TracerBoolConversionError": lambda: m.jit(lambda x: 1.0 if x > 0 else 0.0)(np_.ones(())),
    "TracerIntegerConversionError": lambda: m.jit(lambda x: [1.0, 2.0][x])(np_.ones((), np_.int32)),
    "TracerArrayConversionError": lambda: m.jit(lambda x: np.asarray(x))(np_.ones(2)),
    "NonConcreteBooleanIndexError": lambda: m.jit(lambda x: x[x < 0])(np_.ones(3)),
  }


@pytest.mark.parametrize("name", ["TracerBoolConversionError", "TracerIntegerConversionError",
                                  "TracerArrayConversionError", "NonConcreteBooleanIndexError"])
def test_traced_conversions_raise_jax_errors_by_name_and_base(name):
  libs = [(tg, tnp)]
  try:
    import jax
    libs.append((jax, jax.numpy))
  except ImportError:
    pass
  for m, np_ in libs:
    with pytest.raises(getattr(m.errors, name)) as info:
      _programs(m, np_)[name]()
    base = IndexError if name == "NonConcreteBooleanIndexError" else TypeError
    assert isinstance(info.value, base)
  assert issubclass(tg.errors.TracerBoolConversionError, tg.errors.ConcretizationTypeError)
  assert tg.TracedValueError is tg.errors.ConcretizationTypeError


def test_python_values_of_arrays_raise_as_numpy():
  with pytest.raises(ValueError, match="ambiguous"):
    bool(tnp.ones(3))
  with pytest.raises(TypeError, match="size 1"):
    float(tnp.ones(3))
  assert bool(tnp.ones((1, 1))) and int(tnp.asarray([7])) == 7


def test_cond_takes_its_older_five_argument_form():
  cond = tg.lax.cond
  assert float(cond(True, 1.0, lambda x: x + 1, 2.0, lambda x: x - 1)) == 2.0
  assert float(cond(False, 1.0, lambda x: x + 1, 2.0, lambda x: x - 1)) == 1.0
  assert float(tg.grad(lambda y: cond(True, y, lambda x: x * 3, y, lambda x: x - 1))(2.0)) == 3.0
