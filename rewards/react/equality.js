// The equality harness's Node half: each file's diagnostics from one checker.
//
//   node equality.js CORPUS.json ts5|tsgo  ->  one JSON line {checker, version, diagnostics: [[...], ...]}
// CORPUS.json is a list of TSX sources. The checker gets them as the service gives them: code that
// shares scope (`declare`, `///`) in a project of its own, the rest SLOTS to a program. A diagnostic
// is "category TScode start+length first message line" (UTF-16 positions), every category (the
// service keeps only errors); this folder's path in a message reads <here>, so the answers do not
// depend on where the repository is. tests/integration/test_react_tsgo_equality.py compares tsgo's
// with TypeScript 5.9's (kept in tests/data, checked live on a sample); run it before pinning another tsgo.
//
//   node equality.js CORPUS.json stages  ->  {overlapped: [Resp...], in_sequence: [Resp...]}
// The service's answers to CORPUS (batches of 64, every other request with `spec`) two ways: as
// checker.js gives them (esbuild overlapped with an early type stage) and from the stages in
// sequence (`transformSync` per snippet, then the type stage on what it accepts), on one checker.
// tests/integration/test_react_syntax_stage.py asserts they are equal.
'use strict';

const fs = require('fs');
const ts = require('typescript');
const { checkBatch, createService, firstStage, typeGroups, FILES, OPTIONS, SHARES_SCOPE } = require('./checker');
const { syntaxErrorSync } = require('./syntax');
const { TypeCheckers } = require('./type_checkers');
const { createTsgoService, installedVersion } = require('./tsgo_types');

const firstLine = (m) => ts.flattenDiagnosticMessageText(m, '\n').split('\n')[0];
const show = (d) => `${d.category} TS${d.code} ${d.start}+${d.length} ${firstLine(d.messageText).split(__dirname).join('<here>')}`;

/** Each source's diagnostics (as `show` strings) from `service`, in the service's grouping. */
function diagnosticsOf(service, codes) {
  const out = new Array(codes.length);
  const alone = codes.map((c, i) => i).filter((i) => SHARES_SCOPE.test(codes[i]));
  const shared = codes.map((c, i) => i).filter((i) => !SHARES_SCOPE.test(codes[i]));
  const groups = alone.map((i) => [i]);
  for (let i = 0; i < shared.length; i += FILES.length) groups.push(shared.slice(i, i + FILES.length));
  for (const group of groups) {
    if (group.length === 1 && SHARES_SCOPE.test(codes[group[0]]) && service.alone) service.alone();
    service.load(group.map((i) => codes[i]));
    group.forEach((i, k) => {
      out[i] = service.diagnostics(k).map(show);
    });
  }
  return out;
}

/** checker.js's answers before its syntax stage overlapped the type stage: one stage after the other. */
function inSequence(service, reqs) {
  const staged = reqs.map((req) => Object.assign({ req }, firstStage(req, syntaxErrorSync(req.code))));
  typeGroups(service, staged.filter((s) => s.typed));
  return staged.map((s) => s.out);
}

async function stages(codes) {
  const checkers = new TypeCheckers(() => createService(ts.createDocumentRegistry()), checkBatch, FILES, OPTIONS);
  const reqs = codes.map((code, id) => ({ id, code, types: true, max_errors: 5, spec: id % 2 === 0, component: null }));
  const overlapped = [];
  const sequence = [];
  for (let i = 0; i < reqs.length; i += 64) {
    const batch = reqs.slice(i, i + 64);
    overlapped.push(...(await checkers.check(batch)).batch);
    sequence.push(...inSequence(checkers.service, batch));
  }
  if (checkers.service.close) checkers.service.close();
  process.stdout.write(JSON.stringify({ checker: checkers.name, overlapped, in_sequence: sequence }) + '\n');
}

function main() {
  const [corpus, checker] = process.argv.slice(2);
  const codes = JSON.parse(fs.readFileSync(corpus, 'utf8'));
  if (checker === 'stages') return stages(codes);
  let service;
  let version = ts.version;
  if (checker === 'tsgo') {
    service = createTsgoService(FILES, OPTIONS);
    version = installedVersion();
  } else if (checker === 'ts5') {
    service = createService(ts.createDocumentRegistry());
  } else {
    throw new Error('usage: node equality.js CORPUS.json ts5|tsgo|stages');
  }
  const diagnostics = diagnosticsOf(service, codes);
  if (service.close) service.close();
  process.stdout.write(JSON.stringify({ checker, version, diagnostics }) + '\n');
}

main();
