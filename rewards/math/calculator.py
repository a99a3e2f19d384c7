"""The built-in `calculator` tool (run.tools=[calculator]), backed by the math reward's whitelist parser.
It lives with the math service and runs in a tool worker process, which imports it by name: the
trainer never imports a service's internals."""

from __future__ import annotations

import sympy

from botgrpo_rewards.math.parse import ParseError, parse


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "3 * (4 + 5) / 2" or "2^10 - 7!".

    Args:
        expression: numbers with + - * / ^ ! % and brackets (LaTeX \\frac, \\sqrt and \\binom also work)
    """
    try:
        parsed = parse(expression, allow_symbols=False)  # a recursive-descent parser: never eval
    except ParseError as err:
        raise ValueError(f"cannot evaluate {expression!r}: {err}") from None
    value = parsed.value / 100 if parsed.percent else parsed.value
    value = sympy.nsimplify(value) if value.is_Float else value
    if value.is_Integer:
        return str(int(value))
    if value.is_Rational:
        return f"{value} (= {float(value):.12g})"
    if value.is_real and value.is_number:
        return f"{float(value):.12g}"
    return str(value)
