/**
 * scripts/declarations.mjs (run by `prepare`) emits dist/types again only when what it is made
 * from changed (scripts/declaration-inputs.mjs): a second `prepare`, or the pack of a copy that
 * holds the declarations already (test/e2e/package.test.ts), runs no tsc. Driven on a small
 * package with the real TypeScript.
 */
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { declarationInputs, STAMP } from "../../scripts/declaration-inputs.mjs"
import { NODE, REPO_ROOT } from "../support/AgentProcess.ts"

const roots: Array<string> = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A package laid out as Skein's: src/index.ts, the two tsconfig files, the scripts, TypeScript. */
const makePackage = () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-declarations-")))
  roots.push(root)
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "scripts"))
  mkdirSync(join(root, "node_modules"))
  for (const script of ["declarations.mjs", "declaration-inputs.mjs"]) cpSync(join(REPO_ROOT, "scripts", script), join(root, "scripts", script))
  symlinkSync(join(REPO_ROOT, "node_modules", "typescript"), join(root, "node_modules", "typescript"))
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "p", type: "module" }))
  writeFileSync(join(root, "tsconfig.json"), JSON.stringify({ compilerOptions: { target: "ES2023", lib: ["ES2023"], types: [], strict: true, noEmit: true, module: "ESNext", moduleResolution: "bundler" } }))
  writeFileSync(join(root, "tsconfig.build.json"), JSON.stringify({
    extends: "./tsconfig.json",
    compilerOptions: { noEmit: false, declaration: true, emitDeclarationOnly: true, outDir: "dist/types", rootDir: "src" },
    files: ["src/index.ts"]
  }))
  writeFileSync(join(root, "src", "index.ts"), "export const answer = (n: number) => ({ n })\n")
  return root
}

const declarations = (root: string) => {
  const ran = spawnSync(NODE, ["scripts/declarations.mjs"], { cwd: root, encoding: "utf8" })
  expect(ran.status, ran.stdout + ran.stderr).toBe(0)
  return ran.stdout
}

describe("scripts/declarations.mjs", () => {
  it("emits, then emits nothing while the inputs are unchanged, then again when a source changes or the declarations are gone", () => {
    const root = makePackage()
    expect(declarations(root)).not.toContain("up to date")
    expect(readFileSync(join(root, "dist/types/index.d.ts"), "utf8")).toContain("n: number")
    expect(readFileSync(join(root, STAMP), "utf8").trim()).toBe(declarationInputs(root))

    // Unchanged: tsc does not run (a mark left in the output stays).
    writeFileSync(join(root, "dist/types/mark"), "")
    expect(declarations(root)).toContain("dist/types is up to date")
    expect(existsSync(join(root, "dist/types/mark"))).toBe(true)

    writeFileSync(join(root, "src", "index.ts"), "export const answer = (s: string) => ({ s })\n")
    expect(declarations(root)).not.toContain("up to date")
    expect(existsSync(join(root, "dist/types/mark"))).toBe(false)
    expect(readFileSync(join(root, "dist/types/index.d.ts"), "utf8")).toContain("s: string")

    // Declarations gone, though the hash matches: emitted again.
    rmSync(join(root, "dist/types"), { recursive: true })
    expect(declarations(root)).not.toContain("up to date")
    expect(existsSync(join(root, "dist/types/index.d.ts"))).toBe(true)
  })

  it("hashes what decides the declarations, not where the checkout lies", () => {
    const a = makePackage()
    const b = makePackage()
    const base = declarationInputs(a)
    expect(declarationInputs(b)).toBe(base)
    const changed = (edit: (root: string) => void) => {
      const root = makePackage()
      edit(root)
      return declarationInputs(root)
    }
    const edits: Record<string, (root: string) => void> = {
      "a new source file": (root) => writeFileSync(join(root, "src", "more.ts"), "export {}\n"),
      "a source renamed": (root) => {
        writeFileSync(join(root, "src", "other.ts"), readFileSync(join(root, "src", "index.ts")))
        rmSync(join(root, "src", "index.ts"))
      },
      "tsconfig.build.json": (root) => writeFileSync(join(root, "tsconfig.build.json"), "{}"),
      "tsconfig.json": (root) => writeFileSync(join(root, "tsconfig.json"), "{}"),
      "the lock file": (root) => writeFileSync(join(root, "package-lock.json"), "{}"),
      "an installed version of a typed package": (root) => {
        mkdirSync(join(root, "node_modules", "effect"))
        writeFileSync(join(root, "node_modules", "effect", "package.json"), JSON.stringify({ version: "9.9.9" }))
      },
      "the script": (root) => writeFileSync(join(root, "scripts", "declarations.mjs"), "// changed\n", { flag: "a" })
    }
    for (const [what, edit] of Object.entries(edits)) expect(changed(edit), what).not.toBe(base)
  })
})
