// `npm test`: build the bundle the end-to-end tests spawn, type-check, run the whole suite
// with vitest, and end with one summary line `N passed, N failed` that CI reads (a type
// error counts as one failure).
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"

const run = (cmd, args) => spawnSync(cmd, args, { stdio: "inherit", env: process.env })

const built = run(process.execPath, ["scripts/build.mjs"])
if (built.status !== 0) {
  console.log("0 passed, 1 failed")
  process.exit(1)
}

// The project, and the monitor's page (a browser program: its own configuration).
const typecheck = run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])
const pageTypecheck = run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "src/monitor/page/tsconfig.json"])
const typeFailures = typecheck.status === 0 && pageTypecheck.status === 0 ? 0 : 1
if (typeFailures > 0) console.log("typecheck failed (see above)")

const report = ".test-results.json"
rmSync(report, { force: true })
const vitest = run(process.execPath, [
  "node_modules/vitest/vitest.mjs",
  "run",
  "--reporter=default",
  "--reporter=json",
  `--outputFile.json=${report}`,
  ...process.argv.slice(2)
])

let passed = 0
let failed = 0
let skipped = 0
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, "utf8"))
  passed = json.numPassedTests ?? 0
  skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0)
  // A suite that fails to load has no tests to count; count it as one failure.
  const brokenSuites = (json.testResults ?? []).filter((r) => r.status === "failed" && (r.assertionResults ?? []).length === 0).length
  failed = (json.numFailedTests ?? 0) + brokenSuites
} else {
  failed = 1
}
failed += typeFailures
const code = vitest.status === 0 && failed === 0 ? 0 : 1
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`)
process.exit(code)
