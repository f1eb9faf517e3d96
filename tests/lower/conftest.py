import pytest

from tracegrad.devices.cpu import CPUDevice


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
  """The cpu device with a disk cache of its own (skips the test when there is no C compiler)."""
  dev = CPUDevice()
  if not dev.available(): pytest.skip("no C compiler")
  with pytest.MonkeyPatch.context() as mp:
    mp.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    yield dev
