/**
 * What a test hands to a sandboxed command or to another user, in a place they see as the
 * test does, wherever the checkout is.
 *
 * A sandboxed command gets a /tmp (and /run) of its own, and another user cannot enter a
 * directory `mktemp -d` made (0700): in a checkout under /tmp (`git clone . "$(mktemp -d)/p"`,
 * the way to try a fresh clone) the checkout's Node, its fixtures and its `dist/` are not there
 * for them. So every such thing comes from here, under /var/tmp, in directories every user may
 * enter:
 *
 *   const base = yield* Visible.dir("skein-sandbox-")   // removed with the scope (or makeDir)
 *   `${Visible.node()} ${Visible.file(FIXTURE)} …`       // in this process's own directory
 *   spawnSync(Visible.node(), [Visible.skein(), "run", …], { uid })
 *
 * The process's own directory holds a hard link to the Node binary (a copy across file
 * systems), copies of fixtures, bundles of TypeScript fixtures, and `dist/`; it is removed when
 * the process exits, or by the next test process when it could not be.
 */
import * as Effect from "effect/Effect"
import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs"
import { basename, join } from "node:path"
import { bundled } from "./FixtureBundle.ts"

/** A place every user and every sandboxed command sees (a sandbox replaces only /tmp and /run). */
export const BASE = "/var/tmp"

const REPO_ROOT = join(import.meta.dirname, "..", "..")

/** A fresh directory under /var/tmp that every user may enter (its real path); the caller removes it. */
export const makeDir = (prefix = "skein-test-"): string => {
  const made = realpathSync(mkdtempSync(join(BASE, prefix)))
  chmodSync(made, 0o755)
  return made
}

/** `makeDir`, removed with the scope. */
export const dir = (prefix = "skein-test-") =>
  Effect.acquireRelease(
    Effect.sync(() => makeDir(prefix)),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
  )

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

let own: string | undefined
/**
 * This process's directory of programs and fixtures, made on first use, removed at exit; a
 * test worker is often ended without an exit event, so what a dead process left (its pid is
 * in the name) is removed here too.
 */
const ownDir = (): string => {
  if (own !== undefined) return own
  for (const name of readdirSync(BASE)) {
    const pid = Number(/^skein-test-programs-(\d+)-/.exec(name)?.[1])
    if (pid > 0 && !alive(pid)) rmSync(join(BASE, name), { recursive: true, force: true })
  }
  const made = makeDir(`skein-test-programs-${process.pid}-`)
  process.once("exit", () => rmSync(made, { recursive: true, force: true }))
  own = made
  return made
}

const cached = new Map<string, string>()
const once = (key: string, make: (target: string) => void, name: string): string => {
  const known = cached.get(key)
  if (known !== undefined) return known
  const target = join(ownDir(), name)
  make(target)
  cached.set(key, target)
  return target
}

/** The Node binary this test runs on, where everyone may run it. */
export const node = (): string =>
  once("node", (target) => {
    const source = realpathSync(process.execPath)
    try {
      linkSync(source, target)
    } catch {
      copyFileSync(source, target)
    }
    chmodSync(target, 0o755)
  }, "node")

/** A copy of a fixture file (a script that needs nothing beside it), readable by everyone. */
export const file = (path: string): string =>
  once(`file:${path}`, (target) => {
    copyFileSync(path, target)
    chmodSync(target, 0o755)
  }, `${cached.size}-${basename(path)}`)

/** A TypeScript fixture bundled with what it imports into one CommonJS file (FixtureBundle.ts), readable by everyone. */
export const bundle = (entry: string): string =>
  once(`bundle:${entry}`, (target) => {
    copyFileSync(bundled(entry), target)
    chmodSync(target, 0o644)
  }, `${cached.size}-${basename(entry).replace(/\.ts$/, "")}.cjs`)

/** `dist/skein.mjs` of a copy of the built `dist/`, readable by everyone. */
export const skein = (): string =>
  join(
    once("dist", (target) => {
      const source = join(REPO_ROOT, "dist")
      if (!existsSync(join(source, "skein.mjs"))) throw new Error(`${source}/skein.mjs is missing: run \`npm run build\` first`)
      mkdirSync(target)
      cpSync(source, target, { recursive: true, filter: (path) => !path.includes(`${source}/types`) })
      chmodSync(target, 0o755)
    }, "dist"),
    "skein.mjs"
  )
