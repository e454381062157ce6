"""Exceptions users raise or catch."""


class InvalidHP(Exception):
    """Raise inside ``with core.init()`` when the trial's hyperparameters cannot work; the trial
    then ends as an early exit (INVALID_HP) instead of an error, and is not restarted."""
