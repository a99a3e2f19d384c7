// Node side of the react reward backend: a long-lived process that checks TSX snippets.
//
// Private channel (JSON Lines on stdin/stdout, spoken only by checker.py):
//   startup  -> {"ready": true, "heap": <bytes>, "checker": "tsgo" | "ts5", "version": str,
//                "note": null | "why not tsgo", "checker_pid": tsgo's pid | null}   after a warm-up
//   request  <- {"batch": [Req, ...]}   answered by  -> {"batch": [Resp, ...], "heap": <bytes>,
//                "checker": ..., "checker_pid": ..., "fallback": "warning" (only when tsgo broke twice)}
//   Req  = {"id": n, "code": "...", "types": true, "max_errors": 5, "spec": false, "component": null | "Name"}
//   Resp = {"id": n, "component": bool, "syntax": null | Diag, "types": null | [Diag...],
//           "n_type_errors": int, "facts": Facts (with spec only)}
//                                                                or {"id": n, "internal": "message"}
//   Facts = what spec.py checks, read from the syntax tree (spec_facts.js describes them)
//   Diag = {"start": utf16, "length": utf16, "code": "syntax" | "TS2322" | "import", "message": str}
// All positions are UTF-16 code units of `code` (the Python side converts them to code points).
//
// Syntax comes from esbuild (syntax.js: its async API, the whole batch at once, so esbuild's own
// process parses while the type stage runs; see checkBatch); types from tsgo when it
// runs (type_checkers.js says which, tsgo_types.js is that stage), else from a TypeScript 5.9
// LanguageService kept warm over a few in-memory files (slots), so lib and @types/react stay parsed;
// its host serves only those files and the type libraries (host_files.js), never the rest of the disk.
// Most of a type check is the new program's checker re-deriving React's JSX types (about 35 ms);
// a batch puts its snippets in separate slots of one program, so they share one checker and that
// cost is paid once per batch. Each slot is its own module and cannot see the others, except
// through `declare` (global or module augmentation) or `///` directives: such code is checked alone.
'use strict';

const path = require('path');
const readline = require('readline');
const ts = require('typescript');
const { confinedFiles } = require('./host_files');
const { hasComponent } = require('./components');
const { specFacts } = require('./spec_facts');
const { syntaxErrors } = require('./syntax');
const { TsgoBroken } = require('./tsgo_types');
const { TypeCheckers } = require('./type_checkers');

const SLOTS = 64; // files one program holds: the most snippets that share a checker (checker.py's MAX_BATCH)
const slotFile = (k) => path.join(__dirname, `__botgrpo_check_${k}__.tsx`); // virtual: never written to disk
const FILES = Array.from({ length: SLOTS }, (_, k) => slotFile(k));
const SLOT_OF = new Map(FILES.map((f, k) => [f, k]));
// Code that could change what another slot sees: global/module augmentation, triple-slash directives.
const SHARES_SCOPE = /\bdeclare\b|\/\/\/\s*</;
const ALLOWED_MODULES = new Set(['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime']);

