"""The one error type for mistakes a user can fix; the CLI prints its message and exits 1."""


class UserError(Exception):
    """A problem the user caused and can fix. The message must say what to do."""


class NotBuiltYet(UserError):
    """A command whose implementation has not landed yet: say so, never fake output."""

    def __init__(self, what: str, issue: int):
        super().__init__(f"{what} is not implemented yet (tracked as issue {issue}).")
