// Runs in every render document before anything else (after the React runtime). Every render gets
// a document of its own (renderer.py navigates to a fresh one after each), so nothing here undoes a
// previous render: a document mounts one component, once. This script records the component's
// errors, clears the little state a browsing context keeps across documents, and mounts.
(() => {
  "use strict";
  let errors = [];
  const note = (kind, value) => {
    if (errors.length < 20) errors.push(kind + ": " + String(value && value.stack ? value.message : value).slice(0, 500));
  };
  // window.name and sessionStorage belong to the tab, not the document: start each render without them.
  window.name = "";
  try { sessionStorage.clear(); } catch (e) { /* storage unavailable: nothing to clear */ }
  // A component that navigates away would leave an error page to screenshot (routing aborts the request).
  if (window.navigation) window.navigation.addEventListener("navigate", (e) => { if (e.cancelable) e.preventDefault(); });
  const consoleError = console.error.bind(console);
  console.error = (...args) => { note("console.error", args.map(String).join(" ")); consoleError(...args); };
  window.addEventListener("error", (e) => note("uncaught", e.error || e.message));
  window.addEventListener("unhandledrejection", (e) => note("unhandled rejection", e.reason));

  function pickComponent(exports) {
    if (exports.default) return exports.default;
    if (exports.App) return exports.App;
    return Object.values(exports).find((v) => typeof v === "function");
  }

  function summary(container, maxBoxes) {
    const boxes = [];
    const all = container.querySelectorAll("*");
    for (let i = 0; i < all.length && boxes.length < maxBoxes; i++) {
      const r = all[i].getBoundingClientRect();
      if (r.width >= 1 && r.height >= 1) boxes.push([r.left, r.top, r.width, r.height]);
    }
    return { text: (document.body.innerText || "").slice(0, 20000), boxes, nodes: all.length, errors };
  }

  // Mount the component (CommonJS text from esbuild) into #root and let its effects run; the
  // screenshot that follows waits for the next frame itself.
  let used = false;
  const mount = async (js, maxBoxes) => {
    if (used) throw new Error("this document already rendered a component; the renderer must load a fresh one");
    used = true;
    const container = document.getElementById("root");
    const module = { exports: {} };
    new Function("module", "exports", "require", js)(module, module.exports, window.__botgrpoRequire);
    const Component = pickComponent(module.exports);
    if (typeof Component !== "function" && !(Component && Component.$$typeof)) {
      throw new Error("the code exports no component: `export default function App() {...}`");
    }
    const React = window.__botgrpoRequire("react");
    const client = window.__botgrpoRequire("react-dom/client");
    const root = client.createRoot(container);
    window.__botgrpoRequire("react-dom").flushSync(() => root.render(React.createElement(Component)));
    await new Promise((resolve) => setTimeout(resolve, 0)); // passive effects and the updates they queue
    return summary(container, maxBoxes);
  };
  Object.defineProperty(window, "__botgrpoMount", { value: mount, writable: false, configurable: false });
})();