const OPTIONS = {
  strict: true,
  jsx: ts.JsxEmit.ReactJSX,
  target: ts.ScriptTarget.ES2020,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  moduleDetection: ts.ModuleDetectionKind.Force, // no clashes with lib.dom globals like `name`
  lib: ['lib.es2020.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
  types: [],
  noEmit: true,
  skipLibCheck: true,
  esModuleInterop: true,
};

// ---------------------------------------------------------------------------------------------
// Type stage (TypeScript LanguageService over one in-memory file)

/** A LanguageService over the slot files; `registry` shares parsed lib files between services. */
function createService(registry) {
  const slots = FILES.map(() => ({ code: '', version: 0 }));
  let used = 1; // slots in the program: only those the current batch fills
  const slot = (f) => (SLOT_OF.has(f) && SLOT_OF.get(f) < used ? slots[SLOT_OF.get(f)] : undefined);
  // The host sees the slots and the type libraries, nothing else of the disk (host_files.js).
  const files = confinedFiles({ has: (f) => !!slot(f), text: (f) => slot(f).code });
  const snapshots = new Map(); // library files: read once, kept for the process lifetime
  const host = {
    getCompilationSettings: () => OPTIONS,
    getScriptFileNames: () => FILES.slice(0, used),
    getScriptVersion: (f) => (slot(f) ? String(slot(f).version) : '1'),
    getScriptSnapshot: (f) => {
      if (slot(f)) return ts.ScriptSnapshot.fromString(slot(f).code);
      if (snapshots.has(f)) return snapshots.get(f);
      const text = files.readFile(f);
      if (text === undefined) return undefined; // not cached: hostile paths must not grow the map
      snapshots.set(f, ts.ScriptSnapshot.fromString(text));
      return snapshots.get(f);
    },
    getCurrentDirectory: () => __dirname,
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    ...files,
  };
  const service = ts.createLanguageService(host, registry);
  return {
    /** Parse `codes` (at most SLOTS) as the program's files; the program reuses every other file. */
    load(codes) {
      used = codes.length;
      codes.forEach((code, k) => {
        slots[k].code = code;
        slots[k].version += 1;
      });
      const program = service.getProgram();
      return FILES.slice(0, used).map((f) => program.getSourceFile(f));
    },
    /** Type diagnostics (syntactic + semantic) of slot k as last loaded. */
    diagnostics(k) {
      return service.getSyntacticDiagnostics(FILES[k]).concat(service.getSemanticDiagnostics(FILES[k]));
    },
  };
}

function flatten(messageText) {
  return ts.flattenDiagnosticMessageText(messageText, '\n').split('\n')[0];
}

/** Import specifiers other than react / react-dom, as diagnostics over the string literal. */
function importErrors(source) {
  const out = [];
  for (const st of source.statements) {
    const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) ? st.moduleSpecifier : undefined;
    if (!spec || !ts.isStringLiteral(spec) || ALLOWED_MODULES.has(spec.text)) continue;
    const start = spec.getStart(source);
    out.push({ start, length: spec.end - start, code: 'import', message: `Module '${spec.text}' is not allowed: import only from react or react-dom.` });
  }
  return out;
}

