// Bundles the CLI into one ESM file, dist/skein.mjs, that `bin.skein` points to.
// One file keeps cold start short: Node resolves and compiles a single module.
import { build } from "esbuild"
import { chmodSync } from "node:fs"

const banner = [
  "#!/usr/bin/env node",
  // Node's on-disk compile cache makes every start after the first faster.
  "import __skeinModule from 'node:module'; try { __skeinModule.enableCompileCache?.() } catch {}",
  "import { createRequire as __skeinCreateRequire } from 'node:module';",
  "const require = __skeinCreateRequire(import.meta.url);"
].join("\n")

await build({
  entryPoints: ["src/cli/main.ts"],
  outfile: "dist/skein.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  minifySyntax: true,
  treeShaking: true,
  sourcemap: false,
  legalComments: "none",
  banner: { js: banner },
  logLevel: "warning"
})
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
