// What a checkpoint costs, in-process, against `git stash` of the same tree in the same run:
// a generated workspace of 10,000 files (100 folders of 100 files, about 1 KB each).
//
// - first: Skein's first checkpoint of it (src/checkpoints/Shadow.ts `snapshot`, bundled here
//   with esbuild, Effect external) in a fresh shadow repository, against `git stash -u` in a
//   throwaway repository whose commit is empty (all 10,000 files untracked): both store every
//   file. Disk: the shadow repository's size; the stash's growth of its `.git`.
// - second: after 10 files change, Skein's next checkpoint, against `git stash` in a throwaway
//   repository that has the 10,000 files committed and the same 10 changed: both store only
//   what changed. Disk: what each grew by.
//
// R runs (default 3), each on fresh copies, Skein and git interleaved. Prints one JSON object:
// { files, first: { skein: {ms, bytes}, stash: {ms, bytes} } [], second: … [] }. Options: --runs R.
import { execFileSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { bundle } from "./bench-bundle.mjs"

const { values } = parseArgs({ options: { runs: { type: "string" } } })
const RUNS = Math.max(1, Number(values.runs ?? 3))
const FOLDERS = 100
const PER_FOLDER = 100
const CHANGED = 10

const base = realpathSync(mkdtempSync(join(tmpdir(), "skein-bench-checkpoint-")))

const du = (dir) => {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name)
    total += entry.isDirectory() ? du(full) : statSync(full).size
  }
  return total
}
const env = { ...process.env, GIT_AUTHOR_NAME: "b", GIT_AUTHOR_EMAIL: "b@b", GIT_COMMITTER_NAME: "b", GIT_COMMITTER_EMAIL: "b@b", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" }
const git = (cwd, ...args) => execFileSync("git", ["-c", "gc.auto=0", "-c", "core.hooksPath=/dev/null", ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
const timed = (f) => {
  const start = process.hrtime.bigint()
  f()
  return Number(process.hrtime.bigint() - start) / 1e6
}

try {
  const { Shadow, Effect } = await bundle("checkpoint", [`export * as Shadow from "./src/checkpoints/Shadow.ts"`, `export * as Effect from "effect/Effect"`])

  // The workspace, once; each run works on copies of it.
  const template = join(base, "template")
  for (let d = 0; d < FOLDERS; d++) {
    mkdirSync(join(template, `dir${d}`), { recursive: true })
    for (let f = 0; f < PER_FOLDER; f++) {
      writeFileSync(join(template, `dir${d}`, `file${f}.txt`), `folder ${d} file ${f}\n${"some text of the file ".repeat(45)}\n`)
    }
  }
  const change = (ws, run) => {
    for (let i = 0; i < CHANGED; i++) writeFileSync(join(ws, `dir${i * 7}`, `file${i * 3}.txt`), `changed in run ${run}, file ${i}\n`)
  }
  const snapshot = async (gitDir, ws, name) => {
    const start = process.hrtime.bigint()
    await Effect.runPromise(Shadow.snapshot(gitDir, [ws], name, 2 ** 30))
    return Number(process.hrtime.bigint() - start) / 1e6
  }

  const first = []
  const second = []
  for (let run = 0; run < RUNS; run++) {
    const dir = join(base, `run${run}`)
    // Skein.
    const ws = join(dir, "ws")
    cpSync(template, ws, { recursive: true })
    const gitDir = join(dir, "shadow.git")
    const skeinFirstMs = await snapshot(gitDir, ws, "t1-before")
    const skeinFirstBytes = du(gitDir)
    change(ws, run)
    const skeinSecondMs = await snapshot(gitDir, ws, "t2-before")
    const skeinSecondBytes = du(gitDir) - skeinFirstBytes

    // git stash -u of the untracked tree (every file stored).
    const untracked = join(dir, "stash-untracked")
    cpSync(template, untracked, { recursive: true })
    git(untracked, "init", "-q")
    git(untracked, "commit", "-q", "--allow-empty", "-m", "empty")
    const untrackedBefore = du(join(untracked, ".git"))
    const stashFirstMs = timed(() => git(untracked, "stash", "-u", "-q"))
    const stashFirstBytes = du(join(untracked, ".git")) - untrackedBefore

    // git stash of 10 changed files in a tree whose files are committed (only they stored).
    const committed = join(dir, "stash-committed")
    cpSync(template, committed, { recursive: true })
    git(committed, "init", "-q")
    git(committed, "add", "-A")
    git(committed, "commit", "-q", "-m", "all")
    git(committed, "status", "--porcelain") // the index's stat cache is fresh, as in a repository in use
    change(committed, run)
    const committedBefore = du(join(committed, ".git"))
    const stashSecondMs = timed(() => git(committed, "stash", "-q"))
    const stashSecondBytes = du(join(committed, ".git")) - committedBefore

    first.push({ skein: { ms: skeinFirstMs, bytes: skeinFirstBytes }, stash: { ms: stashFirstMs, bytes: stashFirstBytes } })
    second.push({ skein: { ms: skeinSecondMs, bytes: skeinSecondBytes }, stash: { ms: stashSecondMs, bytes: stashSecondBytes } })
    rmSync(dir, { recursive: true, force: true })
  }
  process.stdout.write(JSON.stringify({ files: FOLDERS * PER_FOLDER, changed: CHANGED, first, second }) + "\n")
} finally {
  rmSync(base, { recursive: true, force: true })
}
