// `npm run test:durations`: rewrite test/durations.json, the committed list of how long each
// test file took, from the report of the last `npm test` (.test-results.json). The suite's
// sequencer (test/support/Sequencer.ts) starts the longest files first with it, so that on a
// fresh clone, which has no duration cache of vitest's, no long file starts last and leaves the
// other worker idle at the end. Run it after a whole suite when files grew or shrank a lot.
import { readFileSync, writeFileSync } from "node:fs"
import { relative, resolve } from "node:path"

const report = process.argv[2] ?? ".test-results.json"
const json = JSON.parse(readFileSync(report, "utf8"))
const root = resolve(".")
const seconds = {}
for (const result of json.testResults ?? []) {
  if (typeof result.startTime !== "number" || typeof result.endTime !== "number") continue
  const file = relative(root, result.name).split("\\").join("/")
  if (file.startsWith("..")) continue
  seconds[file] = Math.round((result.endTime - result.startTime) / 100) / 10
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)))
writeFileSync("test/durations.json", `${JSON.stringify(sorted, null, 2)}\n`)
console.log(`test/durations.json: ${Object.keys(sorted).length} files, ${Object.values(sorted).reduce((a, b) => a + b, 0).toFixed(0)} s in all`)
