import pytest

import tracegrad as tg


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def scheme(request):
  """Both libraries set to one threefry scheme (JAX's default, then the original one), restored after."""
  jax = pytest.importorskip("jax")
  was_jax, was_tg = jax.config.jax_threefry_partitionable, tg.config.read("jax_threefry_partitionable")
  jax.config.update("jax_threefry_partitionable", request.param)
  tg.config.update("jax_threefry_partitionable", request.param)
  yield request.param
  jax.config.update("jax_threefry_partitionable", was_jax)
  tg.config.update("jax_threefry_partitionable", was_tg)
