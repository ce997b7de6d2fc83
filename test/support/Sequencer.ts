// The suite's file order: the longest files first, so that two workers finish together instead
// of one running a 30 s file alone at the end. vitest orders by its own cache of last run's
// durations, which a fresh clone (CI) lacks: it then falls back to file size, and a short but
// slow file (a browser, a cluster, `npm pack`) may start last. The committed test/durations.json
// (`npm run test:durations` rewrites it) fills that gap; vitest's cache, where it knows a file,
// is fresher and wins.
import { readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Seconds a file took, by its path from the repository's root with `/` separators. */
export type Durations = Readonly<Record<string, number>>

export const readDurations = (file: string): Durations => {
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"))
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${file}: expected an object of file → seconds`)
  }
  const durations: Record<string, number> = {}
  for (const [path, seconds] of Object.entries(parsed)) {
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) {
      throw new Error(`${file}: ${path} has no duration in seconds`)
    }
    durations[path] = seconds
  }
  return durations
}

const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/**
 * Longest first: a file's duration is what vitest's cache measured (`cached`, seconds), else
 * the committed list's, else - a file new since the list - the list's median. Ties keep the
 * path order, so the order is the same on every machine with the same list.
 */
export const longestFirst = <A>(
  files: ReadonlyArray<A>,
  path: (file: A) => string,
  durations: Durations,
  cached: (file: A) => number | undefined
): Array<A> => {
  const unknown = median(Object.values(durations))
  const estimate = (file: A): number => cached(file) ?? durations[path(file)] ?? unknown
  return files
    .map((file) => ({ file, path: path(file), seconds: estimate(file) }))
    .sort((a, b) => b.seconds - a.seconds || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map(({ file }) => file)
}

/**
 * The order the projects' files are queued in, by name and whether each isolates its files: the
 * isolated ones first, as vitest's own order has it, then by name. vitest runs the projects of
 * a run in one pool, so the queue is one list: the long files (the isolated ones: processes,
 * browsers, PostgreSQL) start first, and the short ones of a shared project (isolate: false) come
 * last, one after another, since a worker is kept for the next file only while the next file in
 * the queue is one of its project's.
 */
export const projectOrder = (projects: ReadonlyArray<readonly [name: string, isolated: boolean]>): Array<string> =>
  [...projects]
    .sort(([a, x], [b, y]) => Number(y) - Number(x) || (a < b ? -1 : a > b ? 1 : 0))
    .map(([name]) => name)

export class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const root = this.ctx.config.root
    const durations = readDurations(join(root, "test", "durations.json"))
    const path = (spec: TestSpecification) => relative(root, spec.moduleId).split("\\").join("/")
    const cached = (spec: TestSpecification) => {
      const result = this.ctx.cache.getTestSpecificationResult(spec)
      return result === undefined ? undefined : result.duration / 1000
    }
    const byProject = new Map<string, Array<TestSpecification>>()
    const isolated = new Map<string, boolean>()
    for (const spec of files) {
      const group = byProject.get(spec.project.name) ?? []
      group.push(spec)
      byProject.set(spec.project.name, group)
      isolated.set(spec.project.name, spec.project.config.isolate !== false)
    }
    return projectOrder([...isolated]).flatMap((name) => longestFirst(byProject.get(name)!, path, durations, cached))
  }
}
