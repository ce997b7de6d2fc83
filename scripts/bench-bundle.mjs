// What the in-process benches (scripts/bench-*.mjs) share: Skein's modules from src/, bundled
// with esbuild into node_modules/.cache/skein-bench (where `effect` and the platform resolve
// from, as they do for dist/index.mjs), then imported.
import { build } from "esbuild"
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

export const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/**
 * Bundles `exports` (lines such as `export * as Effect from "effect/Effect"`, paths relative to
 * the repository) as `<name>-entry.mjs`, every package left external, and imports it.
 */
export const bundle = async (name, exports) => {
  const cache = join(root, "node_modules", ".cache", "skein-bench")
  mkdirSync(cache, { recursive: true })
  const outfile = join(cache, `${name}-entry.mjs`)
  await build({
    stdin: { contents: exports.join("\n"), resolveDir: root, loader: "ts", sourcefile: `bench-${name}-entry.ts` },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    packages: "external",
    outfile,
    logLevel: "warning"
  })
  return import(pathToFileURL(outfile).href)
}
