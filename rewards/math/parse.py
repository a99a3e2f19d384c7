"""A whitelist parser for math answers: plain text and a LaTeX subset -> sympy objects.

Model text is never handed to eval/sympify/parse_expr. The tokenizer accepts only numbers,
single-letter variables, + - * / ^ ! %, brackets and a few LaTeX commands (\\frac, \\binom, \\sqrt,
\\pi, \\cdot, \\times, \\div); a recursive-descent parser builds sympy objects directly. Caps on length,
nesting depth, literal digits, power and factorial sizes reject hostile input before any big
number is computed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import sympy

MAX_CHARS = 600  # longer texts are not answers
MAX_DEPTH = 40  # bracket / operator nesting
MAX_DIGITS = 80  # digits in one numeric literal
MAX_RESULT_DIGITS = 2000  # estimated digits of a power's value
MAX_FACTORIAL = 500


class ParseError(ValueError):
    """The text is not in the accepted grammar (not checked, never penalised)."""


class TooBig(ParseError):
    """The text is in the grammar but over a size cap (hostile or absurd)."""


@dataclass
class Parsed:
    """A parsed value. `decimals`: decimal places of the least precise decimal literal (None: exact)."""

    value: sympy.Expr
    decimals: int | None = None
    sig_digits: int | None = None  # significant digits of that literal
    percent: bool = False  # the text ended with a percent sign


_COMMANDS = {
    "frac": "FRAC", "dfrac": "FRAC", "tfrac": "FRAC", "cfrac": "FRAC",
    "binom": "BINOM", "dbinom": "BINOM", "tbinom": "BINOM", "sqrt": "SQRT", "pi": "PI",
    "cdot": "*", "times": "*", "ast": "*", "div": "/", "infty": "INF", "left": None,
    "right": None, "big": None, "Big": None, "bigl": None, "bigr": None, "%": "%",
    "{": "(", "}": ")", ",": None, ";": None, "!": None, " ": None, "displaystyle": None,
}
_UNICODE = {"π": "PI", "√": "SQRT", "×": "*", "÷": "/", "·": "*", "−": "-", "∞": "INF", "⋅": "*"}
_SINGLE = set("+-*/^!%()[]{}")
# A subscripted name ("v_0", "x_{12}") is one variable.
_TOKEN = re.compile(r"\s+|\d+(?:\.\d*)?|\.\d+|\\[A-Za-z]+|\\.|[A-Za-z]_(?:\{[A-Za-z0-9]{1,8}\}|[A-Za-z0-9])|[A-Za-z]+|.", re.S)


def tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; kinds NUM, VAR, PI, SQRT, FRAC, INF and the operator characters."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok.isspace():
            continue
        if tok[0].isdigit() or tok[0] == ".":
            if tok == ".":
                raise ParseError("stray '.'")
            out.append(("NUM", tok))
        elif tok[0] == "\\":
            kind = _COMMANDS.get(tok[1:], "?")
            if kind == "?":
                raise ParseError(f"unsupported command {tok}")
            if kind is not None:
                out.append((kind, tok))
        elif "_" in tok and tok[0].isalpha() and tok.isascii():
            out.append(("VAR", tok.replace("{", "").replace("}", "")))
        elif tok in _UNICODE:
            out.append((_UNICODE[tok], tok))
        elif tok.isalpha() and tok.isascii():
            out.extend(_word_tokens(tok))
        elif tok in _SINGLE:
            out.append((tok, tok))
        else:
            raise ParseError(f"unsupported character {tok!r}")
    return out


def _word_tokens(word: str) -> list[tuple[str, str]]:
    low = word.lower()
    if low == "pi":
        return [("PI", word)]
    if low == "sqrt":
        return [("SQRT", word)]
    if len(word) == 1:
        return [("VAR", word)]
    raise ParseError(f"unsupported word {word!r}")


@dataclass
class _State:
    tokens: list[tuple[str, str]]
    pos: int = 0
    depth: int = 0
    decimals: list[tuple[int, int]] = field(default_factory=list)

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self, kind: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ParseError("unexpected end")
        tok = self.tokens[self.pos]
        if kind is not None and tok[0] != kind:
            raise ParseError(f"expected {kind}, got {tok[1]!r}")
        self.pos += 1
        return tok

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooBig("nested too deeply")


_ATOM_START = {"NUM", "VAR", "PI", "SQRT", "FRAC", "BINOM", "(", "{", "INF"}
_CLOSE = {"(": ")", "{": "}", "[": "]"}


def parse(text: str, allow_symbols: bool = True) -> Parsed:
    """Parse one scalar expression. Raises ParseError / TooBig."""
    if len(text) > MAX_CHARS:
        raise TooBig("text too long")
    st = _State(tokenize(text))
    percent = False
    if st.tokens and st.tokens[-1][0] == "%":
        st.tokens.pop()
        percent = True
    if not st.tokens:
        raise ParseError("empty")
    value = _expr(st)
    if st.pos != len(st.tokens):
        raise ParseError(f"unexpected {st.tokens[st.pos][1]!r}")
    if not allow_symbols and value.free_symbols:
        raise ParseError("not a closed-form number")
    places = min(st.decimals) if st.decimals else None
    return Parsed(value, places[0] if places else None, places[1] if places else None, percent)


def _expr(st: _State) -> sympy.Expr:
    st.enter()
    value = _term(st)
    while st.peek() in ("+", "-"):
        op = st.take()[0]
        rhs = _term(st)
        value = value + rhs if op == "+" else value - rhs
    st.depth -= 1
    return value


def _term(st: _State) -> sympy.Expr:
    first = st.pos
    value = _unary(st)
    signs = {kind for kind, _ in st.tokens[first : st.pos - 1]}
    if st.peek() == "FRAC" and st.tokens[st.pos - 1][0] == "NUM" and signs <= {"+", "-"}:
        mixed = _mixed_number(st, value)
        if mixed is not None:
            return mixed
    while True:
        kind = st.peek()
        if kind in ("*", "/"):
            st.take()
            rhs = _unary(st)
            if kind == "/":
                if rhs == 0:
                    raise ParseError("division by zero")
                rhs = 1 / rhs
            value = value * rhs
        elif kind in _ATOM_START and not (kind == "NUM" and _ends_in_number(st)):
            value = value * _power(st)  # implicit product: 2\pi, 3x, 2(1+x)
        else:
            return value


def _mixed_number(st: _State, whole: sympy.Expr) -> sympy.Expr | None:
    """`2\\frac{3}{4}` is the mixed number 11/4 (as MATH and GSM8K write it), not 2 * 3/4: an
    integer followed directly by a proper numeric fraction. Anything else is left to _term."""
    mark = st.pos
    frac = _atom(st)
    if whole.is_Integer and frac.is_Rational and 0 < frac < 1 and st.peek() not in _ATOM_START | {"^", "!"}:
        return whole - frac if whole < 0 else whole + frac
    st.pos = mark
    return None


def _ends_in_number(st: _State) -> bool:
    """'2 3' is not a product: refuse two numeric literals side by side."""
    return st.tokens[st.pos - 1][0] == "NUM"


def _unary(st: _State) -> sympy.Expr:
    if st.peek() in ("+", "-"):
        st.enter()
        sign = st.take()[0]
        inner = _unary(st)
        st.depth -= 1
        return -inner if sign == "-" else inner
    return _power(st)


def _power(st: _State) -> sympy.Expr:
    base = _postfix(st)
    if st.peek() != "^":
        return base
    st.take()
    st.enter()
    exponent = _group_or_unary(st)
    st.depth -= 1
    return safe_pow(base, exponent)


def _group_or_unary(st: _State) -> sympy.Expr:
    if st.peek() == "{":
        return _bracketed(st)
    if st.peek() == "NUM":  # x^23 means x^{2}3 in LaTeX, but plain text means x^23: refuse
        tok = st.take()[1]
        if len(tok) > 1 and st.peek() is not None and st.peek() in _ATOM_START:
            raise ParseError("ambiguous exponent")
        return _number(st, tok)
    return _unary(st)


def _postfix(st: _State) -> sympy.Expr:
    value = _atom(st)
    while st.peek() == "!":
        st.take()
        if not (value.is_Integer and 0 <= value <= MAX_FACTORIAL):
            raise TooBig("factorial argument too large or not a small natural number")
        value = sympy.factorial(value)
    return value


def _atom(st: _State) -> sympy.Expr:
    kind, text = st.take()
    if kind == "NUM":
        return _number(st, text)
    if kind == "VAR":
        return _variable(text)
    if kind == "PI":
        return sympy.pi
    if kind == "INF":
        return sympy.oo
    if kind in ("(", "{"):
        st.pos -= 1
        return _bracketed(st)
    if kind == "FRAC":
        num = _frac_arg(st)
        den = _frac_arg(st)
        if den == 0:
            raise ParseError("division by zero")
        return num / den
    if kind == "SQRT":
        return _sqrt(st)
    if kind == "BINOM":
        return _binom(_frac_arg(st), _frac_arg(st))
    raise ParseError(f"unexpected {text!r}")


def _variable(name: str) -> sympy.Expr:
    """A letter is a variable, except `i`: the imaginary unit, as answers write it ("3 + 4i", "i^2")."""
    return sympy.I if name == "i" else sympy.Symbol(name)


def _bracketed(st: _State) -> sympy.Expr:
    opener = st.take()[0]
    if opener not in _CLOSE:
        raise ParseError("expected a bracket")
    value = _expr(st)
    st.take(_CLOSE[opener])
    return value


def _frac_arg(st: _State) -> sympy.Expr:
    """\\frac{a}{b}, or the shorthand \\frac12 (one digit or letter per argument)."""
    kind, text = st.take()
    if kind == "{":
        st.pos -= 1
        return _bracketed(st)
    if kind == "NUM" and text.isdigit():
        if len(text) > 1:  # split '12' into '1' and '2'
            st.tokens[st.pos - 1 : st.pos] = [("NUM", text[0]), ("NUM", text[1:])]
        return sympy.Integer(text[0])
    if kind == "VAR":
        return _variable(text)
    raise ParseError("bad \\frac argument")


def _binom(n: sympy.Expr, k: sympy.Expr) -> sympy.Expr:
    """\\binom{n}{k} of small natural numbers (larger ones are left to the LaTeX fallback)."""
    if not (n.is_Integer and k.is_Integer and 0 <= n <= MAX_FACTORIAL):
        raise ParseError("\\binom is checked for small natural numbers only")
    return sympy.binomial(n, k)


def _sqrt(st: _State) -> sympy.Expr:
    index = sympy.Integer(2)
    if st.peek() == "[":
        st.take()
        index = _expr(st)
        st.take("]")
        if not (index.is_Integer and 2 <= index <= 100):
            raise TooBig("root index must be a small integer")
    arg = _bracketed(st) if st.peek() in ("(", "{") else _postfix(st)
    return safe_pow(arg, 1 / index)


def _number(st: _State, text: str) -> sympy.Expr:
    digits = len(text) - ("." in text)
    if digits > MAX_DIGITS:
        raise TooBig("numeric literal too long")
    if "." not in text:
        return sympy.Integer(int(text))
    whole, _, frac = text.partition(".")
    if frac:  # '5.' is an integer written with a trailing dot
        sig = len((whole + frac).lstrip("0")) or 1
        st.decimals.append((len(frac), sig))
    return sympy.Rational(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))


def safe_pow(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    """base**exponent, refusing powers whose value would be astronomically large."""
    if exponent.free_symbols or base.free_symbols:
        if exponent.is_Rational and abs(exponent) <= 100:
            return base**exponent
        raise TooBig("symbolic power too large")
    if not exponent.is_Rational:
        raise ParseError("only rational exponents are checked")
    if exponent.q > 100 or abs(exponent.p) > 100_000:
        raise TooBig("exponent too large")
    if base.is_Rational:
        size = max(_digits(base.p), _digits(base.q))
        if size * abs(exponent) / exponent.q > MAX_RESULT_DIGITS and abs(base) != 1:
            raise TooBig("power too large")
    elif abs(exponent) > 100:
        raise TooBig("power of an irrational base too large")
    if base == 0 and exponent < 0:
        raise ParseError("division by zero")
    return base**exponent


def _digits(n: int) -> float:
    n = abs(int(n))
    return 1.0 if n < 10 else math.log10(n) + 1