/** Distinct (by start) type diagnostics sorted by position; import errors win ties. */
function typeErrors(source, diags) {
  const byStart = new Map();
  const all = importErrors(source).concat(diags.filter((d) => d.category === ts.DiagnosticCategory.Error && d.start !== undefined)
    .map((d) => ({ start: d.start, length: d.length || 0, code: `TS${d.code}`, message: flatten(d.messageText) })));
  for (const d of all) if (!byStart.has(d.start)) byStart.set(d.start, d);
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

// ---------------------------------------------------------------------------------------------
// One check

// Something that looks like a JSX tag: `<` then a name or `>`. A pre-filter for valid code, and
// the whole component test for code with a syntax error, whose parse cannot be trusted.
const MAYBE_JSX = /<\s*[A-Za-z_$>]/;

const parse = (code) => ts.createSourceFile(slotFile(0), code, ts.ScriptTarget.ES2020, true, ts.ScriptKind.TSX);

/** The component test and (with `spec`, unless the type stage will) the spec facts of `req`, whose
 * first syntax error is `syntax`; `source`: its syntax tree if already parsed. `typed` is true when
 * the type stage should run. */
function firstStage(req, syntax, source = null) {
  const code = req.code;
  const out = { id: req.id, component: MAYBE_JSX.test(code), syntax, types: null, n_type_errors: 0 };
  const typed = syntax === null && out.component && req.types !== false;
  if (typed) return { out, typed };
  if (req.spec) {
    // Absurd nesting overflows the parser's recursion; such code (it has a syntax error, or it
    // never gets here) is answered alone, without making the rest of its batch start over.
    try {
      const tree = source || parse(code);
      if (syntax === null && out.component) out.component = hasComponent(tree);
      out.facts = specFacts(tree, req.component);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      return { out: { id: req.id, internal: `the syntax tree is too deep to read (${err.message})` }, typed };
    }
  } else if (syntax === null && out.component) {
    out.component = hasComponent(source || parse(code));
  }
  return { out, typed };
}

/** Type-check `group` (requests with their first-stage results, maybe their trees) in one program. */
function typeStage(service, group) {
  const sources = service.load(group.map((g) => g.req.code), group.map((g) => g.source));
  group.forEach(({ req, out }, k) => {
    if (req.spec) out.facts = specFacts(sources[k], req.component); // the same tree a parse of its own gives
    out.component = hasComponent(sources[k]);
    if (!out.component) return;
    const errors = typeErrors(sources[k], service.diagnostics(k));
    out.n_type_errors = errors.length;
    out.types = errors.slice(0, Math.max(1, req.max_errors || 5));
  });
}

/** Type-check `staged` in programs: code that shares scope gets a program of its own, the rest share. */
function typeGroups(service, staged) {
  const groups = staged.filter((s) => SHARES_SCOPE.test(s.req.code)).map((s) => [s]);
  const shared = staged.filter((s) => !SHARES_SCOPE.test(s.req.code));
  for (let i = 0; i < shared.length; i += SLOTS) groups.push(shared.slice(i, i + SLOTS));
  for (const group of groups) {
    if (group.length === 1 && SHARES_SCOPE.test(group[0].req.code) && service.alone) service.alone();
    typeStage(service, group);
  }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * The type stage run before the syntax is known, on every request that will likely need it: JSX-like
 * code that TypeScript 5.9's parser reads without error (the rest is held back: esbuild almost always
 * rejects it too; `parseDiagnostics` is the parser's internal field: it steers only the cost, the
 * answers come from esbuild's verdict). Returns {typed: Map index -> staged, sources: Map index -> tree}.
 */
async function earlyTypes(service, reqs) {
  const sources = new Map();
  const typed = new Map();
  reqs.forEach((req, i) => {
    if (req.types !== false && MAYBE_JSX.test(req.code)) sources.set(i, parse(req.code));
  });
  // One event-loop turn: libuv writes whatever of esbuild's requests the pipe did not take at once,
  // so esbuild has them all before tsgo's synchronous calls block this thread.
  await nextTurn();
  for (const [i, source] of sources) {
    if (source.parseDiagnostics && source.parseDiagnostics.length) continue;
    const out = { id: reqs[i].id, component: true, syntax: null, types: null, n_type_errors: 0 };
    typed.set(i, { req: reqs[i], out, source });
  }
  typeGroups(service, [...typed.values()]);
  return { typed, sources };
}

/**
 * Responses to `reqs`, in order. esbuild checks the syntax of the whole batch while the type stage
 * runs early (earlyTypes); then an early type result is kept only where esbuild found no syntax
 * error (elsewhere the answer is the one without types, as if the type stage never ran), and held-back
 * requests that esbuild accepts are type-checked now. So every answer is the one the stages in
 * sequence give. Should the early stage fail other than by tsgo breaking, the batch is answered in
 * sequence on a `fresh()` service, failing (or not) exactly as it would have without the early stage.
 */
async function checkBatch(service, reqs, fresh = () => service) {
  const pending = syntaxErrors(reqs.map((req) => req.code));
  let early = { typed: new Map(), sources: new Map() };
  let inSequence = false;
  try {
    early = await earlyTypes(service, reqs);
  } catch (err) {
    if (err instanceof TsgoBroken) {
      pending.catch(() => {}); // the batch is re-sent; its syntax will be asked again
      throw err;
    }
    inSequence = true;
  }
  const syntax = await pending;
  const target = inSequence ? fresh() : service;
  const late = [];
  const out = reqs.map((req, i) => {
    const done = early.typed.get(i);
    if (done && syntax[i] === null) return done.out;
    const staged = Object.assign({ req, source: early.sources.get(i) }, firstStage(req, syntax[i], early.sources.get(i)));
    if (staged.typed) late.push(staged);
    return staged.out;
  });
  typeGroups(target, late); // fills the `out`s of `late`, which `out` holds
  return out;
}

// Warm-up before `ready`: the first pass parses lib and @types/react; the later ones give V8 the type
// feedback its optimising compiler needs. A cold process spends 2-5x longer per check for its first
// few hundred checks (most of it compiling the checker), so a short training run, or a benchmark,
// would measure the JIT instead of the checks. Rounds: BOTGRPO_REACT_WARMUP_ROUNDS (default 12, ~2 s).
const WARM_UP = [
  'export function A() { return <div />; }',
  "import { useState } from 'react';\nexport function B(p: { n: number }) {\n  const [s, setS] = useState(p.n);\n  return <button onClick={() => setS(s + 1)}>{s}</button>;\n}\n",
  'export default function C() { return <ul>{[1, 2].map((i) => <li key={i}>{i}</li>)}</ul>; }',
  'export function D({ title }: { title: string }) { const n: number = title; return <h1 className="t">{n}</h1>; }',
  "import { useEffect, useState } from 'react';\nexport default function E() {\n  const [items, setItems] = useState<string[]>([]);\n  useEffect(() => { setItems(['a']); }, []);\n  return <form onSubmit={(e) => e.preventDefault()}><input value={items[0]} onChange={(e) => setItems([e.target.value])} /></form>;\n}\n",
  'export function F() { return <div><span>{missingName}</span></div>; }',
  'export function G() { return <div><p>unclosed</div>; }',
];
const WARM_UP_ROUNDS = Math.max(1, Number(process.env.BOTGRPO_REACT_WARMUP_ROUNDS ?? 12) || 1);

/** The answer line to request line `line` (the batch's answers, in order). */
async function answerLine(checkers, line) {
  let reqs;
  try {
    reqs = JSON.parse(line).batch;
  } catch (err) {
    return { internal: `not a JSON batch request: ${err}` };
  }
  let answer;
  try {
    answer = await checkers.check(reqs);
  } catch (err) {
    checkers.fresh();
    // E.g. a stack overflow on absurdly nested JSX. A fresh service (lib files still cached in
    // the registry) drops whatever half-built program the failure left behind; then each request
    // is checked alone, so only the one that fails is answered `internal`.
    const batch = [];
    for (const req of reqs) {
      try {
        batch.push((await checkers.check([req])).batch[0]);
      } catch (inner) {
        checkers.fresh();
        batch.push({ id: req.id, internal: String((inner && inner.stack) || inner).slice(0, 2000) });
      }
    }
    answer = { batch };
  }
  return { ...answer, heap: process.memoryUsage().heapUsed, checker: checkers.name, checker_pid: checkers.pid };
}

async function main() {
  const registry = ts.createDocumentRegistry();
  let checkers;
  try {
    checkers = new TypeCheckers(() => createService(registry), checkBatch, FILES, OPTIONS);
  } catch (err) {
    process.stderr.write(`react checker: ${err.message}\n`);
    process.exit(2);
  }
  for (let round = 0; round < WARM_UP_ROUNDS; round++) await checkers.check(WARM_UP.map((code, id) => ({ id, code, types: true })));
  const write = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  const { name, version, note } = checkers;
  write({ ready: true, heap: process.memoryUsage().heapUsed, checker: name, version, note, checker_pid: checkers.pid });
  // Checks are async (esbuild answers through the event loop): one batch at a time, answers in order.
  let turn = Promise.resolve();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    turn = turn.then(() => answerLine(checkers, line)).then(write, (err) => write({ internal: String(err).slice(0, 2000) }));
  });
  rl.on('close', () => turn.then(() => {
    checkers.service.close?.();
    process.exit(0);
  }));
}

if (require.main === module) main();
else module.exports = { checkBatch, createService, firstStage, typeGroups, FILES, OPTIONS, SHARES_SCOPE };
