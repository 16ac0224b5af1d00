"""Test-wide settings.

Hypothesis runs derandomized everywhere so CI on a clean clone sees the same
examples as the developer did; a failure found once is found again.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "roost",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("roost")
