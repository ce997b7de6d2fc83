/**
 * FixtureBundle.ts: a TypeScript fixture is bundled once per checkout, and again as soon as a
 * file of its folder changes; the bundle runs as the source does.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE } from "./AgentProcess.ts"
import { bundled } from "./FixtureBundle.ts"

const cleanup: Array<string> = []
afterEach(() => {
  for (const path of cleanup.splice(0)) rmSync(path, { recursive: true, force: true })
})

const runs = (file: string) => spawnSync(NODE, [file], { encoding: "utf8" }).stdout

describe("FixtureBundle.bundled", () => {
  it("bundles a fixture with what it imports from its folder, reuses the bundle, and makes a new one when the folder changes", () => {
    const folder = realpathSync(mkdtempSync(join(tmpdir(), "skein-fixture-")))
    cleanup.push(folder)
    writeFileSync(join(folder, "words.ts"), `export const word: string = "one"\n`)
    writeFileSync(join(folder, "main.ts"), `import { word } from "./words.ts"\nconst says: string = word\nconsole.log(says)\n`)
    const entry = join(folder, "main.ts")

    const first = bundled(entry)
    cleanup.push(first)
    expect(first).toMatch(/node_modules\/\.cache\/skein-fixtures\/main-[0-9a-f]{16}\.cjs$/)
    expect(runs(first)).toBe("one\n")
    const written = statSync(first).mtimeMs
    expect(bundled(entry)).toBe(first)
    expect(statSync(first).mtimeMs).toBe(written)

    // The imported file changes, not the entry: a new bundle.
    writeFileSync(join(folder, "words.ts"), `export const word: string = "two"\n`)
    const second = bundled(entry)
    cleanup.push(second)
    expect(second).not.toBe(first)
    expect(runs(second)).toBe("two\n")
  })
})
