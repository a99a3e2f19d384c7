// The type stage on TypeScript 7's native compiler (tsgo, npm @typescript/native-preview), kept warm
// behind its unstable synchronous JS API: one tsgo process holds two projects, the shared one of
// SLOTS slot files (each its own module) and one of a single file for code checked alone (`declare`,
// `///`). Each batch rewrites the slots it uses (the rest are emptied), takes one new snapshot with
// those file changes, and reads each slot's syntactic + semantic diagnostics: tsgo re-checks only
// what changed, with lib and @types/react parsed once for the process lifetime.
//
// Same compiler options and the same file policy as the TypeScript 5.9 stage (host_files.js, through
// tsgo's virtual file-system callbacks, which also hand it TypeScript 5.9's lib files). Positions are
// UTF-16 units, as TypeScript 5.9's. The syntax trees the rest of checker.js reads (facts, the
// component test, import errors) still come from TypeScript 5.9's parser. Any failure of the API
// (the tsgo process gone, a protocol error) is thrown as TsgoBroken; checker.js decides what next.
'use strict';

const path = require('path');
const ts = require('typescript');
const { tsgoFileSystem } = require('./host_files');

const PACKAGE = '@typescript/native-preview';
// The version package.json pins: another one installed is a mismatch, not a silent upgrade.
const PINNED = (() => {
  const pkg = require('./package.json');
  return { ...pkg.dependencies, ...pkg.optionalDependencies }[PACKAGE];
})();

class TsgoBroken extends Error {}

/** The installed tsgo's version, or null when it is not installed. */
function installedVersion() {
  try {
    return require(`${PACKAGE}/package.json`).version;
  } catch {
    return null;
  }
}

const CONFIG = path.join(__dirname, '__botgrpo_tsconfig__.json'); // virtual, as the slot files
const ALONE_CONFIG = path.join(__dirname, '__botgrpo_alone_tsconfig__.json');
const ALONE_FILE = path.join(__dirname, '__botgrpo_alone__.tsx');

/** checker.js's compiler options as tsconfig.json text. */
function tsconfig(options, files) {
  const compilerOptions = {
    strict: options.strict, jsx: 'react-jsx', target: 'es2020', module: 'esnext', moduleResolution: 'bundler',
    moduleDetection: 'force', lib: options.lib.map((l) => l.replace(/^lib\.|\.d\.ts$/g, '')), types: options.types,
    noEmit: options.noEmit, skipLibCheck: options.skipLibCheck, esModuleInterop: options.esModuleInterop,
  };
  return JSON.stringify({ compilerOptions, files });
}

/** A diagnostic of the API in the shape checker.js reads from TypeScript 5.9's. */
const asTs5 = (d) => ({ start: d.pos, length: d.end - d.pos, code: d.code, category: d.category, messageText: d.text });

/**
 * A type stage with checker.js's service interface (load, diagnostics), plus `alone` (the next load
 * goes to the single-file project), `pid` and `close`. `exe`: the tsgo binary (default: the bundled one).
 */
function createTsgoService(slotFiles, options, exe) {
  const { API } = require(`${PACKAGE}/unstable/sync`);
  const texts = new Map(slotFiles.map((f) => [f, '']).concat([[ALONE_FILE, '']]));
  texts.set(CONFIG, tsconfig(options, slotFiles));
  texts.set(ALONE_CONFIG, tsconfig(options, [ALONE_FILE]));
  const fs = tsgoFileSystem({ has: (f) => texts.has(f), text: (f) => texts.get(f) });
  let api;
  let snapshot = null;
  let diags = [];
  let alone = false;
  const call = (what) => {
    try {
      return what();
    } catch (err) {
      throw new TsgoBroken(`tsgo ${PINNED}: ${String((err && err.message) || err).split('\n')[0]}`);
    }
  };
  call(() => {
    api = new API({ cwd: __dirname, fs, ...(exe ? { tsserverPath: exe } : {}) });
  });
  return {
    name: 'tsgo',
    version: installedVersion(),
    get pid() {
      return api && api.client && api.client.channel && api.client.channel.child ? api.client.channel.child.pid : null;
    },
    /** The next load is code that must not share a program with anything: the single-file project. */
    alone() {
      alone = true;
    },
    /** `trees`: TypeScript 5.9's syntax trees of `codes` where the caller has them (parsed the same way). */
    load(codes, trees = []) {
      const files = alone ? [ALONE_FILE] : slotFiles;
      const config = alone ? ALONE_CONFIG : CONFIG;
      alone = false;
      // TypeScript 5.9's trees first: code too deeply nested for its parser (a RangeError, answered
      // `internal` as with TypeScript 5.9) never reaches tsgo.
      const sources = codes.map((code, k) => trees[k] || ts.createSourceFile(files[k], code, ts.ScriptTarget.ES2020, true, ts.ScriptKind.TSX));
      const changed = [];
      files.forEach((f, k) => {
        const code = k < codes.length ? codes[k] : '';
        if (texts.get(f) !== code) changed.push(f);
        texts.set(f, code);
      });
      call(() => {
        const next = snapshot === null
          ? api.updateSnapshot({ openProjects: [CONFIG, ALONE_CONFIG] })
          : api.updateSnapshot({ fileChanges: { changed } });
        if (snapshot !== null) snapshot.dispose();
        snapshot = next;
        const program = snapshot.getProject(config).program;
        // Two calls for the whole program (one per file costs a round trip each); in file order.
        const byFile = new Map(files.map((f) => [f, []]));
        for (const d of program.getSyntacticDiagnostics().concat(program.getSemanticDiagnostics())) {
          if (byFile.has(d.fileName)) byFile.get(d.fileName).push(asTs5(d));
        }
        diags = files.slice(0, codes.length).map((f) => byFile.get(f));
      });
      return sources;
    },
    diagnostics(k) {
      return diags[k];
    },
    close() {
      try {
        api.close();
      } catch {
        // already gone
      }
    },
  };
}

module.exports = { createTsgoService, installedVersion, TsgoBroken, PINNED };
