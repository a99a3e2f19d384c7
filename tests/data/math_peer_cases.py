"""A peer-format table: whole completions written in the formats public models and datasets use.

Test data: test_math_backend grades every row, the load test scores them quietly and under CPU
stress, and research/scripts/math_corpus.py writes them as a corpus (group = format) on which
`botgrpo bench rewards --service math --corpus` prints our checker's and math-verify's accuracy per
format next to the speed figures. Written for this project from the formats' public descriptions
(Minerva / lm-eval answer lines, PRM800K `# Answer` solutions, GSM8K `#### 42`, WizardMath
"The answer is:", reasoning models' <think> blocks, MATH-style boxed solutions, bare answers);
not a copy of anyone's tests. Each row: (format, gold, completion, the verdict a careful grader gives).
"""

from __future__ import annotations

# (gold, the final answer as a model writes it, correct)
ANSWERS: list[tuple[str, str, bool]] = [
    ("204", "204", True),
    ("204", "$204$", True),
    ("33", "033", True),
    ("12", "13", False),
    ("1000", "1,000", True),
    ("1000.99", "1,000.99", True),
    ("16.2", "\\$16.20", True),
    ("14916", "14{,}916", True),
    ("\\frac{1}{2}", "\\frac12", True),
    ("\\frac{1}{2}", "0.5", True),
    ("\\frac{1}{3}", "0.333", False),
    ("\\frac{3}{4}", "\\dfrac{4}{3}", False),
    ("\\frac{7}{3}", "2\\frac{1}{3}", True),
    ("2\\sqrt{3}", "\\sqrt{12}", True),
    ("2\\pi", "6.28", False),
    ("\\frac{\\pi}{4}", "\\pi/4", True),
    ("28\\%", "28\\%", True),
    ("28\\%", "28", True),
    ("90^\\circ", "90^{\\circ}", True),
    ("47", "m+n=47", True),
    ("(3,2)", "(x, y) = (3, 2)", True),
    ("(3,2)", "(2,3)", False),
    ("-2, 2", "\\pm 2", True),
    ("\\{1, 2, 3\\}", "3, 2, 1", True),
    ("[1, 2)", "[1,2)", True),
    ("[1, 2)", "[1,2]", False),
    ("(-\\infty, 0) \\cup (1, \\infty)", "(1,\\infty)\\cup(-\\infty,0)", True),
    ("x^2-1", "(x-1)(x+1)", True),
    ("\\tan^2 y + 1", "\\sec^2 y", True),
    ("\\text{(C)}", "\\text{(C)}", True),
    ("\\text{(C)}", "\\text{(D)}", False),
    ("\\text{Evelyn}", "\\text{Evelyn}", True),
    ("5", "5 \\text{ cm}", True),
    ("120", "\\binom{10}{3}", True),
    ("\\frac{1}{3}", "\\left( \\frac{1}{3} \\right)", True),
    ("\\frac{1}{3}", "k = \\tfrac{1}{3}", True),
    ("\\frac{1}{3}", "\\cfrac{1}{3}", True),
    ("\\frac{1}{3}", "\\frac{1}{3} \\text{ meters}", True),
    ("(3, \\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
    ("(3, \\frac{\\pi}{2})", "\\left( 3, \\pi \\right)", False),
    ("12, 13", "12\\text{ and }13", True),
    ("[1, 2)", "x \\in [1, 2)", True),
    ("-\\frac{10}{9}", "-10/9", True),
    ("\\sqrt{3}", "\\sqrt3", True),
    ("1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}", True),
    ("-\\frac{1}{2}", "\\frac{-1}{2}", True),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", True),
    ("3", "\\log_2 8", True),
    ("\\frac{1}{2}", "\\sin \\frac{\\pi}{6}", True),
    ("0", "\\cos \\frac{\\pi}{2}", True),
    ("10", "10\\%", True),
    ("y = 2x + 3", "y = 3 + 2x", True),
    ("2x + 3", "y = 2x - 3", False),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", True),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 2 \\\\ 1 \\end{pmatrix}", False),
    ("\\infty", "\\infty", True),
    ("5", "x=5", True),
    ("1.5", "\\frac{3}{2}", True),
    ("0.25", "25\\%", True),
    ("x \\geq 5", "5 \\leq x", True),
    ("x < 1", "x > 1", False),
    ("2x + 4y - 3 = 0", "y = -\\frac{1}{2}x + \\frac{3}{4}", True),
    ("a + 3z = 0", "0", False),
    ("\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "\\begin{bmatrix}1&0\\\\0&1\\end{bmatrix}", True),
    ("\\{1\\pm\\sqrt{5},-2\\}", "\\{-2, 1+\\sqrt{5}, 1-\\sqrt{5}\\}", True),
]

# The golds GSM8K-style solutions carry: plain numbers.
NUMBERS: list[tuple[str, str, bool]] = [
    ("72", "72", True), ("72", "70", False), ("1200", "1,200", True), ("18", "$18", True),
    ("5", "5.00", True), ("3.5", "3.50", True), ("10", "10 dollars", True), ("624", "642", False),
    ("90", "90%", True), ("2", "1", False),
]

# Formats the peer corpora showed misread, each as a true and a false twin.
TWINS: list[tuple[str, str, bool]] = [
    ("(5,250)", "(5, 250)", True), ("5250", "(5,250)", False), ("5250", "5,250", True),  # a pair, not thousands
    ("\\frac{3}{2}", "1 1/2", True), ("\\frac{11}{2}", "1 1/2", False), ("1 1/2", "11/2", False),  # mixed numbers
    ("3000000", "3 million", True), ("3", "3 million", False), ("2", "2 \\text{ billion}", False),  # magnitudes
    ("\\sin x = \\frac{42}{59}", "\\sin x = 42/59", True), ("\\sin x = \\frac{42}{59}", "\\cos x = \\frac{42}{59}", False),
    ("f(3) = 5", "f(3) = 5", True), ("f(3) = 5", "g(3) = 5", False),  # a function-call left side is kept
    ("|z| = 5", "5", True), ("f^{-1}(3) = 2", "2", True), ("x^2 + y = 4", "4", False),  # the gold names its unknown
    ("\\{1, 2\\}", "{2, 1}", True), ("\\{1, 2\\}", "{1, 3}", False),  # sets in TeX braces
    ("\\{n!, 2\\}", "\\{n!, 2\\}", True), ("\\{a, b\\}", "\\{b, c\\}", False),  # symbolic elements
    ("1+i", "i+1", True), ("1+i", "1-i", False), ("-1", "i^2", True), ("1", "i^2", False),  # i is imaginary
    ("v_0 t", "t v_0", True), ("v_0 t", "v_1 t", False),  # subscripted names
    ("x^2y^3", "y^3x^2", True), ("x^2y^3", "x^3y^2", False),  # juxtaposed powers
    ("\\frac{1}{2}", "\\sin 30^\\circ", True), ("\\frac{1}{2}", "\\sin 60^\\circ", False),  # degrees inside \\sin
    ("\\mathcal{F}", "\\mathcal{F}", True), ("\\mathcal{F}", "\\mathcal{G}", False),
    ("3.14", "\\approx 3.14", True), ("3.14", "\\approx 3.15", False),
    ("7", "7\\mathrm{th}", True), ("7", "8^{\\text{th}}", False),  # ordinals
    ("10:30", "10:30 \\text{ AM}", True), ("15:00", "3:00 PM", True), ("15:00", "3:00 AM", False),  # clock times
]

WORK = "We set up the equation from the problem.\nSimplifying both sides carefully gives the value below."


def _minerva(answer: str) -> str:
    return f"{WORK}\nFinal Answer: The final answer is ${answer}$. I hope it is correct."


def _minerva_plain(answer: str) -> str:
    return f"{WORK}\nThe final answer is {answer}. I hope it is correct."


def _prm800k(answer: str) -> str:
    return f"First I find the key quantity.\n\nThen I simplify it.\n\n# Answer\n\n{answer}"


def _boxed(answer: str) -> str:
    return f"{WORK}\n\nTherefore the answer is $\\boxed{{{answer}}}$."


def _final_heading(answer: str) -> str:
    return f"{WORK}\n\n**Final Answer**\n\\[ \\boxed{{{answer}}} \\]"


def _think(answer: str) -> str:
    return f"<think>\nMaybe it is \\boxed{{0}}? Let me recheck the work.\n</think>\n\n{WORK}\n\nThe answer is $\\boxed{{{answer}}}$."


def _bare(answer: str) -> str:
    return f"${answer}$"


def _gsm8k(answer: str) -> str:
    return f"She buys 3 packs at $4 each, so 3*4 = <<3*4=12>>12 dollars.\n#### {answer}"


def _wizardmath(answer: str) -> str:
    return f"Step 1: Read the problem.\nStep 2: Compute.\nThe answer is: {answer}"


FORMATS = {
    "minerva": (_minerva, ANSWERS),
    "minerva_plain": (_minerva_plain, NUMBERS),
    "prm800k": (_prm800k, ANSWERS),
    "boxed": (_boxed, ANSWERS),
    "final_answer_heading": (_final_heading, ANSWERS),
    "think": (_think, ANSWERS),
    "bare": (_bare, ANSWERS),
    "gsm8k": (_gsm8k, NUMBERS),
    "wizardmath": (_wizardmath, NUMBERS),
    "misread_formats": (_boxed, TWINS),
}

# Rows the templates cannot express: which of several answers is the final one.
SPECIAL: list[tuple[str, str, str, bool]] = [
    ("final_choice", "7", "So $x=\\boxed{3}$ and $y=\\boxed{4}$.\nFinal Answer: The final answer is $7$. I hope it is correct.", True),
    ("final_choice", "3", "So $x=\\boxed{3}$ and $y=\\boxed{4}$.\nFinal Answer: The final answer is $7$. I hope it is correct.", False),
    ("final_choice", "4", "It is \\boxed{3}.\n\nWait, I made an arithmetic slip: it is \\boxed{4}.", True),
    ("final_choice", "3", "It is \\boxed{3} or maybe \\boxed{4}.", False),
    ("final_choice", "5", "<think>I believe the answer is 5", False),
    ("final_choice", "5", "<think>The answer is 4.</think>The answer is 5.", True),
    ("final_choice", "4", "<think>The answer is 4.</think>The answer is 5.", False),
    ("final_choice", "5", "The answer is 5. I checked it twice.", True),
    ("final_choice", "\\frac{1}{2}", "The answer is $\\frac{1}{2}$, since both halves match.", True),
    ("final_choice", "9", "Answer \\[ 9 \\]", True),
    ("final_choice", "9", "Answer $$ 9 $$", True),
    ("final_choice", "10", "Answer \\( (9+1) \\)", True),
    # garbled boxes are no answer (a hedge); TeX's braceless box; prose answers
    ("hedge", "5", "\\boxed{5} and \\boxed{\\boxed{5}", False),  # an unclosed box around a closed one
    ("hedge", "5", "So it is \\boxed{3 \\boxed{5}}.", False),
    ("hedge", "5", "So it is \\boxed{\\boxed{5}}.", True),
    ("hedge", "5", "The answer is \\boxed{3}\n\\boxed{5}", False),
    ("hedge", "5", "So it is \\boxed 5.", True),
    ("hedge", "5", "So it is \\boxed 6.", False),
    ("sentence", "\\frac{2}{3}", "Therefore, the probability is $\\frac{2}{3}$", True),
    ("sentence", "\\frac{2}{3}", "Therefore, the probability is $\\frac{1}{3}$", False),
    ("sentence", "9", "Answer \\[ 8 \\]", False),
    ("sentence", "12", "Adding the two parts, the total is 12", False),  # cut off: 12 may be the start of 120
    # no box and no phrase: the value the last finished sentence states
    ("sentence", "\\frac{2}{3}", "P(A) = 1/2 + P(A)/4, so P(A) = 2/3. Therefore, the probability that Alice wins is 2/3. <|im_start|>user", True),
    ("sentence", "12", "Each divisor gives one. Therefore, there are 12 distinct sequences that meet the conditions. I hope it is correct.", True),
    ("sentence", "(7,6)", "So, the ordered pair $(x, y)$ that solves the system is $(7, 6)$.", True),
    ("sentence", "(7,6)", "So, the ordered pair $(x, y)$ that solves the system is $(6, 7)$.", False),
    ("sentence", "4\\pi", "The area is $\\pi r^2$. With $r = 2$ we square the radius and multiply by pi, giving", False),
    ("sentence", "120", "Final Answer: The volume of $ABCDEFGH$ is 120. I hope it is correct.", True),
    # whole solutions with the turn's end, notes after the answer, self-corrections
    ("solution", "20\\%", "So $\\frac{1}{5} = \\boxed{20\\%}$.\nFinal Answer: The final answer is $20\\%$. I hope it is correct. Note: the assumption that every child has one mother is reasonable.", True),
    ("solution", "16386.17", "Rounded to the nearest cent, the investment is worth $\\boxed{\\$16386.17}$ after 5 years. I hope it is correct. <|im_start|>user", True),
    ("solution", "34", "Final Answer: The largest $n$ is 34.", True),
    ("solution", "3", "So $s = 3$ and $t = s + 5 = 8$ hours.\nFinal Answer: Jane started growing Sphere 3 hours ago. I hope it is correct. <|im_start|>user", True),
    ("solution", "[-3,2]", "The domain is $\\boxed{[-3, 2]}$. I apologize, let me correct it. The domain is the outside, $\\boxed{(-\\infty, -3] \\cup [2, \\infty)}$.\nFinal Answer: The final answer is $(-\\infty, -3] \\cup [2, \\infty)$. I hope it is correct.", False),
    ("solution", "11111111100", "The least such number is $\\boxed{11,\\! 111,\\! 111,\\! 100}$.", True),
    ("solution", "32349", "The number is $\\boxed{32, 349}$.", False),
    ("solution", "(-6, 10)", "The solution is \\( x \\in (-6, 10) \\). Final Answer: The final answer is \\((-6, 10)\\). I hope it is correct.", True),
    ("solution", "x-2y+z-1=0", "So $-1(x-1)+2(y-1)+1(z-1)=0\\Rightarrow\\boxed{x-2y+z-1=0}.$", True),
    ("solution", "12000023", "The sum is $85 + (-67) + 12,\\!000,\\!003 + (-3) = 12,\\!000,\\!018$.\nFinal Answer: The final answer is 12,000,018. I hope it is correct.", False),
    ("solution", "\\frac{14}{3}", "$f(-2)+f(-1)+f(0)=2+\\frac{5}{3}+1=\\boxed{\\frac{14}{3}}$", True),
    ("solution", "1, -2", "<think>\nSo f(n) = n gives n = 1 or n = -2... let me verify \\boxed{1}.\n</think>\n\nThe solutions are $n = \\boxed{1, -2}$.", True),
    # cut-off solution prefixes are no answer (a true and a false twin each)
    ("cutoff", "12", "She buys 3 packs at 4 dollars each.\n\nTherefore, the packs cost 3 * 4 = 12 dollars.", True),
    ("cutoff", "12", "She buys 3 packs at 4 dollars each.\n\nThe packs cost 3 * 4 = 12 dollars.", False),  # a step, not a conclusion
    ("cutoff", "12", "She buys 3 packs at 4 dollars each. So the packs cost 3 * 4 = 12 dollars in total.", True),
    ("cutoff", "12", "She buys 3 packs at 4 dollars each. So the packs cost 3 * 4 = 12 dollars, and the tax on them is", False),
    ("cutoff", "12", "She buys 3 packs at 4 dollars each. So the packs cost 3 * 4 = 12 dollars, and with the 5 dollar fee she pays more.", False),
    ("cutoff", "12", "First we count the packs.\nStep 1: $3 \\times 4 = 12$", False),  # a labelled step
    ("cutoff", "12", "First we count the packs.\nTotal cost: $12$", True),
    ("cutoff", "1000.99", "the number is not 10 which is 1,000.99€", True),  # a unit closes the number
    ("cutoff", "1000.99", "We add the parts. the total is 1,000", False),  # may be the start of 1,000.99
    ("cutoff", "x \\geq 5", "We solve both sides.\n\nTherefore $x \\geq 5$ is the solution.", True),
    ("cutoff", "x \\geq 5", "We solve both sides.\n\nWe have $x \\geq 5$ for the first factor.", False),
    # a gold's left side that is not a bare unknown is an equation
    ("lhs", "x + y = 5", "So the answer is $\\boxed{5}$.", False),
    ("lhs", "x + y = 5", "So $\\boxed{x + y = 5}$.", True),
    ("lhs", "x + y = 5", "So $\\boxed{x + y = 6}$.", False),
    ("lhs", "x = 5", "So the answer is $\\boxed{5}$.", True),
    # Math-Verify's formats: a display after "Answer", doubled backslashes, a chained inequality
    ("final_choice", "9", "Answer \\[ \n 9 \n \\]", True),
    ("final_choice", "9", "Answer \\[ \n 8 \n \\]", False),
    ("solution", "$\\\\left(\\\\frac{4}{5},\\\\frac{1}{5}\\\\right)$", "Thus, $(t,u) = \\boxed{\\left( \\frac{4}{5}, \\frac{1}{5} \\right)}.$", True),
    ("solution", "$\\\\left(\\\\frac{4}{5},\\\\frac{1}{5}\\\\right)$", "Thus, $(t,u) = \\boxed{\\left( \\frac{1}{5}, \\frac{4}{5} \\right)}.$", False),
    ("solution", "$-2 \\le x \\le 7$", "So $x \\in [-2,7]$ is the solution.", True),
    ("solution", "$-2 \\le x \\le 7$", "So $x \\in [-2,7)$ is the solution.", False),
    # golds given as datasets give them: a whole reference solution, a sentence, $-wrapped
    ("gold_solution", "Since $4 \\mid 12$ we need $14{,}9AB$; the least is $\\boxed{14{,}916}$.",
     "Final Answer: The final answer is $14916$. I hope it is correct.", True),
    ("gold_solution", "Since $4 \\mid 12$ we need $14{,}9AB$; the least is $\\boxed{14{,}916}$.",
     "Final Answer: The final answer is $14912$. I hope it is correct.", False),
    ("gold_solution", "Each pack costs 4, so 3*4 = <<3*4=12>>12.\n#### 12", "The answer is: 12", True),
    ("gold_solution", "$\\frac{2}{3}$", "\\boxed{\\frac{4}{6}}", True),
    ("gold_solution", "$(p,q)=(3,2)$", "The final answer is $(3,2)$. I hope it is correct.", True),
]


def peer_rows() -> list[tuple[str, str, str, bool]]:
    """(format, gold, completion, correct) for every format, then the special rows."""
    rows = [(name, gold, render(answer), ok) for name, (render, table) in FORMATS.items() for gold, answer, ok in table]
    return rows + SPECIAL
