/**
 * A TypeScript fixture program (the MCP servers of test/fixtures/mcp/, written with Effect)
 * bundled with what it imports into one CommonJS file, once per checkout.
 *
 * Node runs the `.ts` file itself, but then loads Effect module by module: about 0.7 CPU-s per
 * start, and the MCP tests start such a server some fifty times. Bundled, a start costs about
 * 0.15 CPU-s. The bundle goes to `node_modules/.cache/skein-fixtures/`, under a name keyed by a
 * hash of what it is made from: every file of the fixture's folder, the installed versions of
 * esbuild, Effect and its Node platform, and this file. It is written under a temporary name
 * and renamed, so a process never runs half of one; two that bundle at once write the same.
 */
import { buildSync } from "esbuild"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)
const CACHE_DIR = join(import.meta.dirname, "..", "..", "node_modules", ".cache", "skein-fixtures")
const PACKAGES = ["esbuild", "effect", "@effect/platform-node"]

const version = (name: string): string => (require(`${name}/package.json`) as { version: string }).version

/** The path of the bundle of `entry` (an absolute path to a `.ts` program), made if missing. */
export const bundled = (entry: string): string => {
  const hash = createHash("sha256")
  const folder = dirname(entry)
  for (const name of readdirSync(folder).sort()) {
    const file = join(folder, name)
    if (name.endsWith(".ts") || name.endsWith(".mjs") || name.endsWith(".js")) hash.update(`${name}\0`).update(readFileSync(file)).update("\0")
  }
  for (const name of PACKAGES) hash.update(`${name}@${version(name)}\0`)
  hash.update(readFileSync(fileURLToPath(import.meta.url)))
  const target = join(CACHE_DIR, `${basename(entry).replace(/\.ts$/, "")}-${hash.digest("hex").slice(0, 16)}.cjs`)
  if (!existsSync(target)) {
    mkdirSync(CACHE_DIR, { recursive: true })
    const temporary = `${target}.${process.pid}.tmp`
    try {
      buildSync({ entryPoints: [entry], bundle: true, platform: "node", format: "cjs", target: "node22", outfile: temporary, logLevel: "error" })
      renameSync(temporary, target)
    } finally {
      rmSync(temporary, { force: true })
    }
  }
  return target
}
