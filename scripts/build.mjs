// Bundles the CLI into CommonJS files loaded by the small entry dist/skein.mjs
// (scripts/launcher.mjs) that `bin.skein` points to. One bundle per run keeps cold start short:
// Node reads and compiles a single script, and the launcher restores its compiled functions
// from a V8 code cache (see the launcher and adr/0008). There are two:
// - dist/skein-main.cjs: every command but the two below, without the session protocol's RPC
//   client, server and transports (a third of the code, which start-up would otherwise read);
// - dist/skein-remote.cjs: all of it, for `skein serve` and `skein acp --connect`.
import { build } from "esbuild"
import { createHash } from "node:crypto"
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { ACP_START, broken, NEVER_AT_START, NOT_BEFORE_SESSION, staticallyReached, unexpectedSchemas } from "./startup-modules.mjs"
import { warmCodeCache } from "./warm-code-cache.mjs"

// Built-in modules that start-up does not need are loaded on first use instead, whoever imports
// them: each import becomes a module of functions that fetch the real one when called.
// - node:crypto (~5 ms, and its modules' memory): temporary file names (@effect/platform-node's
//   NodeFileSystem), hashes of skills and of the compaction prompt, the containment of commands'
//   processes, the tokens of `serve`: none of it before a session does something;
// - node:child_process (~1.2 ms): bash and MCP stdio servers spawn only within a session;
// - node:readline: only `skein run` asks questions at a terminal.
// node:v8 and node:perf_hooks are never imported: src/cli/Heap.ts takes them with
// process.getBuiltinModule once a session is open (a static import would not be lazy).
// Only functions (and classes) are forwarded; importing anything else fails the build. A call
// at a module's top level would still load the real module at start-up: test/e2e/startup.test.ts
// checks which built-ins are loaded when `session/new` answers.
const LAZY_BUILTINS = ["node:crypto", "node:child_process", "node:readline"]
const lazyBuiltins = {
  name: "lazy-builtins",
  setup(b) {
    b.onResolve({ filter: /^node:(crypto|child_process|readline)$/ }, (args) =>
      LAZY_BUILTINS.includes(args.path) ? { path: args.path, namespace: "skein-lazy" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-lazy" }, (args) => {
      const real = process.getBuiltinModule(args.path)
      const names = Object.keys(real).filter((name) => typeof real[name] === "function" && /^[A-Za-z_$][\w$]*$/.test(name))
      const forward = (name) =>
        `export function ${name}(...a) { const f = m().${name}; return new.target ? Reflect.construct(f, a, new.target) : f.apply(this, a) }`
      return {
        contents: [`const m = () => process.getBuiltinModule(${JSON.stringify(args.path)})`, ...names.map(forward)].join("\n"),
        loader: "js"
      }
    })
  }
}

// Each ES module's `import * as fs from "node:fs"` becomes, in a CommonJS bundle, a copy of the
// built-in's exports with a getter per export (esbuild's `__toESM`), one per importing file: 31
// copies of node:fs, 33 of node:path and 8 of node:os, over 600 KB that a process keeps, and the
// time to make them at start-up. Here every import statement of these goes through one module per
// built-in, which makes the copy once (`export *`: still a getter per export, so nothing is read
// before it is used, `fs.promises` included); its default export is the module itself. Only
// these: a copy of node:util's exports loads every module behind its lazy exports (workers,
// diff, colours), which the named imports of util elsewhere never do.
const SHARED_BUILTINS = ["node:fs", "node:path", "node:os"]
const sharedBuiltins = {
  name: "shared-builtins",
  setup(b) {
    b.onResolve({ filter: /^(node:)?(fs|path|os)$/ }, (args) => {
      const path = args.path.startsWith("node:") ? args.path : `node:${args.path}`
      if (args.kind !== "import-statement" || args.namespace === "skein-builtin" || !SHARED_BUILTINS.includes(path)) return undefined
      // Without side effects: a file that imports a built-in and uses none of it does not load it.
      return { path, namespace: "skein-builtin", sideEffects: false }
    })
    b.onLoad({ filter: /.*/, namespace: "skein-builtin" }, (args) => ({
      contents: `const m = require(${JSON.stringify(args.path)})\nexport default m\nexport * from ${JSON.stringify(args.path)}`,
      loader: "js"
    }))
  }
}

