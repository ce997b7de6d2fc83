// Bundles the CLI into one ESM file, dist/skein-main.mjs, loaded by the small entry
// dist/skein.mjs that `bin.skein` points to. One bundle keeps cold start short: Node
// resolves and compiles a single module (and caches its compilation).
import { build } from "esbuild"
import { chmodSync, writeFileSync } from "node:fs"

const banner = [
  "import { createRequire as __skeinCreateRequire } from 'node:module';",
  "const require = __skeinCreateRequire(import.meta.url);"
].join("\n")

// dist/skein.mjs is a tiny entry that turns on Node's on-disk compile cache and then loads
// the bundle: the cache only covers modules loaded after it is enabled, so enabling it
// inside the bundle itself would never help.
const entry = `#!/usr/bin/env node
import module from "node:module"
try { module.enableCompileCache?.() } catch {}
await import("./skein-main.mjs")
`

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
  outfile: "dist/skein-main.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  minify: true,
  treeShaking: true,
  sourcemap: false,
  legalComments: "none",
  banner: { js: banner },
  logLevel: "warning"
})
writeFileSync("dist/skein.mjs", entry)
chmodSync("dist/skein.mjs", 0o755)

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
