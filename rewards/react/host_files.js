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
//   - for the tsgo checker (tsgo_types.js), the lib folder of @typescript/native-preview too, whose
//     files are read as TypeScript 5.9's lib files of the same name: both checkers see the same
//     lib.dom.d.ts (tsgo's own copy is newer and changes messages), and a name TS 5.9 lacks is absent.
// Both checkers use this one function: tsgo through `tsgoFileSystem`, which only changes the shape
// of the answers (null for "absent", so tsgo never falls back to the real disk).
'use strict';

const fs = require('fs');
const path = require('path');
const ts = require('typescript');

const NODE_MODULES = path.join(__dirname, 'node_modules');
const TS5_LIB = path.dirname(ts.getDefaultLibFilePath({})); // lib.es2020.d.ts, lib.dom.d.ts, ...
// Where tsgo looks for its libs (beside its binary), or null when it is not installed.
const TSGO_LIB = (() => {
  try {
    const pkg = require.resolve(`@typescript/native-preview-${process.platform}-${process.arch}/package.json`, { paths: [__dirname] });
    return path.join(path.dirname(pkg), 'lib');
  } catch {
    return null;
  }
})();
const LIBRARY_ROOTS = [TS5_LIB, path.join(NODE_MODULES, '@types'), path.join(NODE_MODULES, 'csstype')]
  .concat(TSGO_LIB ? [TSGO_LIB] : []);
/** The file the disk is read at for library file `f`: tsgo's libs are TypeScript 5.9's. */
const onDisk = (f) => (TSGO_LIB && path.dirname(f) === TSGO_LIB ? path.join(TS5_LIB, path.basename(f)) : f);
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
    return isLibraryFile(f) && remember(exists, f, (g) => ts.sys.fileExists(onDisk(g)));
  };
  const readFile = (p) => {
    const f = normal(p);
    if (f === null) return undefined;
    if (virtual.has(f)) return virtual.text(f);
    return isLibraryFile(f) ? remember(texts, f, (g) => ts.sys.readFile(onDisk(g))) : undefined;
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
  return { fileExists, readFile, directoryExists, getDirectories, realpath, isLibraryFile };
}

/**
 * The same policy as tsgo's virtual file-system callbacks (@typescript/native-preview's `fs`
 * option): there `undefined` means "read the real disk", so every "absent" must be null/false.
 */
function tsgoFileSystem(virtual) {
  const files = confinedFiles(virtual);
  return {
    readFile: (p) => files.readFile(p) ?? null,
    fileExists: (p) => files.fileExists(p),
    directoryExists: (p) => files.directoryExists(p),
    realpath: files.realpath,
    // A folder's listing (tsgo reads folders this way): its sub-folders as getDirectories gives them
    // and the library files in it; nothing for a folder outside the allow-list.
    getAccessibleEntries: (p) => {
      const d = normal(p);
      if (d === null || !files.directoryExists(d)) return { files: [], directories: [] };
      const names = fs.readdirSync(onDisk(d), { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
      return { files: names.filter((n) => files.isLibraryFile(path.join(d, n))), directories: files.getDirectories(d) };
    },
  };
}

module.exports = { confinedFiles, tsgoFileSystem, LIBRARY_ROOTS, TSGO_LIB };
