"""The error a task raises for input the user can fix (bad option, bad or missing data file).

It subclasses ValueError so library callers can catch it plainly; the CLI turns it into its
one-line user error. Messages say what went wrong and what to do.
"""


class TaskError(ValueError):
    """A task could not be built from the options or data it was given; the message says the fix."""
