/**
 * End to end: Skein as a dependency of another project. Packs Skein as npm publishes it
 * (`npm pack`, whose `prepare` builds the bundle and the declaration files), installs the
 * tarball in a new project, type-checks the README's programs there (the files `examples/*.ts`,
 * which the README shows verbatim: test/e2e/readme.test.ts) under strict settings, and runs the
 * embedding example.
 *
 * Nothing here is timed: packing and type-checking take minutes on a busy machine, so the test
 * has no time limit of its own, and each command only a bound far beyond any real run, which
 * stops one that hangs.
 *
 * The pack runs in a copy of the sources (so this checkout's dist/, which other tests spawn,
 * is never rebuilt under them). The project gets Skein's dependencies by links to this
 * checkout's node_modules instead of a download; that they are the ones the tarball declares
 * is checked against the imports of its library bundle.
 */
import { spawnSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { NODE, REPO_ROOT } from "../support/AgentProcess.ts"

const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-package-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Far beyond any real run of a command here: only a hang reaches it. */
const HANG_MS = 20 * 60_000

/** Runs a command; fails the test with its output when it exits non-zero. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) => {
  const r = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", timeout: HANG_MS })
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`)
  return r
}

/** The packages a bundle imports (`effect/Layer` → `effect`, `@effect/platform-node/X` → `@effect/platform-node`). */
const importedPackages = (bundle: string) => {
  const names = new Set<string>()
  for (const m of bundle.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"'./][^"']*)["']/g)) {
    const spec = m[1]!
    if (spec.startsWith("node:") || builtinModules.includes(spec)) continue
    const parts = spec.split("/")
    names.add(spec.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
  }
  return [...names].sort()
}

describe("e2e: Skein as a package", () => {
  it("packs with declaration files; the README's programs type-check and run in a project that depends on it", () => {
    // Pack a copy of the sources; `prepare` builds dist/ there, declarations included.
    const source = join(root, "skein")
    for (const entry of ["package.json", "tsconfig.json", "tsconfig.build.json", "README.md", "scripts", "src", "demo"]) {
      cpSync(join(REPO_ROOT, entry), join(source, entry), { recursive: true })
    }
    symlinkSync(join(REPO_ROOT, "node_modules"), join(source, "node_modules"))
    const packs = join(root, "packs")
    mkdirSync(packs)
    run("npm", ["pack", "--pack-destination", packs], source, { SKEIN_NO_CODE_CACHE: "1" })
    const tarball = join(packs, readdirSync(packs).find((name) => name.endsWith(".tgz"))!)

    // A project that depends on the tarball.
    const app = join(root, "app")
    const installed = join(app, "node_modules", "skein")
    mkdirSync(installed, { recursive: true })
    run("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"], app)
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"))
    expect(manifest.exports["."].types).toBe("./dist/types/index.d.ts")
    readFileSync(join(installed, manifest.exports["."].types), "utf8")
    expect(readdirSync(join(installed, "dist", "types")).some((name) => name.endsWith(".d.ts"))).toBe(true)
    // The library bundle imports only what the package declares.
    const bundle = readFileSync(join(installed, manifest.exports["."].import), "utf8")
    expect(importedPackages(bundle).filter((name) => manifest.dependencies[name] === undefined)).toEqual([])
    for (const name of [...Object.keys(manifest.dependencies), "typescript", "@types/node"]) {
      mkdirSync(dirname(join(app, "node_modules", name)), { recursive: true })
      symlinkSync(join(REPO_ROOT, "node_modules", name), join(app, "node_modules", name))
    }
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module", dependencies: { skein: `file:${tarball}` } }))
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2023",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        types: ["node"],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noImplicitOverride: true,
        noEmit: true,
        // Skein's declarations are checked too, not only their use.
        skipLibCheck: false
      },
      include: ["*.ts"]
    }))

    // The README's programs, as they are.
    const examples = readdirSync(join(REPO_ROOT, "examples")).filter((name) => name.endsWith(".ts"))
    expect(examples).toContain("embedding.ts")
    for (const name of examples) writeFileSync(join(app, name), readFileSync(join(REPO_ROOT, "examples", name), "utf8"))
    const checked = spawnSync(NODE, [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", app], { cwd: app, encoding: "utf8", timeout: HANG_MS })
    expect(checked.stdout + checked.stderr).toBe("")
    expect(checked.status).toBe(0)

    // The embedding example runs (its script answers; its home is a temporary folder, not $HOME's).
    const home = join(root, "home")
    const temp = join(root, "tmp")
    mkdirSync(home)
    mkdirSync(temp)
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SKEIN_")))
    const ran = spawnSync(NODE, ["embedding.ts"], { cwd: app, env: { ...inherited, HOME: home, TMPDIR: temp }, encoding: "utf8", timeout: HANG_MS })
    expect({ status: ran.status, stdout: ran.stdout }).toEqual({ status: 0, stdout: "It says hello.\n[end_turn]\n" })
    expect(readdirSync(home)).toEqual([])
    const [made] = readdirSync(temp)
    expect(readdirSync(join(temp, made!, "sessions")).filter((name) => name.endsWith(".ndjson")).length).toBe(1)
  }, 0)
})
