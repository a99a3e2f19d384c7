"""The error a task raises for input the user can fix (bad option, bad or missing data file).

It subclasses ValueError so library callers can catch it plainly; the CLI turns it into its
one-line user error. Messages say what went wrong and what to do.
"""


class TaskError(ValueError):
    """A task could not be built from the options or data it was given; the message says the fix."""


class UnknownTask(TaskError, KeyError):
    """No task has that name. A KeyError too, so `except KeyError` callers keep working; the CLI
    maps it, like every TaskError, to its one-line error at the boundary."""

    __str__ = Exception.__str__  # the message itself, not KeyError's quoted repr
