"""The answer a completion states in prose, when it has no box, no final-answer phrase and no bare
answer: "Therefore, the probability that Alice wins is 2/3." (extract.py reads the rest).

A solution cut off before its answer must not be read as answering (a cut-off prefix would be
credited). So the last sentence counts only when it reads as the conclusion:
- it is finished: it ends with a full stop, a closed math span, or a number with its unit
  ("1,000.99€", "12 m²"); "the total is 12" may be the start of 120;
- and, unless the model ended its turn (an end-of-turn token, "I hope it is correct") or the reply
  is that one sentence, it says it concludes: "Therefore / Thus / Hence / So / Finally / In total / we find / is the solution /
  is our answer", or it labels one closed math span ("Special matrix: $...$"). "First, the packs
  cost 3 * 4 = 12 dollars." is a step, not an answer;
- its value ends the statement: "... = 12 dollars, and the tax is" holds an intermediate value;
- a conclusion word after math or a number in the same sentence concludes only when its clause
  states the value in words: "..., so there are 15 ordered pairs." concludes, "Then $2lw = 216$,
  so $lw = 108$." is a step that carries the computation on;
- its value is a result, not a computation still to be done: "So the sum is $18 \\cdot \\frac{7 +
  92}{2}$." and a labelled working line "Adding them: $1 + 0 + 4 = 5$" state no answer.
"""

from __future__ import annotations

import re

MATH_ENV = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
SENTENCE_END = re.compile(r"(?<!\\)[.。!?](?=\s|$)|\n")  # "\\!" is a TeX thin space
TRAILING = " \t.。,;!:*"
_COPULA = re.compile(r"(?:\s|(?<![A-Za-z])(?:it|that|this|which|what)')(?:is|are|was|equals|be|=|s)\s+"
                     r"(?:equal\s+to\s+|exactly\s+|about\s+|approximately\s+)?", re.I)
_LEADING_VALUE = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?")
# A sentence that concludes: it opens so ("Therefore, ...": the statement starts there) or says so.
_OPENS_CONCLUSION = re.compile(r"(?<![A-Za-z])(?:therefore|thus|hence|so|finally|in\s+conclusion|in\s+total|altogether"
                               r"|we\s+(?:find|get|obtain|conclude|have\s+found))(?![A-Za-z])", re.I)
_SAYS_CONCLUSION = re.compile(r"(?<![A-Za-z])(?:the\s+(?:final\s+)?(?:result|solution)"
                              r"|(?:is|are)\s+(?:the|our)\s+(?:final\s+)?(?:solution|answer|result)s?)(?![A-Za-z])", re.I)
_UNIT_END = re.compile(r"\d\s*(?:[€£¥%°]|\\?\$|[A-Za-z]{1,3}[²³])$")
_LABELLED_MATH = re.compile(r"^(?!\s*step\b)[^$:]{1,60}:\s*(\$\$?)[^$]+\1$", re.I)
_NUMBER_OR_MATH = re.compile(r"\$[^$]+\$|(?<![\w.])-?\d[\d,]*(?:\.\d+)?%?(?![\w.])")
_MATH_OR_NUMBER = re.compile(r"\d|\$|\\[(\[]")
_ARITHMETIC = re.compile(r"[\d\s.,+\-*/(){}]+")  # numbers, operators and groups only (commands removed first)
_OPERATION = re.compile(r"[\d)}]\s*[+\-*]\s*[\d({]")  # "/" between numbers is a fraction: a value
_COMMANDS = re.compile(r"\\(?:left|right|[dt]?frac|,|;|!|quad)|\$")
_CLAUSE_GOES_ON = re.compile(r"[,;]|\d|\$|(?<![A-Za-z])(?:and|then|plus|minus|but|so|before|after|which|times)(?![A-Za-z])",
                             re.I)


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def find_closer(text: str, closer: str, start: int, end: int) -> int:
    """The next `closer` in text[start:end] that is not an escaped dollar (`\\$16.20`); -1: none."""
    pos = text.find(closer, start, end)
    while pos > 0 and closer[0] == "$" and text[pos - 1] == "\\":
        pos = text.find(closer, pos + 1, end)
    return pos