// Effect finds out at load how V8 prints two kinds of stack frames, by formatting a stack trace
// (effect/Utils: `internalCall`; effect/internal/effect: `continuationMarksStack`). The first
// stack trace a process formats makes V8 find every line end of the script it is in: for the
// 1 MB bundle that and the formatting are about 6% of what `initialize` costs. The CLI bundles
// run on Node, so on V8, whose answers are known (checked by test/e2e/startup.test.ts): each probe
// is replaced by its answer, with the probes' own rule for a stack trace limit of 0 kept. Effect
// is pinned; should a new version change these lines, the build fails here to be looked at.
const V8_STACK_PROBES = [
  {
    file: /\/effect\/dist\/Utils\.js$/,
    probe: `  // Only the callback and internal call frames are needed for detection.
  setStackTraceLimit(2);
  const error = standard[InternalTypeId](() => new Error());
  setStackTraceLimit(limit);
  return error.stack?.includes(InternalTypeId) === true ? standard[InternalTypeId] : forced[InternalTypeId];`,
    answer: "  return standard[InternalTypeId];"
  },
  {
    file: /\/effect\/dist\/internal\/effect\.js$/,
    probe: `  // Only the probe frame is needed to detect the continuation property name.
  setStackTraceLimit(1);
  const error = /*#__PURE__*/probe[marker]();
  setStackTraceLimit(limit);
  return error.stack?.includes("[as " + marker + "]") === true;`,
    answer: "  return true;"
  }
]
const v8StackProbes = {
  name: "v8-stack-probes",
  setup(b) {
    b.onLoad({ filter: /\/effect\/dist\/(Utils|internal\/effect)\.js$/ }, (args) => {
      const known = V8_STACK_PROBES.find((p) => p.file.test(args.path))
      if (known === undefined) return undefined
      const text = readFileSync(args.path, "utf8")
      if (!text.includes(known.probe)) {
        return { errors: [{ text: `${args.path} no longer has the stack probe scripts/build.mjs replaces (V8_STACK_PROBES): look at it again` }] }
      }
      return { contents: text.replace(known.probe, known.answer), loader: "js" }
    })
  }
}

// @effect/platform-node's HTTP client (the providers' client, src/providers/Dialects.ts) requires
// node:http and node:https when it loads. node:https brings TLS and crypto (about 5 MB resident),
// which a provider at an http:// URL (a local model server) never uses: here each is required at
// its first use instead. Should the file change, the build fails here to be looked at.
const LAZY_NODE_HTTP = {
  probe: `export const http = /*#__PURE__*/require("node:http");
export const https = /*#__PURE__*/require("node:https");`,
  answer: `const lazy = (name) => { let m; return new Proxy({}, { get: (_, key) => (m ??= require(name))[key] }) };
export const http = /*#__PURE__*/lazy("node:http");
export const https = /*#__PURE__*/lazy("node:https");`
}
const lazyNodeHttp = {
  name: "lazy-node-http",
  setup(b) {
    b.onLoad({ filter: /\/@effect\/platform-node\/dist\/internal\/http\.js$/ }, (args) => {
      const text = readFileSync(args.path, "utf8")
      if (!text.includes(LAZY_NODE_HTTP.probe)) {
        return { errors: [{ text: `${args.path} no longer requires node:http and node:https as scripts/build.mjs expects (LAZY_NODE_HTTP): look at it again` }] }
      }
      return { contents: text.replace(LAZY_NODE_HTTP.probe, LAZY_NODE_HTTP.answer), loader: "js" }
    })
  }
}

