// Bundles the CLI into one CommonJS file, dist/skein-main.cjs, loaded by the small entry
// dist/skein.mjs (scripts/launcher.mjs) that `bin.skein` points to. One bundle keeps cold
// start short: Node reads and compiles a single script, and the launcher restores its
// compiled functions from a V8 code cache (see the launcher and adr/0008).
import { build } from "esbuild"
import { createHash } from "node:crypto"
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs"

// node:crypto costs ~5 ms to load and only @effect/platform-node's NodeFileSystem imports it (for
// temporary file names): it is loaded on first use instead of at start-up.
const lazyNodeCrypto = {
  name: "lazy-node-crypto",
  setup(b) {
    b.onResolve({ filter: /^node:crypto$/ }, (args) =>
      args.importer.includes("node_modules") ? { path: "lazy-node-crypto", namespace: "skein-lazy" } : undefined)
    b.onLoad({ filter: /.*/, namespace: "skein-lazy" }, () => ({
      contents: `const c = () => process.getBuiltinModule("node:crypto")\nexport const randomBytes = (...a) => c().randomBytes(...a)\n`,
      loader: "js"
    }))
  }
}

await build({
  entryPoints: ["src/cli/main.ts"],
  plugins: [lazyNodeCrypto],
  outfile: "dist/skein-main.cjs",
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
// The launcher names its code cache after the bundle's contents: V8 itself only checks the
// source's length, so a rebuilt bundle must never meet the cache of an earlier one.
const { version } = JSON.parse(readFileSync("package.json", "utf8"))
const digest = createHash("sha256").update(readFileSync("dist/skein-main.cjs")).digest("hex").slice(0, 16)
writeFileSync("dist/skein.mjs", readFileSync("scripts/launcher.mjs", "utf8").replace("__SKEIN_BUILD__", `skein-${version}-${digest}`))
chmodSync("dist/skein.mjs", 0o755)
rmSync("dist/skein-main.mjs", { force: true }) // the ES-module bundle of earlier builds

// The embedding API as a library: Effect and the platform stay external, so an embedding
// program shares its own copy of Effect with Skein.
await build({
  entryPoints: ["src/index.ts"],
  outfile: "dist/index.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  packages: "external",
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning"
})
