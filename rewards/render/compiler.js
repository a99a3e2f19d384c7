// Long-lived esbuild helper for the render service. One JSON object per line on stdin:
//   {"id": n, "op": "runtime"}            -> {"id": n, "js": "<React runtime IIFE>"}
//   {"id": n, "op": "compile", "code": s} -> {"id": n, "js": "<component as CommonJS>"} or {"id": n, "error": s}
// argv[2] is the node_modules folder that holds esbuild, react and react-dom.
"use strict";
const path = require("path");
const readline = require("readline");

const modules = process.argv[2];
const esbuild = require(path.join(modules, "esbuild"));

// The runtime exposes the few modules a component may import through one global require.
const RUNTIME_ENTRY = `
const table = {
  "react": require("react"),
  "react/jsx-runtime": require("react/jsx-runtime"),
  "react-dom": require("react-dom"),
  "react-dom/client": require("react-dom/client"),
};
// Frozen and read-only: a component must not be able to tamper with what the next render uses.
for (const key of Object.keys(table)) Object.freeze(table[key]);
Object.defineProperty(globalThis, "__botgrpoRequire", {
  value: function (name) {
    if (Object.prototype.hasOwnProperty.call(table, name)) return table[name];
    throw new Error("module '" + name + "' is not available here (only react and react-dom)");
  },
  writable: false,
  configurable: false,
});
`;

function runtime() {
  const out = esbuild.buildSync({
    stdin: { contents: RUNTIME_ENTRY, resolveDir: modules, loader: "js" },
    bundle: true,
    write: false,
    minify: true,
    format: "iife",
    nodePaths: [modules],
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  return out.outputFiles[0].text;
}

function compile(code) {
  // Transform only (no bundling): imports become require() calls answered by the runtime.
  const out = esbuild.transformSync(code, {
    loader: "tsx",
    format: "cjs",
    jsx: "automatic",
    target: "es2020",
    logLevel: "silent",
  });
  return out.code;
}

function firstError(err) {
  const e = err && err.errors && err.errors[0];
  if (!e) return String(err && err.message ? err.message : err);
  const where = e.location ? `${e.location.line}:${e.location.column + 1}: ` : "";
  return where + e.text;
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    return;
  }
  const reply = { id: msg.id };
  try {
    reply.js = msg.op === "runtime" ? runtime() : compile(String(msg.code));
  } catch (err) {
    reply.error = firstError(err);
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
// On end of input Node exits by itself once stdout has drained.
