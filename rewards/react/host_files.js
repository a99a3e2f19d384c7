// The only files the TypeScript checker may see: the virtual slot files and the pinned type
// libraries. Everything else "does not exist".
//
// Completions are hostile. `typeof import('/abs/file.json')`, `/// <reference path>`, relative
// `../../` imports and `import x from '/etc/passwd'` all reach the compiler host's file calls; a
// host backed by the real disk would read server files into types (and so into diagnostics) and
// answer whether a file exists. This host answers from an allow-list instead, so a file outside it
// that exists and one that does not give the same diagnostics.
//
// Allowed, by normalised absolute path (no symlink is followed here: `realpath` is the identity):
//   - the virtual files (`virtual.has(f)`; their text comes from `virtual.text(f)`);
//   - `.d.ts` and `package.json` files under the TypeScript lib folder and under the pinned
//     declaration packages in this folder's node_modules (@types/*, csstype: what @types/react
//     imports). Directories: those roots and what is under them, node_modules itself (module
//     resolution walks it) and the folder of the virtual files.
// A second checker (tsgo) must mirror exactly this policy: keep it in this one function.
'use strict';

const path = require('path');
const ts = require('typescript');

const NODE_MODULES = path.join(__dirname, 'node_modules');
const LIBRARY_ROOTS = [
  path.dirname(ts.getDefaultLibFilePath({})), // lib.es2020.d.ts, lib.dom.d.ts, ...
  path.join(NODE_MODULES, '@types'),
  path.join(NODE_MODULES, 'csstype'),
];
const LIBRARY_FILE = /(\.d\.ts|\/package\.json)$/;

/** Absolute, with `.` and `..` resolved; null for anything else (relative, NUL bytes). */
function normal(p) {
  if (typeof p !== 'string' || !path.isAbsolute(p) || p.includes('\0')) return null;
  return path.resolve(p);
}

const under = (p, root) => p === root || p.startsWith(root + path.sep);

/**
 * The file-system half of a compiler host (or LanguageServiceHost) that serves only `virtual`
 * and the type libraries. `virtual` = { has(path) -> bool, text(path) -> string }.
 * Library answers are cached: the set is bounded by what is installed, never by requests.
 */
function confinedFiles(virtual) {
  const isLibraryFile = (f) => LIBRARY_FILE.test(f) && LIBRARY_ROOTS.some((root) => under(f, root));
  const isLibraryDir = (d) => d === NODE_MODULES || d === __dirname || LIBRARY_ROOTS.some((root) => under(d, root));
  const exists = new Map();
  const texts = new Map();
  const dirs = new Map();
  const remember = (cache, key, compute) => {
    if (!cache.has(key)) cache.set(key, compute(key));
    return cache.get(key);
  };
  const fileExists = (p) => {
    const f = normal(p);
    if (f === null) return false;
    if (virtual.has(f)) return true;
    return isLibraryFile(f) && remember(exists, f, ts.sys.fileExists);
  };
  const readFile = (p) => {
    const f = normal(p);
    if (f === null) return undefined;
    if (virtual.has(f)) return virtual.text(f);
    return isLibraryFile(f) ? remember(texts, f, ts.sys.readFile) : undefined;
  };
  const directoryExists = (p) => {
    const d = normal(p);
    return d !== null && isLibraryDir(d) && remember(dirs, d, ts.sys.directoryExists);
  };
  const getDirectories = (p) => {
    const d = normal(p);
    return d !== null && isLibraryDir(d) && d !== __dirname ? ts.sys.getDirectories(d) : [];
  };
  const realpath = (p) => p; // never resolves a link: the allow-list is on the path as written
  return { fileExists, readFile, directoryExists, getDirectories, realpath };
}

module.exports = { confinedFiles, LIBRARY_ROOTS };
