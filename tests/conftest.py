import os

from hypothesis import HealthCheck, settings

# CI runs the property tests at full strength; a developer can lower it locally.
settings.register_profile("ci", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
