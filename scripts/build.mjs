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
import { warmCodeCache } from "./warm-code-cache.mjs"

// Built-in modules that start-up does not need are loaded on first use instead: each import of
// them becomes a module of functions that fetch the real one when called.
// - node:crypto (~5 ms): only @effect/platform-node's NodeFileSystem imports it, for
//   temporary file names (Skein's own session ids use it once a session starts);
// - node:child_process (~1.2 ms): bash and MCP stdio servers spawn only within a session;
// - node:readline: only `skein run` asks questions at a terminal.
// Only functions (and classes) are forwarded; importing anything else fails the build.
const lazyBuiltins = {
  name: "lazy-builtins",
  setup(b) {
    const lazy = {
      "node:crypto": (importer) => importer.includes("node_modules"),
      "node:child_process": () => true,
      "node:readline": () => true
    }
    b.onResolve({ filter: /^node:(crypto|child_process|readline)$/ }, (args) =>
      lazy[args.path](args.importer) ? { path: args.path, namespace: "skein-lazy" } : undefined)
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

// The tool worker (src/tools/worker/worker.ts) is bundled first, on its own, and its code goes
// into the bundles that start it as a string: a worker needs code it can load, and the CLI is
// one file run through `vm.Script`. It is small (a regex loop, a glob matcher, exact-match
// edits: about 10 KB), so the string costs start-up almost nothing; the worker itself starts
// on first use, never before.
const worker = await build({
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
})
const workerCode = worker.outputFiles[0].text
const embeddedWorker = {
  name: "embedded-worker",
  setup(b) {
    const script = resolve("src/tools/worker/workerScript.ts")
    b.onResolve({ filter: /workerScript\.ts$/ }, (args) =>
      resolve(args.resolveDir, args.path) === script ? { path: script, namespace: "skein-worker" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-worker" }, () => ({
      contents: `export const workerScript = () => ({ code: ${JSON.stringify(workerCode)}, eval: true })`,
      loader: "js"
    }))
  }
}

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

const cliBundle = (outfile, plugins) => build({
  entryPoints: ["src/cli/main.ts"],
  plugins: [lazyBuiltins, embeddedWorker, embeddedPage, ...plugins],
  outfile,
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
}
const rpcInMain = Object.keys(main.metafile.inputs).filter((input) => /effect\/dist\/unstable\/(rpc|socket)\//.test(input))
if (rpcInMain.length > 0) {
  process.stderr.write(`build: the main bundle reaches the RPC modules (${rpcInMain.slice(0, 3).join(", ")})\n`)
  process.exit(1)
}
// What start-up evaluates: the modules reached from the entry through static imports only. The
// OTLP exporter (src/telemetry/Otlp.ts, effect/observability) is for a process that exports
// telemetry; any other must not pay for it, so it is reached through a dynamic import alone.
const staticallyReached = (metafile) => {
  const seen = new Set(["src/cli/main.ts"])
  const queue = ["src/cli/main.ts"]
  while (queue.length > 0) {
    for (const imported of metafile.inputs[queue.pop()]?.imports ?? []) {
      if (imported.kind === "dynamic-import" || imported.external === true || seen.has(imported.path)) continue
      seen.add(imported.path)
      queue.push(imported.path)
    }
  }
  return seen
}
for (const [name, cli] of [["skein-main.cjs", main], ["skein-remote.cjs", remote]]) {
  const eager = [...staticallyReached(cli.metafile)].filter((input) => input === "src/telemetry/Otlp.ts" || /effect\/dist\/observability\//.test(input))
  if (eager.length > 0) {
    process.stderr.write(`build: ${name} loads the telemetry exporter at start-up (${eager.slice(0, 3).join(", ")}): import it dynamically\n`)
    process.exit(1)
  }
}
// The launcher names its code caches after the bundles' contents: V8 itself only checks the
// source's length, so a rebuilt bundle must never meet the cache of an earlier one.
const { version } = JSON.parse(readFileSync("package.json", "utf8"))
const digest = createHash("sha256").update(readFileSync("dist/skein-main.cjs")).update(readFileSync("dist/skein-remote.cjs")).digest("hex").slice(0, 16)
writeFileSync("dist/skein.mjs", readFileSync("scripts/launcher.mjs", "utf8").replace("__SKEIN_BUILD__", `skein-${version}-${digest}`))
chmodSync("dist/skein.mjs", 0o755)
rmSync("dist/skein-main.mjs", { force: true }) // the ES-module bundle of earlier builds

// Warms the code cache for this build and this Node (scripts/warm-code-cache.mjs): the first
// start a user makes is a warm one.
if (process.env.SKEIN_NO_CODE_CACHE !== "1" && process.env.SKEIN_NO_CODE_CACHE !== "true") {
  const problem = await warmCodeCache()
  if (problem !== undefined) process.stderr.write(`build: the code cache was not warmed (${problem})\n`)
}

// The embedding API as a library. Effect and its platform packages stay external: an embedding
// program shares its own copy of Effect with Skein (they are peer dependencies). Everything else
// (`ignore`) is bundled, so the package needs nothing else at run time. Modules loaded on demand
// (the PostgreSQL store, with @effect/sql-pg) go into chunks of their own under dist/lib/: a
// program that never asks for them never imports their packages.
rmSync("dist/lib", { recursive: true, force: true })
await build({
  entryPoints: { index: "src/index.ts" },
  plugins: [embeddedWorker],
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