// The tool worker (src/tools/worker/worker.ts) is bundled first, on its own, and its code goes
// into the bundles that start it as a string: a worker needs code it can load, and the CLI is
// one file run through `vm.Script`. The string costs start-up almost nothing; the worker itself
// starts on first use, never before. Its HTML converter for `web_fetch` (src/tools/worker/html.ts:
// turndown and its DOM, about 250 KB) is not in the CLI's copy: the CLI bundles' text stays in
// memory as long as a process runs, so it is dist/skein-markdown.cjs, which the worker requires
// from the path it is given (`workerData.markdown`) with its first page. The library's copy
// (dist/index.mjs) keeps it inside.
const workerOptions = {
  entryPoints: ["src/tools/worker/worker.ts"],
  write: false,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node22",
  minify: true,
  treeShaking: true,
  legalComments: "none",
  logLevel: "warning"
}
const markdownFromFile = {
  name: "markdown-from-file",
  setup(b) {
    const html = resolve("src/tools/worker/html.ts")
    b.onResolve({ filter: /html\.ts$/ }, (args) =>
      resolve(args.resolveDir, args.path) === html ? { path: html, namespace: "skein-markdown-file" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-markdown-file" }, () => ({
      contents: `const file = require("node:worker_threads").workerData.markdown
module.exports = process.getBuiltinModule("node:module").createRequire(file)(file)`,
      loader: "js"
    }))
  }
}
const [fullWorker, leanWorker] = await Promise.all([build(workerOptions), build({ ...workerOptions, plugins: [markdownFromFile] })])
await build({ ...workerOptions, entryPoints: ["src/tools/worker/html.ts"], write: true, outfile: "dist/skein-markdown.cjs" })
const embeddedWorker = (worker, markdown) => ({
  name: "embedded-worker",
  setup(b) {
    const script = resolve("src/tools/worker/workerScript.ts")
    b.onResolve({ filter: /workerScript\.ts$/ }, (args) =>
      resolve(args.resolveDir, args.path) === script ? { path: script, namespace: "skein-worker" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-worker" }, () => ({
      contents: `${markdown ? `import { join } from "node:path"\n` : ""}const code = ${JSON.stringify(worker.outputFiles[0].text)}
export const workerScript = () => ({ code, eval: true${markdown ? `, markdown: join(__dirname, "skein-markdown.cjs")` : ""} })`,
      loader: "js"
    }))
  }
})

// The web monitor's page (src/monitor/page/): bundled for browsers into dist/monitor/ (it
// ships in the package), and carried by the CLI bundle as strings (src/monitor/Assets.ts is
// replaced), so `skein serve --web` finds it without looking on disk.
const page = await build({
  entryPoints: ["src/monitor/page/main.ts"],
  write: false,
  bundle: true,
  platform: "browser",
  format: "iife",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "warning"
})
const pageScript = page.outputFiles[0].text
const pageStyle = readFileSync("src/monitor/page/style.css", "utf8")
mkdirSync("dist/monitor", { recursive: true })
writeFileSync("dist/monitor/app.js", pageScript)
writeFileSync("dist/monitor/app.css", pageStyle)
const embeddedPage = {
  name: "embedded-page",
  setup(b) {
    const assets = resolve("src/monitor/Assets.ts")
    b.onResolve({ filter: /Assets\.ts$/ }, (args) =>
      resolve(args.resolveDir, args.path) === assets ? { path: assets, namespace: "skein-page" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-page" }, () => ({
      contents: `const page = { js: ${JSON.stringify(pageScript)}, css: ${JSON.stringify(pageStyle)} }\nexport const assets = () => page`,
      loader: "js"
    }))
  }
}

