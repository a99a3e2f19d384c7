// Which type checker answers: tsgo (tsgo_types.js) when it is installed at the pinned version and
// passes its self-test, else TypeScript 5.9 (checker.js's LanguageService). BOTGRPO_REACT_CHECKER=
// ts5 | tsgo forces one (a forced tsgo that cannot start is an error, not a quiet TypeScript 5.9).
//
// tsgo's API is unstable, so a batch it fails (the tsgo process gone, a protocol error) is re-sent
// to a fresh tsgo process; if that fails too, this process falls back to TypeScript 5.9 for good,
// re-sends the batch there and says so once (stderr, and `fallback` in that reply, which checker.py
// logs). Both checkers give equal diagnostics (tests/integration/test_react_tsgo_equality.py), so a
// fallback changes the cost of a check, never its answer, and no check is lost. A tsgo process whose
// resident memory has grown past a limit is replaced the same way, between two batches.
'use strict';

const fs = require('fs');
const ts = require('typescript');
const { createTsgoService, installedVersion, TsgoBroken, PINNED } = require('./tsgo_types');

// Snippets with the diagnostics (code@start+length) both checkers give them: a tsgo whose answers
// differ (an API that changed meaning under the same calls) is not used.
const SELF_TEST = [
  ['export function D({ title }: { title: string }) { const n: number = title; return <h1 className="t">{n}</h1>; }', 'TS2322@56+1'],
  ['export function F() { return <div><span>{missingName}</span></div>; }', 'TS2304@41+11'],
  ['export function B(p: { n: number }) { return <button onClick={() => p.n.push(1)} disabled="no">{p.n}</button>; }', 'TS2339@72+4 TS2322@81+8'],
  ['export function A() { return <div />; }', ''],
];

// tsgo's resident memory, at most, between batches (BOTGRPO_REACT_TSGO_RSS_MB); Node's heap has its
// own limit (checker.py). A warm tsgo with 64 slots holds about 95 MB (steady over 300 batches of
// 64 distinct components); the limit is for what no test corpus shows, e.g. a leak in a dev build.
const DEFAULT_RSS_MB = 1024;

/** The resident memory of process `pid` in bytes (Linux /proc), or null where it cannot be read. */
function residentBytes(pid) {
  if (!pid) return null;
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Why `service` fails the self-test, or null when it passes. */
function selfTestFailure(service) {
  service.load(SELF_TEST.map(([code]) => code));
  for (const [k, [, want]] of SELF_TEST.entries()) {
    const got = service.diagnostics(k).map((d) => `TS${d.code}@${d.start}+${d.length}`).join(' ');
    if (got !== want) return `self-test snippet ${k} gave "${got}", not "${want}"`;
  }
  return null;
}

/** A started tsgo service, or the reason there is none. `exe`: BOTGRPO_REACT_TSGO_PATH (tests). */
function startTsgo(slotFiles, options) {
  const version = installedVersion();
  if (version === null) return { why: 'tsgo is not installed (npm ci in rewards/react installs it)' };
  if (version !== PINNED) return { why: `tsgo ${version} is installed, but package.json pins ${PINNED}` };
  let service;
  try {
    service = createTsgoService(slotFiles, options, process.env.BOTGRPO_REACT_TSGO_PATH || undefined);
    const failure = selfTestFailure(service);
    if (failure === null) return { service };
    service.close();
    return { why: `tsgo ${version} failed its self-test: ${failure}` };
  } catch (err) {
    if (service) service.close();
    return { why: `tsgo ${version} did not start: ${String((err && err.message) || err).split('\n')[0]}` };
  }
}

/**
 * The type checker of this process. `createTs5()` makes a TypeScript 5.9 service, `checkBatch(service,
 * reqs)` answers a batch on one. Fields: `service`, `name`, `version`, `note` (why not tsgo, if so).
 */
class TypeCheckers {
  constructor(createTs5, checkBatch, slotFiles, options) {
    Object.assign(this, { createTs5, checkBatch, slotFiles, options });
    this.rssLimit = (Number(process.env.BOTGRPO_REACT_TSGO_RSS_MB) || DEFAULT_RSS_MB) * 1024 * 1024;
    this.rssRestarts = 0; // tsgo processes replaced for their memory (for tests)
    const choice = process.env.BOTGRPO_REACT_CHECKER || 'auto';
    if (!['auto', 'ts5', 'tsgo'].includes(choice)) throw new Error(`BOTGRPO_REACT_CHECKER must be ts5 or tsgo, not ${choice}`);
    this.note = choice === 'ts5' ? 'BOTGRPO_REACT_CHECKER=ts5' : null;
    if (choice !== 'ts5') {
      const { service, why } = startTsgo(slotFiles, options);
      if (service) return this.use(service);
      if (choice === 'tsgo') throw new Error(`BOTGRPO_REACT_CHECKER=tsgo, but ${why}`);
      this.note = why;
    }
    this.use(createTs5());
  }

  use(service) {
    this.service = service;
    this.name = service.name || 'ts5';
    this.version = service.version || ts.version;
    return this;
  }

  /** The answers to `reqs`, with `fallback` (the warning) when tsgo broke twice on them. */
  async check(reqs) {
    if (this.name !== 'tsgo') return { batch: await this.answer(reqs) };
    const why = this.overLimit();
    if (why !== null) {
      // Between batches, as a broken API is handled (minus the first try): a fresh tsgo process,
      // or TypeScript 5.9 if none starts. Same answers either way; only the cost changes.
      this.service.close();
      const failed = this.restartTsgo();
      if (failed !== null) return this.fallBack(reqs, `${why}; the restart failed: ${failed}`);
    }
    try {
      return { batch: await this.answer(reqs) };
    } catch (err) {
      if (!(err instanceof TsgoBroken)) throw err;
      this.service.close();
    }
    const first = this.restartTsgo();
    if (first === null) {
      try {
        return { batch: await this.answer(reqs) };
      } catch (err) {
        if (!(err instanceof TsgoBroken)) throw err;
        this.service.close();
        return this.fallBack(reqs, err.message);
      }
    }
    return this.fallBack(reqs, first);
  }

  answer(reqs) {
    return this.checkBatch(this.service, reqs, () => this.fresh());
  }

  /** Why the tsgo process must be restarted before the next batch (its memory), or null. */
  overLimit() {
    const rss = residentBytes(this.service.pid);
    if (rss === null || rss <= this.rssLimit) return null;
    this.rssRestarts += 1;
    return `tsgo's resident memory ${rss >> 20} MB is over ${this.rssLimit >> 20} MB`;
  }

  /** A fresh tsgo process in place of the broken one; null, or why it did not start. */
  restartTsgo() {
    try {
      this.use(createTsgoService(this.slotFiles, this.options, process.env.BOTGRPO_REACT_TSGO_PATH || undefined));
      return null;
    } catch (err) {
      return String((err && err.message) || err).split('\n')[0];
    }
  }

  async fallBack(reqs, why) {
    const fallback = `tsgo failed twice (${why}): TypeScript ${ts.version} checks types from now on`;
    process.stderr.write(`react checker: ${fallback}\n`);
    this.use(this.createTs5());
    this.note = fallback;
    return { batch: await this.answer(reqs), fallback };
  }

  /** A service of the same kind without whatever state a failed batch left in the current one. */
  fresh() {
    if (this.name !== 'tsgo') this.use(this.createTs5());
    return this.service;
  }

  /** The tsgo process id (for CPU accounting and tests), or null. */
  get pid() {
    return this.name === 'tsgo' ? this.service.pid : null;
  }
}

module.exports = { TypeCheckers };
