// What counts as a component when the syntax is valid (see README.md): JSX somewhere in the
// file, and a top-level function component (capitalised function / arrow / function expression,
// possibly wrapped in a call such as memo(...)), an `export default` function, or a class
// extending (React.)Component. Shared by the component test (checker.js) and the spec facts
// (spec_facts.js), so both agree on which declarations are components.
'use strict';

const ts = require('typescript');

const COMPONENT_BASES = new Set(['Component', 'PureComponent', 'React.Component', 'React.PureComponent']);

/** The function inside parentheses, `as`/`satisfies` and wrapping calls such as memo(...). */
function unwrap(expr) {
  let e = expr;
  while (e && (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isCallExpression(e))) {
    e = ts.isCallExpression(e) ? e.arguments[0] : e.expression;
  }
  return e;
}

const isFunctionLike = (e) => !!e && (ts.isArrowFunction(e) || ts.isFunctionExpression(e));
const isCapitalised = (name) => !!name && /^[A-Z]/.test(name.text);
const isDefaultExport = (st) => (ts.getCombinedModifierFlags(st) & ts.ModifierFlags.Default) !== 0;

/** The declaration of a variable statement that is a component (`const Card = () => ...`), if any. */
function componentVariable(st) {
  return st.declarationList.declarations.find((d) => ts.isIdentifier(d.name) && isCapitalised(d.name) && isFunctionLike(unwrap(d.initializer)));
}

function declaresComponent(st, source) {
  if (ts.isFunctionDeclaration(st)) return isCapitalised(st.name) || isDefaultExport(st);
  if (ts.isExportAssignment(st)) return isFunctionLike(unwrap(st.expression));
  if (ts.isVariableStatement(st)) return componentVariable(st) !== undefined;
  if (ts.isClassDeclaration(st)) {
    return (st.heritageClauses || []).some((h) => h.types.some((t) => COMPONENT_BASES.has(t.expression.getText(source))));
  }
  return false;
}

function hasJsx(node) {
  if (ts.isJsxElement(node) || ts.isJsxSelfClosingElement(node) || ts.isJsxFragment(node)) return true;
  return !!ts.forEachChild(node, (child) => (hasJsx(child) ? true : undefined));
}

function hasComponent(source) {
  return hasJsx(source) && source.statements.some((st) => declaresComponent(st, source));
}

module.exports = { componentVariable, declaresComponent, hasComponent, unwrap };
