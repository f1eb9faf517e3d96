import os

from hypothesis import HealthCheck, settings

import tracegrad

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("ci", derandomize=True, max_examples=25, deadline=None, suppress_health_check=_QUIET)
# on the compiled backend every new shape is a new C program to compile, so its run draws fewer examples
settings.register_profile("ci-cpu", derandomize=True, max_examples=6, deadline=None, suppress_health_check=_QUIET)
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci-cpu" if tracegrad.default_backend() == "cpu" else "ci"))