def value_in_sentence(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The value a sentence states: what follows its last "is" / "are" / "=" when that is a math
    span or a number ("the probability that Alice wins is 2/3", "there are 12 sequences")."""
    last = None
    for m in _COPULA.finditer(text, start, end):
        last = m
    if last is None:
        return None
    pos = last.end()
    for opener, closer in MATH_ENV:
        if text.startswith(opener, pos):
            close = find_closer(text, closer, pos + len(opener), end)
            return trim(text, pos + len(opener), close) if close > pos else None
    m = _LEADING_VALUE.match(text, pos, end)
    return (m.start(), m.end()) if m else None


def only_value(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The one number or math span of a sentence ("Jane started growing Sphere 3 hours ago"); None
    when it holds several (which of them is meant is a guess)."""
    found = [(m.start(), m.end()) for m in _NUMBER_OR_MATH.finditer(text[start:end])]
    return (start + found[0][0], start + found[0][1]) if len(found) == 1 else None


def _finished(text: str, start: int, end: int) -> bool:
    closed_math = text.endswith(("$", "\\)", "\\]"), start, end)  # "... is $\\frac23$": the value is whole
    return text[end - 1: end] in (".", "!") or closed_math or bool(_UNIT_END.search(text, start, end))


def is_computation(value: str) -> bool:
    """Numbers joined by +, - or a product ("18 \\cdot \\frac{7 + 92}{2}", "3 - 2"): a calculation still to
    be carried out, not its result (a fraction, a negative number, "2\\sqrt{3} + 1" are values)."""
    plain = _COMMANDS.sub(" ", value.replace("\\cdot", "*").replace("\\times", "*"))
    return bool(_ARITHMETIC.fullmatch(plain)) and bool(_OPERATION.search(plain))


def _concludes_at(text: str, begin: int, at: int, end: int) -> bool:
    """Whether the conclusion word at `at` concludes its sentence (see the module docstring)."""
    if not _MATH_OR_NUMBER.search(text, begin, at):
        return True
    last = None
    for m in _COPULA.finditer(text, at, end):
        last = m
    return last is not None and "=" not in last.group()


def stated_value(text: str, start: int, end: int, model_ended: bool) -> tuple[int, int] | str:
    """(start, end) of the value the last sentence of text[start:end] states, or why there is none."""
    if not model_ended and not _finished(text, start, end):
        return "no \\boxed{} answer or final-answer phrase (the last sentence is unfinished)"
    while end > start and text[end - 1] in TRAILING:
        end -= 1
    begin = start
    for m in SENTENCE_END.finditer(text, start, end):
        if m.end() < end:
            begin = m.end()
    sentence = text[begin:end]
    openings = [m.start() for m in _OPENS_CONCLUSION.finditer(text, begin, end)]
    labelled = _LABELLED_MATH.match(sentence.strip())
    concludes = (any(_concludes_at(text, begin, at, end) for at in openings) or labelled
                 or _SAYS_CONCLUSION.search(sentence))
    # a reply of one sentence is the reply; the last of several must say it concludes
    if not model_ended and begin > start and not concludes:
        return "no \\boxed{} answer or final-answer phrase (the last sentence states no conclusion)"
    if labelled:  # "Special matrix: $...$": the labelled span
        delim = labelled.group(1)
        opens = text.index(delim, text.index(":", begin))
        value = trim(text, opens + len(delim), trim(text, begin, end)[1] - len(delim))
        if not model_ended and is_computation(text[value[0]:value[1]].split("=")[0]):
            return "no \\boxed{} answer or final-answer phrase (the last line is a labelled computation)"
        return value
    value = None
    for at in [*reversed(openings), begin]:  # "... $$ \\frac{2}{1}.$$ Therefore, it increases by 100%"
        value = value_in_sentence(text, at, end) or only_value(text, at, end)
        if value is not None:
            break
    if value is None:
        return "no \\boxed{} answer or final-answer phrase"
    rest = re.sub(r"^(?:\s|\$|\\[)\]])+", "", text[value[1]:end])  # past the value's closing delimiter
    if not model_ended and _CLAUSE_GOES_ON.search(rest):
        return "no \\boxed{} answer or final-answer phrase (the sentence goes on past its value)"
    if not model_ended and is_computation(text[value[0]:value[1]]):
        return "no \\boxed{} answer or final-answer phrase (the last sentence states a computation, not its result)"
    return value
