"""The one error type for mistakes a user can fix; the CLI prints its message and exits 1."""


class UserError(Exception):
    """A problem the user caused and can fix. The message must say what to do."""


class NotBuiltYet(UserError):
    """A command whose implementation has not landed yet: say so, never fake output."""

    def __init__(self, what: str, issue: int):
        super().__init__(f"{what} is not implemented yet (tracked as issue {issue}).")


class Interrupted(Exception):
    """A run stopped by SIGINT / SIGTERM; the message says where it can be resumed from."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code
