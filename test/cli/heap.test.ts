/**
 * The young-generation cap of the CLI's serving processes (src/cli/Heap.ts): a Node process
 * whose young objects keep surviving grows its new space far past the cap by default, stays
 * within it once capped, and keeps its own choice when it was started with one.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { NEW_SPACE_CAP } from "../../src/cli/Heap.ts"

/**
 * What V8 may count beyond both semi-spaces for a moment: pages it is promoting or releasing
 * (1.0 MB was seen under load, 1.25 MB on a quiet machine). A quarter of the cap: V8 grows a
 * semi-space by doubling it, so one growth past the cap is far above this.
 */
const SLACK = NEW_SPACE_CAP / 4

const HEAP = pathToFileURL(join(import.meta.dirname, "../../src/cli/Heap.ts")).href

// About 1.5 s of allocation in short tasks, the last 200,000 objects kept alive (young objects
// that survive a few scavenges, as with many sessions streaming at once); prints whether the cap was installed and the new space's
// size at the end, in bytes.
const PROGRAM = `
import * as v8 from "node:v8"
const installed = process.argv[2] === "cap" ? (await import(${JSON.stringify(HEAP)})).capYoungGeneration() : null
const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
const ring = new Array(200_000)
let i = 0
const t0 = Date.now()
const loop = () => {
  for (let k = 0; k < 5_000; k++, i++) ring[i % ring.length] = { i, s: "x" + i, a: [i, i] }
  if (Date.now() - t0 < 1500) setImmediate(loop)
  else console.log(JSON.stringify({ installed, newSpace: newSpace() }))
}
loop()
`

const run = (args: ReadonlyArray<string>, nodeFlags: ReadonlyArray<string> = []) => {
  const dir = mkdtempSync(join(tmpdir(), "skein-heap-"))
  try {
    const file = join(dir, "grow.mjs")
    writeFileSync(file, PROGRAM)
    const out = execFileSync(process.execPath, [...nodeFlags, file, ...args], { encoding: "utf8", timeout: 30_000 })
    return JSON.parse(out.trim().split("\n").pop()!) as { installed: boolean | null; newSpace: number }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("the young-generation cap", () => {
  it("holds the new space to the cap where V8 alone grows it past", () => {
    const uncapped = run([])
    assert.isAbove(uncapped.newSpace, NEW_SPACE_CAP, "without the cap V8 grows the new space past it (else this test shows nothing)")
    const capped = run(["cap"])
    assert.strictEqual(capped.installed, true)
    // One more growth would double it, which is what this rules out.
    assert.isAtMost(capped.newSpace, NEW_SPACE_CAP + SLACK)
    assert.isAbove(capped.newSpace, NEW_SPACE_CAP / 4, "it still grows up to the cap")
  }, 60_000)

  it("leaves a process started with its own semi-space size alone", () => {
    const own = run(["cap"], ["--max-semi-space-size=32"])
    assert.strictEqual(own.installed, false)
    assert.isAbove(own.newSpace, NEW_SPACE_CAP)
  }, 60_000)
})
