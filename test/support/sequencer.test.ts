/**
 * The suite's order (`Sequencer.ts`): the longest files first, by vitest's cache where it knows
 * a file and by the committed test/durations.json where it does not (a fresh clone), so that no
 * long file starts last and leaves the other worker idle.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestSpecification, Vitest } from "vitest/node"
import config from "../../vitest.config.ts"
import { SHARED } from "./Projects.ts"
import { LongestFirst, longestFirst, projectOrder, readDurations } from "./Sequencer.ts"

const root = join(import.meta.dirname, "..", "..")

describe("the suite's order", () => {
  it("is the longest file first, ties by path; a file the list lacks counts as its median", () => {
    const durations = { "a.test.ts": 1, "b.test.ts": 30, "c.test.ts": 5, "d.test.ts": 5, "e.test.ts": 2 }
    const files = ["a.test.ts", "new.test.ts", "e.test.ts", "d.test.ts", "c.test.ts", "b.test.ts"]
    // The median of 1, 2, 5, 5, 30 is 5: the new file goes with the 5 s ones, by its path.
    expect(longestFirst(files, (f) => f, durations, () => undefined)).toEqual([
      "b.test.ts",
      "c.test.ts",
      "d.test.ts",
      "new.test.ts",
      "e.test.ts",
      "a.test.ts"
    ])
  })

  it("takes vitest's own measure of a file over the committed list's", () => {
    const durations = { "a.test.ts": 1, "b.test.ts": 30 }
    const cached = (f: string) => (f === "a.test.ts" ? 40 : undefined)
    expect(longestFirst(["b.test.ts", "a.test.ts"], (f) => f, durations, cached)).toEqual(["a.test.ts", "b.test.ts"])
  })

  it("is the one vitest.config.ts runs, reading test/durations.json under the root", async () => {
    expect(config.test?.sequence?.sequencer).toBe(LongestFirst)
    const spec = (path: string, project = "", isolate = true) => ({ moduleId: join(root, path), project: { name: project, config: { isolate } } }) as unknown as TestSpecification
    const ctx = { config: { root }, cache: { getTestSpecificationResult: () => undefined } } as unknown as Vitest
    const durations = readDurations(join(root, "test", "durations.json"))
    const [longest, shortest] = Object.keys(durations).sort((a, b) => durations[b]! - durations[a]! || (a < b ? -1 : 1))
      .filter((_, i, all) => i === 0 || i === all.length - 1)
    const sorted = await new LongestFirst(ctx).sort([spec(shortest!), spec(longest!)])
    expect(sorted.map((s) => s.moduleId)).toEqual([join(root, longest!), join(root, shortest!)])
    // Projects one after another, each longest first: the isolated ones before a shared one.
    const three = await new LongestFirst(ctx).sort([
      spec(longest!, "a", false),
      spec(longest!, "c"),
      spec(shortest!, "b"),
      spec(shortest!, "a", false),
      spec(longest!, "b")
    ])
    expect(three.map((s) => [s.project.name, s.moduleId])).toEqual([
      ["b", join(root, longest!)],
      ["b", join(root, shortest!)],
      ["c", join(root, longest!)],
      ["a", join(root, longest!)],
      ["a", join(root, shortest!)]
    ])
  })

  it("queues the isolated projects' files before a shared project's, then by name", () => {
    expect(projectOrder([["shared", false], ["isolated", true]])).toEqual(["isolated", "shared"])
    expect(projectOrder([["b", true], ["a", false], ["c", false], ["a2", true]])).toEqual(["a2", "b", "a", "c"])
  })

  it("runs every test file in exactly one project: the listed shared ones shared, the rest isolated", () => {
    const projects = (config.test?.projects ?? []) as ReadonlyArray<{ test: { name: string; include: Array<string>; exclude?: Array<string>; isolate?: boolean } }>
    expect(projects.map((p) => [p.test.name, p.test.isolate ?? true])).toEqual([["isolated", true], ["shared", false]])
    const [isolated, shared] = projects
    expect(shared!.test.include).toEqual([...SHARED])
    expect(isolated!.test.include).toEqual(["test/**/*.test.ts"])
    for (const file of SHARED) expect(isolated!.test.exclude).toContain(file)
  })

  it("refuses a list that is not file → seconds, saying which entry", () => {
    const dir = mkdtempSync(join(tmpdir(), "skein-durations-"))
    try {
      const file = join(dir, "durations.json")
      writeFileSync(file, JSON.stringify({ "a.test.ts": 1, "b.test.ts": "slow" }))
      expect(() => readDurations(file)).toThrow(/b\.test\.ts has no duration in seconds/)
      writeFileSync(file, "[]")
      expect(() => readDurations(file)).toThrow(/expected an object/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
