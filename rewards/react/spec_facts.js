// What the spec checks (spec.py) need to know about a snippet, read from its TypeScript syntax tree
// rather than from its text, so a name, prop, element or text inside a comment or a string literal
// never counts. Nothing here type-checks: the parser's tree is enough, and it exists (recovered)
// for code with syntax errors too, so the spec is checked whatever the syntax stage says.
//
// A construct the parser had to repair (`const [a b] = useState()`, `<h2>{x}</h3>`, a prop member)
// is marked `broken`: it shows where the construct is, but it does not count as declaring it. A
// `.map(` call counts even with a broken callback (a dropped `</li>` is a syntax error, already
// penalised as one; the list is still rendered with map).
//
// Facts (all positions UTF-16 offsets of the code, half-open):
//   components: [{name, name_start, name_end, start, exported_as: [str], ret}]
//       top-level components in source order; `start` the statement's, `ret` the first `return`
//       of its own body (not of nested functions) or null; exported_as the names it is exported
//       under (its own name for `export function N`, `export default N`, `export { N }`; `M` for
//       `export { N as M }`), `default` excluded.
//   target:   index in components of the one the spec describes: the first named `wanted` (the
//             requirements' component), else the first exported, else the first; null if none
//   props:    [Prop] of the target only (a hostile file's many components cannot multiply them)
//   Prop = {name, type, start, end, broken}: a member of the component's props type (the first
//       parameter's annotation, `FC<P>`'s argument or `Component<P>`'s), local interfaces, type
//       aliases and intersections followed; `type` normalised (`T[]` for Array<T>, readonly T[]
//       and ReadonlyArray<T>; otherwise the type's text, spaces collapsed).
//   states:   [{value, setter, start, end, broken}]   `const [value, setter] = useState(...)` (or React.useState),
//                                              from `const` to the end of `useState`
//   elements: [{tag, start, end, inner, attrs, broken}]  intrinsic (lowercase) JSX elements in source
//       order; inner = [start, end] of the source between the tags (null when self-closing);
//       attrs = [[name, start, end]] of each attribute's initializer (null, null without one).
//       Positions, not texts: an outer element's text holds all of its children's.
//   maps:     [name]   the names with a `name.map(...)` call (on a plain identifier), once each
//   first_return: the first `return` statement of the file, or null
'use strict';

const ts = require('typescript');
const { componentVariable, declaresComponent, unwrap } = require('./components');

const COMPONENT_PROPS_WRAPPERS = new Set(['Readonly', 'PropsWithChildren', 'React.PropsWithChildren']);
const FC_TYPES = new Set(['FC', 'React.FC', 'FunctionComponent', 'React.FunctionComponent', 'VFC', 'React.VFC']);

const isFunction = (n) => ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n)
  || ts.isMethodDeclaration(n) || ts.isConstructorDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n);

const collapse = (text) => text.replace(/\s+/g, ' ').trim();

/** Local interfaces and type aliases by name (the first of each name). */
function localTypes(source) {
  const out = new Map();
  for (const st of source.statements) {
    if ((ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) && !out.has(st.name.text)) out.set(st.name.text, st);
  }
  return out;
}

/** `T[]` for the array spellings, else the type's text with spaces collapsed. */
function normalType(node, source) {
  let t = node;
  while (ts.isParenthesizedTypeNode(t)) t = t.type;
  if (ts.isTypeOperatorNode(t) && t.operator === ts.SyntaxKind.ReadonlyKeyword && ts.isArrayTypeNode(t.type)) t = t.type;
  if (ts.isArrayTypeNode(t)) return `${normalType(t.elementType, source)}[]`;
  if (ts.isTypeReferenceNode(t) && t.typeArguments && t.typeArguments.length === 1
      && ['Array', 'ReadonlyArray'].includes(t.typeName.getText(source))) {
    return `${normalType(t.typeArguments[0], source)}[]`;
  }
  return collapse(t.getText(source));
}

/** Property members of a props type node, following local names; `seen` holds the names already
 * followed, so cycles end and each declaration is read once (no blow-up on `A & A & ...` chains). */
function propMembers(node, source, types, seen = new Set()) {
  if (!node) return [];
  if (ts.isParenthesizedTypeNode(node)) return propMembers(node.type, source, types, seen);
  if (ts.isIntersectionTypeNode(node)) return node.types.flatMap((t) => propMembers(t, source, types, seen));
  if (ts.isTypeLiteralNode(node)) return memberFacts(node.members, source);
  if (!ts.isTypeReferenceNode(node)) return [];
  const name = node.typeName.getText(source);
  if (COMPONENT_PROPS_WRAPPERS.has(name) && node.typeArguments) return propMembers(node.typeArguments[0], source, types, seen);
  return namedMembers(name, source, types, seen);
}

/** Members of the local interface (with what it extends) or type alias called `name`. */
function namedMembers(name, source, types, seen) {
  const decl = types.get(name);
  if (!decl || seen.has(name)) return [];
  seen.add(name);
  if (ts.isTypeAliasDeclaration(decl)) return propMembers(decl.type, source, types, seen);
  const bases = (decl.heritageClauses || []).flatMap((h) => h.types).filter((t) => ts.isIdentifier(t.expression));
  return memberFacts(decl.members, source).concat(bases.flatMap((t) => namedMembers(t.expression.text, source, types, seen)));
}

function memberFacts(members, source) {
  return members.filter((m) => ts.isPropertySignature(m) && m.type && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)))
    .map((m) => ({ name: m.name.text, type: normalType(m.type, source), start: m.getStart(source), end: m.type.end,
      broken: ts.containsParseError(m) }));
}

