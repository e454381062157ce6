"""Exceptions users raise or catch."""


class InvalidHP(Exception):
    """Raise inside ``with core.init()`` when the trial's hyperparameters cannot work; the trial
    then ends as an early exit (INVALID_HP) instead of an error, and is not restarted."""


class HarnessError(Exception):
    """A Trial entrypoint cannot be run; the message is the one line to show."""


class MasterUnavailable(ConnectionError):
    """The master could not be reached (not running, or restarting)."""


class APIError(RuntimeError):
    """The master answered with an error; ``status`` is the HTTP status code."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.errors = errors or [message]
