"""The web UI's end-to-end tests run against the integration tests' real master."""

from ..integration.conftest import Master, master  # noqa: F401  (the fixture, reused)
from ._experiments import model  # noqa: F401  (the model directory of their experiments)