/** The type node that holds a component's props, if it names one. */
function propsTypeNode(st, source) {
  if (ts.isClassDeclaration(st)) {
    const base = (st.heritageClauses || []).flatMap((h) => h.types)[0];
    return base && base.typeArguments ? base.typeArguments[0] : undefined;
  }
  let fn = st;
  if (ts.isVariableStatement(st)) {
    const d = componentVariable(st);
    if (d && d.type && ts.isTypeReferenceNode(d.type) && FC_TYPES.has(d.type.typeName.getText(source)) && d.type.typeArguments) {
      return d.type.typeArguments[0];
    }
    fn = d && unwrap(d.initializer);
  } else if (ts.isExportAssignment(st)) {
    fn = unwrap(st.expression);
  }
  const param = fn && fn.parameters && fn.parameters[0];
  return param ? param.type : undefined;
}

/** The component's name node (function, class or the component variable), if it has one. */
function nameNode(st) {
  return ts.isVariableStatement(st) ? componentVariable(st).name : st.name;
}

/** The first return statement under `node`, not descending into nested functions. */
function firstReturn(node, nested) {
  let found = null;
  const visit = (n) => {
    if (found) return;
    if (ts.isReturnStatement(n)) {
      found = n;
      return;
    }
    if (!nested && isFunction(n)) return;
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(node, visit);
  return found;
}

const hasModifier = (st, kind) => !!(ts.canHaveModifiers(st) && (ts.getModifiers(st) || []).some((m) => m.kind === kind));

/** Top-level components (statement and facts) with the names each is exported under. */
function componentFacts(source) {
  const comps = [];
  const byName = new Map();
  for (const st of source.statements) {
    if (!declaresComponent(st, source)) continue;
    const name = nameNode(st);
    const named = name && ts.isIdentifier(name);
    const ret = firstReturn(st, false);
    const comp = {
      name: named ? name.text : null,
      name_start: named ? name.getStart(source) : null,
      name_end: named ? name.end : null,
      start: st.getStart(source),
      exported_as: named && hasModifier(st, ts.SyntaxKind.ExportKeyword) ? [name.text] : [],
      ret: ret ? ret.getStart(source) : null,
    };
    comps.push({ st, comp });
    if (named && !byName.has(name.text)) byName.set(name.text, comp);
  }
  for (const st of source.statements) { // export default N; export { N, N as M }
    if (ts.isExportAssignment(st) && ts.isIdentifier(st.expression) && byName.has(st.expression.text)) {
      byName.get(st.expression.text).exported_as.push(st.expression.text);
    }
    if (ts.isExportDeclaration(st) && !st.moduleSpecifier && st.exportClause && ts.isNamedExports(st.exportClause)) {
      for (const el of st.exportClause.elements) {
        const local = (el.propertyName || el.name).text;
        if (byName.has(local)) byName.get(local).exported_as.push(el.name.text === 'default' ? local : el.name.text);
      }
    }
  }
  return comps;
}

/** Index of the component the spec describes (see the top of this file), or -1. */
function targetIndex(comps, wanted) {
  const named = comps.findIndex(({ comp }) => wanted != null && comp.name === wanted);
  if (named >= 0) return named;
  const exported = comps.findIndex(({ comp }) => comp.exported_as.length > 0);
  return exported >= 0 ? exported : comps.length > 0 ? 0 : -1;
}

function isUseState(call, source) {
  if (!call || !ts.isCallExpression(call)) return false;
  const callee = call.expression.getText(source).replace(/\s+/g, '');
  return callee === 'useState' || callee === 'React.useState';
}

/** Everything of the tree the spec needs (see the top of this file); `wanted`: the component name
 * the requirements ask for (or null). */
function specFacts(source, wanted) {
  const states = [];
  const elements = [];
  const maps = [];
  const visit = (n) => {
    if (ts.isVariableDeclaration(n) && ts.isArrayBindingPattern(n.name) && isUseState(n.initializer, source)
        && (ts.getCombinedNodeFlags(n) & ts.NodeFlags.Const)) {
      const names = n.name.elements;
      const plain = names.length === 2 && names.every((b) => ts.isBindingElement(b) && ts.isIdentifier(b.name) && !b.dotDotDotToken && !b.initializer);
      if (plain) {
        states.push({ value: names[0].name.text, setter: names[1].name.text, start: n.parent.getStart(source),
          end: n.initializer.expression.end, broken: ts.containsParseError(n) });
      }
    }
    if (ts.isJsxElement(n) || ts.isJsxSelfClosingElement(n)) {
      const open = ts.isJsxElement(n) ? n.openingElement : n;
      const tag = open.tagName.getText(source);
      if (/^[a-z][a-z0-9]*$/.test(tag)) {
        const attrs = open.attributes.properties.filter(ts.isJsxAttribute)
          .map((a) => [a.name.getText(source), a.initializer ? a.initializer.getStart(source) : null, a.initializer ? a.initializer.end : null]);
        const inner = ts.isJsxElement(n) ? [n.openingElement.end, n.closingElement.getStart(source)] : null;
        elements.push({ tag, start: n.getStart(source), end: n.end, inner, attrs, broken: ts.containsParseError(n) });
      }
    }
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'map'
        && ts.isIdentifier(n.expression.expression)) {
      maps.push(n.expression.expression.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  const ret = firstReturn(source, true);
  const comps = componentFacts(source);
  const target = targetIndex(comps, wanted);
  const props = target < 0 ? [] : propMembers(propsTypeNode(comps[target].st, source), source, localTypes(source));
  return {
    components: comps.map(({ comp }) => comp), target: target < 0 ? null : target, props,
    states, elements, maps: [...new Set(maps)], first_return: ret ? ret.getStart(source) : null,
  };
}

module.exports = { specFacts };
