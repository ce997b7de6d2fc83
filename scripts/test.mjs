// `npm test`: build the bundle the end-to-end tests spawn, type-check, run the whole suite
// with vitest, and end with one summary line `N passed, N failed` that CI reads (a type
// error counts as one failure).
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { constants, setPriority } from "node:os"

const run = (cmd, args) => spawnSync(cmd, args, { stdio: "inherit", env: process.env })

const built = run(process.execPath, ["scripts/build.mjs"])
if (built.status !== 0) {
  console.log("0 passed, 1 failed")
  process.exit(1)
}

// Runs a command to its end, its output kept to be printed afterwards (not into vitest's).
const collect = (cmd, args, { lowPriority = false } = {}) =>
  new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: process.env })
    if (lowPriority && child.pid !== undefined) {
      try {
        setPriority(child.pid, constants.priority.PRIORITY_LOW)
      } catch {
        // Not allowed here: it then runs at the normal priority, which is only slower.
      }
    }
    const output = []
    child.stdout.on("data", (chunk) => output.push(chunk))
    child.stderr.on("data", (chunk) => output.push(chunk))
    child.on("error", (error) => resolve({ status: null, output: `${error.message}\n` }))
    child.on("close", (status) => resolve({ status, output: Buffer.concat(output).toString("utf8") }))
  })

// The type-check runs beside the tests, not before them: most test files wait on the processes
// they start (the built agent, git, bubblewrap, PostgreSQL), and tsc, at the lowest priority,
// takes only the cores they leave idle instead of holding both workers back for its 45 CPU-s.
// The project, then the monitor's page (a browser program: its own configuration). Each keeps
// what it found in a build-info file under node_modules/.cache/skein-tsc/, so that the next run
// checks again only the files that changed and those that depend on them (a fresh clone checks all).
const started = performance.now()
const seconds = () => ((performance.now() - started) / 1000).toFixed(0)
const tsc = (project, name) =>
  collect(process.execPath, [
    "node_modules/typescript/bin/tsc", "-p", project, "--incremental", "--tsBuildInfoFile", `node_modules/.cache/skein-tsc/${name}.tsbuildinfo`
  ], { lowPriority: true })
const typechecked = tsc("tsconfig.json", "project")
  .then(async (project) => [project, await tsc("src/monitor/page/tsconfig.json", "monitor-page")])
  .then((results) => ({ results, at: seconds() }))

const report = ".test-results.json"
rmSync(report, { force: true })
const vitest = await new Promise((resolve) => {
  const child = spawn(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
    { stdio: "inherit", env: process.env }
  )
  child.on("error", () => resolve({ status: null }))
  child.on("close", (status) => resolve({ status }))
})

const testsAt = seconds()
const { results: typechecks, at: typecheckedAt } = await typechecked
for (const { output } of typechecks) process.stdout.write(output)
// Whether the type-check made anyone wait: it ends after the tests when the cores were busy.
console.log(`tests done after ${testsAt} s, type-check after ${typecheckedAt} s`)
const typeFailures = typechecks.every(({ status }) => status === 0) ? 0 : 1
if (typeFailures > 0) console.log("typecheck failed (see above)")

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
