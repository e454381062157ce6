"""The real-master fixture of the integration tests, for the Lightning tests."""

from tests.integration.conftest import master  # noqa: F401
