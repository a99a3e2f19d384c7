// Runs in every document of a render page before anything else (after the React runtime).
// Fences off what a component could use to escape or stall, records its errors, tracks what it
// leaves behind (timers, listeners, globals, DOM) so the next render starts clean, and mounts it.
(() => {
  "use strict";
  let errors = [];
  const note = (kind, value) => {
    if (errors.length < 20) errors.push(kind + ": " + String(value && value.stack ? value.message : value).slice(0, 500));
  };
  // Dialogs would block the page's only thread; popups, printing and navigation have no place here.
  window.alert = () => undefined;
  window.confirm = () => false;
  window.prompt = () => null;
  window.print = () => undefined;
  window.open = () => null;
  if (window.navigation) window.navigation.addEventListener("navigate", (e) => { if (e.cancelable) e.preventDefault(); });
  const consoleError = console.error.bind(console);
  console.error = (...args) => { note("console.error", args.map(String).join(" ")); consoleError(...args); };
  window.addEventListener("error", (e) => note("uncaught", e.error || e.message));
  window.addEventListener("unhandledrejection", (e) => note("unhandled rejection", e.reason));

  // Everything a render schedules or attaches is recorded so `reset` can undo it.
  const cleanups = [];
  const track = (owner, name, undo) => {
    const original = owner[name].bind(owner);
    owner[name] = (...args) => { const handle = original(...args); cleanups.push(() => undo(handle, args)); return handle; };
  };
  track(window, "setTimeout", (id) => clearTimeout(id));
  track(window, "setInterval", (id) => clearInterval(id));
  track(window, "requestAnimationFrame", (id) => cancelAnimationFrame(id));
  for (const target of [window, document]) {
    const add = target.addEventListener.bind(target);
    const remove = target.removeEventListener.bind(target);
    target.addEventListener = (...args) => { cleanups.push(() => remove(...args)); return add(...args); };
  }
  let baselineGlobals = null; // taken at the first reset, before any component ran here
  let root = null;

  function reset() {
    if (!baselineGlobals) baselineGlobals = new Set(Object.getOwnPropertyNames(window));
    if (root) { try { root.unmount(); } catch (e) { /* a broken tree: the DOM is replaced below anyway */ } }
    root = null;
    while (cleanups.length) { try { cleanups.pop()(); } catch (e) { /* already gone */ } }
    for (const name of Object.getOwnPropertyNames(window)) {
      if (!baselineGlobals.has(name)) { try { delete window[name]; } catch (e) { /* non-configurable */ } }
    }
    for (const el of [document.documentElement, document.body]) {
      for (const attr of [...el.attributes]) if (attr.name !== "lang") el.removeAttribute(attr.name);
    }
    for (const el of [...document.head.children]) if (!el.hasAttribute("data-botgrpo")) el.remove();
    const fresh = document.createElement("div");
    fresh.id = "root";
    document.body.replaceChildren(fresh);
    document.title = "";
    window.scrollTo(0, 0);
    errors = [];
    return fresh;
  }

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

  // Mount the component (CommonJS text from esbuild) into a fresh #root and let its effects run;
  // the screenshot that follows waits for the next frame itself.
  const mount = async (js, maxBoxes) => {
    const container = reset();
    const module = { exports: {} };
    new Function("module", "exports", "require", js)(module, module.exports, window.__botgrpoRequire);
    const Component = pickComponent(module.exports);
    if (typeof Component !== "function" && !(Component && Component.$$typeof)) {
      throw new Error("the code exports no component: `export default function App() {...}`");
    }
    const React = window.__botgrpoRequire("react");
    const client = window.__botgrpoRequire("react-dom/client");
    root = client.createRoot(container);
    window.__botgrpoRequire("react-dom").flushSync(() => root.render(React.createElement(Component)));
    await new Promise((resolve) => setTimeout(resolve, 0)); // passive effects and the updates they queue
    return summary(container, maxBoxes);
  };
  Object.defineProperty(window, "__botgrpoMount", { value: mount, writable: false, configurable: false });
})();
