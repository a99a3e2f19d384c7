// The syntax stage of checker.js: the first error esbuild reports for a TSX snippet (loader tsx,
// automatic JSX), as a Diag in UTF-16 units of the snippet.
//
// `syntaxErrors(codes)` hands every snippet of a batch to esbuild's async API at once: the requests
// go down esbuild's pipe before this returns, so esbuild's own Go process parses them while Node
// does the type stage (even while tsgo's synchronous API blocks Node's event loop); the answers
// are read when the caller awaits. `syntaxErrorSync` is the same answer from `transformSync`, kept
// as the reference the test suite compares against (tests/integration/test_react_syntax_stage.py).
// One esbuild call per snippet, not one for the batch: esbuild stops at a file's first error, so a
// batch in one file would hide every snippet's errors after the first.
'use strict';

const esbuild = require('esbuild');

const OPTIONS = { loader: 'tsx', jsx: 'automatic', logLevel: 'silent' };

/** UTF-16 offsets where each line starts, with esbuild's line breaks (\n, \r\n, \r, U+2028/9). */
function lineStarts(code) {
  const starts = [0];
  for (let i = 0; i < code.length; i++) {
    const c = code.charCodeAt(i);
    if (c === 13 && code.charCodeAt(i + 1) === 10) continue; // \r\n: break after the \n
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) starts.push(i + 1);
  }
  return starts;
}

/** esbuild's location (1-based line, UTF-8 byte column of a lossy line text) -> UTF-16 offset. */
function esbuildOffset(code, starts, loc) {
  const lineStart = starts[Math.min(loc.line, starts.length) - 1];
  // Lone surrogates become U+FFFD in lineText: one UTF-16 unit either way, so lengths agree.
  const prefix = Buffer.from(loc.lineText, 'utf8').subarray(0, loc.column).toString('utf8');
  return Math.min(lineStart + prefix.length, code.length);
}

/** esbuild's failure `err` for `code` as a Diag: its first error; at end of file the opening tag's note (if any). */
function asDiag(code, err) {
  const first = (err.errors || [])[0];
  if (!first || !first.location) return { start: 0, length: 0, code: 'syntax', message: String(err.message || err) };
  const starts = lineStarts(code);
  let loc = first.location;
  const atEof = esbuildOffset(code, starts, loc) >= code.trimEnd().length;
  const note = (first.notes || []).find((n) => n.location);
  if (atEof && note) loc = note.location;
  return { start: esbuildOffset(code, starts, loc), length: loc.length, code: 'syntax', message: first.text };
}

/** A promise of each snippet's first syntax error (or null), in order; the work starts now. */
function syntaxErrors(codes) {
  return Promise.all(codes.map((code) => esbuild.transform(code, OPTIONS).then(() => null, (err) => asDiag(code, err))));
}

/** The first syntax error of `code`, or null, computed synchronously (the reference). */
function syntaxErrorSync(code) {
  try {
    esbuild.transformSync(code, OPTIONS);
    return null;
  } catch (err) {
    return asDiag(code, err);
  }
}

module.exports = { syntaxErrors, syntaxErrorSync };