// In the main bundle, the modules of src/remote/ that carry the RPC group, and the cluster's
// (src/cluster/), and the web monitor's (src/monitor/), are replaced by one that fails when
// loaded: only `serve`, `monitor` and `acp --connect` load them, and the launcher runs those
// from the remote bundle. `Address.ts` (parsing a URL) stays.
const withoutRpc = {
  name: "without-rpc",
  setup(b) {
    b.onResolve({ filter: /\/(remote|cluster|monitor)\/[A-Za-z]+\.ts$/ }, (args) => {
      const path = resolve(args.resolveDir, args.path)
      return path.endsWith("/remote/Address.ts") ? undefined : { path, namespace: "skein-no-rpc" }
    })
    b.onLoad({ filter: /.*/, namespace: "skein-no-rpc" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is in dist/skein-remote.cjs, which the launcher runs for serve and acp --connect`)})`,
      loader: "js"
    }))
  }
}

// Each CLI bundle is one function expression, the launcher's module wrapper in strict mode (as
// the ES modules it was bundled from): the launcher compiles the file's text as it is, so V8 holds
// one copy of the ~1 MB source, not the file's and a wrapped one.
const cliBundle = (outfile, plugins) => build({
  entryPoints: ["src/cli/main.ts"],
  plugins: [lazyBuiltins, sharedBuiltins, v8StackProbes, lazyNodeHttp, embeddedWorker(leanWorker, true), embeddedPage, ...plugins],
  outfile,
  banner: { js: `(function (exports, require, module, __filename, __dirname) {"use strict";` },
  footer: { js: "\n})" },
  metafile: true,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node22",
  minify: true,
  treeShaking: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning"
})
const [main, remote] = await Promise.all([cliBundle("dist/skein-main.cjs", [withoutRpc]), cliBundle("dist/skein-remote.cjs", [])])
for (const [name, cli] of [["skein-main.cjs", main], ["skein-remote.cjs", remote]]) {
  // The launcher runs a bundle as a script: `import.meta` would silently be empty there.
  const importMeta = cli.warnings.filter((w) => w.text.includes("import.meta"))
  if (importMeta.length > 0) {
    process.stderr.write(`build: import.meta in ${name} (${importMeta.map((w) => w.location?.file).join(", ")})\n`)
    process.exit(1)
  }
  // Something other than a function taken from a lazily loaded built-in would be undefined.
  const undefinedImports = cli.warnings.filter((w) => w.id === "import-is-undefined")
  if (undefinedImports.length > 0) {
    process.stderr.write(`build: imports that would be undefined in ${name}: ${undefinedImports.map((w) => `${w.location?.file}: ${w.text}`).join("; ")}\n`)
    process.exit(1)
  }
  // One byte per character: V8 keeps a script's source as one-byte string only when all of it is
  // ASCII, and one other character doubles the memory the ~1 MB source takes for as long as the
  // process runs. esbuild escapes strings and templates, not regular expression literals (an
  // ellipsis in one, say): what is left is written as \uXXXX here, which means the same code unit
  // in a regular expression (with or without the u flag, a pair of them one code point) and in an
  // identifier. One written after a backslash (an identity escape) could not be: the build stops.
  const text = readFileSync(`dist/${name}`, "utf8")
  let escaped = ""
  let from = 0
  for (const wide of text.matchAll(/[^\x00-\x7f]/g)) {
    const at = wide.index
    if (/(^|[^\\])(\\\\)*\\$/.test(text.slice(Math.max(0, at - 16), at))) {
      process.stderr.write(`build: ${name} has a non-ASCII character after a backslash: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}; write it as an escape (\\u…) in the source\n`)
      process.exit(1)
    }
    escaped += text.slice(from, at) + `\\u${wide[0].charCodeAt(0).toString(16).padStart(4, "0")}`
    from = at + 1
  }
  if (from > 0) writeFileSync(`dist/${name}`, escaped + text.slice(from))
}
const rpcInMain = Object.keys(main.metafile.inputs).filter((input) => /effect\/dist\/unstable\/(rpc|socket)\//.test(input))
if (rpcInMain.length > 0) {
  process.stderr.write(`build: the main bundle reaches the RPC modules (${rpcInMain.slice(0, 3).join(", ")})\n`)
  process.exit(1)
}
// What start-up evaluates (scripts/startup-modules.mjs): the modules reached from the entry
// through static imports only. The OTLP exporter (src/telemetry/Otlp.ts, effect/observability) is
// for a process that exports telemetry; any other must not pay for it, so it is reached through a
// dynamic import alone. And what `skein acp` evaluates until `session/new` is answered holds no
// schema that only a turn or an external agent uses.
for (const [name, cli, rules] of [
  ["skein-main.cjs", main, [[["src/cli/main.ts"], NEVER_AT_START], [ACP_START, NOT_BEFORE_SESSION]]],
  ["skein-remote.cjs", remote, [[["src/cli/main.ts"], NEVER_AT_START]]]
]) {
  for (const [roots, rule] of rules) {
    for (const { why, inputs } of broken(staticallyReached(cli.metafile, roots), rule)) {
      process.stderr.write(`build: ${name} evaluates ${why} at start-up (${inputs.join(", ")}): import it dynamically where it is used\n`)
      process.exit(1)
    }
  }
}
// The launcher names its code caches after the bundles' contents: V8 itself only checks the
// source's length, so a rebuilt bundle must never meet the cache of an earlier one.
const { version } = JSON.parse(readFileSync("package.json", "utf8"))
const digest = createHash("sha256").update(readFileSync("dist/skein-main.cjs")).update(readFileSync("dist/skein-remote.cjs")).digest("hex").slice(0, 16)
// The command (`bin.skein`) is dist/skein.cjs; dist/skein.mjs is the same launcher as an ES
// module, for an editor's settings that run that file.
const launcher = readFileSync("scripts/launcher.mjs", "utf8").replace("__SKEIN_BUILD__", `skein-${version}-${digest}`)
for (const [file, here] of [["dist/skein.cjs", "__dirname"], ["dist/skein.mjs", `process.getBuiltinModule("node:url").fileURLToPath(new URL(".", import.meta.url))`]]) {
  writeFileSync(file, launcher.replace("__SKEIN_HERE__", here))
  chmodSync(file, 0o755)
}
rmSync("dist/skein-main.mjs", { force: true }) // the ES-module bundle of earlier builds

// Warms the code cache for this build and this Node (scripts/warm-code-cache.mjs): the first
// start a user makes is a warm one.
if (process.env.SKEIN_NO_CODE_CACHE !== "1" && process.env.SKEIN_NO_CODE_CACHE !== "true") {
  let atSession
  const problem = await warmCodeCache({ startSchemas: (built) => (atSession = built) })
  if (problem !== undefined) process.stderr.write(`build: the code cache was not warmed (${problem})\n`)
  // Start-up builds only the Schemas of the requests it decodes (scripts/startup-modules.mjs).
  const unexpected = atSession === undefined ? [] : unexpectedSchemas(atSession)
  if (unexpected.length > 0) {
    process.stderr.write(`build: skein acp built ${unexpected.slice(0, 5).join(", ")} before answering session/new: build them where they are first used (Lazy.schema, Lazy.fn)\n`)
    process.exit(1)
  }
}

// The embedding API as a library. Effect and its platform packages stay external: an embedding
// program shares its own copy of Effect with Skein (they are peer dependencies). Everything else
// (`ignore`) is bundled, so the package needs nothing else at run time. Modules loaded on demand
// (the PostgreSQL store, with @effect/sql-pg) go into chunks of their own under dist/lib/: a
// program that never asks for them never imports their packages.
rmSync("dist/lib", { recursive: true, force: true })
await build({
  entryPoints: { index: "src/index.ts" },
  plugins: [embeddedWorker(fullWorker, false)],
  outdir: "dist",
  entryNames: "[name]",
  chunkNames: "lib/[name]-[hash]",
  outExtension: { ".js": ".mjs" },
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  external: ["effect", "effect/*", "@effect/*"],
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning"
})
