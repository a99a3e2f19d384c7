"""The one error type for mistakes a user can fix; the CLI prints its message and exits 1."""


class UserError(Exception):
    """A problem the user caused and can fix. The message must say what to do."""


def closest(name: str, known: list[str]) -> list[str]:
    """Up to three known names that look like `name` (for "did you mean")."""
    import difflib

    return difflib.get_close_matches(name, known, n=3, cutoff=0.5)


def known_hint(name: str, known: list[str]) -> str:
    """'did you mean a, b? known: a, b, c' (the first part only when something is close)."""
    close = closest(name, known)
    return (f"did you mean {', '.join(close)}? " if close else "") + f"known: {', '.join(known)}"


class UnknownName(UserError, KeyError):
    """A name no registry knows (estimator, loss, preset, ...): one wording everywhere, with the
    closest known names. A KeyError too, for library callers; the CLI prints it as any UserError."""

    __str__ = Exception.__str__  # the message itself, not KeyError's quoted repr

    def __init__(self, kind: str, name: str, known: list[str]):
        super().__init__(f"unknown {kind} {name!r}; {known_hint(name, known)}")


class NotBuiltYet(UserError):
    """A command whose implementation has not landed yet: say so, never fake output."""

    def __init__(self, what: str, issue: int):
        super().__init__(f"{what} is not implemented yet (tracked as issue {issue}).")


class Interrupted(Exception):
    """A run stopped by SIGINT / SIGTERM; the message says where it can be resumed from."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code
