"""Fault injection, fuzzing and the route census: the `faults` tox env runs this folder
(the default `py` env leaves it out; long variants are marked slow)."""

from tests.integration.conftest import *  # noqa: F403  (the real-master fixtures)
