import importlib.util
import os

import pytest

from hypothesis import HealthCheck, Phase, settings

# every program the suite compiles for the cpu is also rendered for CUDA and compiled to PTX, when NVRTC is installed
if importlib.util.find_spec("cuda") and importlib.util.find_spec("cuda.bindings"):
  os.environ.setdefault("TRACEGRAD_CHECK_PTX", "1")

# JAX, where it is installed, computes the reference values of many tests: its compiled programs are kept on disk
# between runs of the suite (XLA's compiles took two thirds of some test files' time), as tracegrad keeps its own
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
  os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tracegrad-tests", "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

import tracegrad  # noqa: E402
from tracegrad import run  # noqa: E402

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
# the suite's profiles report a failing example as found, without shrinking it (which can take minutes of compiles);
# HYPOTHESIS_PROFILE=dev shrinks it to the smallest
_NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
settings.register_profile("ci", derandomize=True, max_examples=25, deadline=None, suppress_health_check=_QUIET,
                          phases=_NO_SHRINK, print_blob=True)
# on the compiled backend every new shape is a new C program to compile, so its run draws fewer examples
settings.register_profile("ci-cpu", derandomize=True, max_examples=6, deadline=None, suppress_health_check=_QUIET,
                          phases=_NO_SHRINK, print_blob=True)
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if tracegrad.default_backend() == "interp" else "ci-cpu"))


@pytest.fixture
def four_devices(monkeypatch):
  """This process's devices as if started with TRACEGRAD_NUM_CPU_DEVICES=4; the registry is restored after."""
  if tracegrad.default_backend() not in ("cpu", "interp"):
    pytest.skip(f"needs four host devices (TRACEGRAD_NUM_CPU_DEVICES, cpu or interp); {tracegrad.default_backend()} "
                f"has {len(tracegrad.devices())}")
  saved_devices, saved_state = dict(run._DEVICES), dict(run._state)
  monkeypatch.setenv("TRACEGRAD_NUM_CPU_DEVICES", "4")
  run._DEVICES.clear()
  run._state.update(probed=False, backend=None)
  yield tracegrad.devices()
  run._DEVICES.clear()
  run._DEVICES.update(saved_devices)
  run._state.clear()
  run._state.update(saved_state)
