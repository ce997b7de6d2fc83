// The build `npm run bench` compares Skein with, "the previous commit": by default the merge-base
// of HEAD and `main` (what a branch started from), or HEAD's first parent when HEAD is on main
// (after a merge: main before it). Its sources are exported with `git archive` into the run's
// temporary directory (no worktree is registered), built there with its own scripts/build.mjs over
// this checkout's node_modules, and its code cache filled in a directory of its own, as the build
// fills a user's. The bench then starts it interleaved with this checkout's build, so both are
// measured on the same machine at the same moments.
import { execFile, spawn } from "node:child_process"
import { existsSync, mkdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const git = (root, args) =>
  new Promise((resolve, reject) =>
    execFile("git", args, { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`git ${args.join(" ")}: ${String(stderr).trim() || error.message}`)) : resolve(String(stdout).trim())))

/** The commit to compare with: `asked` (a ref), else the merge-base with main, else HEAD's first parent. */
export const previousCommit = async (root, asked) => {
  if (asked !== undefined && asked !== "") return git(root, ["rev-parse", "--verify", `${asked}^{commit}`])
  const head = await git(root, ["rev-parse", "HEAD"])
  const base = await git(root, ["merge-base", "HEAD", "main"]).catch(() => undefined)
  return base !== undefined && base !== head ? base : git(root, ["rev-parse", "--verify", "HEAD^"])
}

/** Runs `command` to completion; rejects with the tail of its output. */
const run = (command, args, options) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (d) => (output += d))
    child.stderr.on("data", (d) => (output += d))
    child.on("error", reject)
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} exited with ${signal ?? code}: ${output.trim().slice(-1500)}`)))
  })

/** `git archive COMMIT | tar -x -C dir`. */
const exportTree = (root, commit, dir) =>
  new Promise((resolve, reject) => {
    const archive = spawn("git", ["archive", "--format=tar", commit], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    const tar = spawn("tar", ["-x", "-C", dir], { stdio: ["pipe", "ignore", "pipe"] })
    let errors = ""
    archive.stderr.on("data", (d) => (errors += d))
    tar.stderr.on("data", (d) => (errors += d))
    archive.stdout.pipe(tar.stdin)
    let pending = 2
    const done = (what) => (code) => {
      if (code !== 0) return reject(new Error(`${what} exited with ${code}: ${errors.trim().slice(-1500)}`))
      if (--pending === 0) resolve()
    }
    archive.on("exit", done("git archive"))
    tar.on("exit", done("tar"))
    archive.on("error", reject)
    tar.on("error", reject)
  })

/**
 * Builds the previous commit under `tmp`; resolves with where its `skein` is and the environment
 * to start it with (its own code cache directory, filled).
 */
export const buildPrevious = async ({ root, tmp, asked, env }) => {
  const commit = await previousCommit(root, asked)
  const short = commit.slice(0, 10)
  const subject = await git(root, ["log", "-1", "--format=%s", commit])
  const dir = join(tmp, `previous-${short}`)
  mkdirSync(dir, { recursive: true })
  await exportTree(root, commit, dir)
  // The dependencies of this checkout: the bench compares Skein's code, not a reinstall.
  if (!existsSync(join(dir, "node_modules"))) symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir")
  const buildEnv = { ...env, SKEIN_NO_CODE_CACHE: "1" }
  await run(process.execPath, [join(dir, "scripts", "build.mjs")], { cwd: dir, env: buildEnv })
  // Its command (`bin.skein`): dist/skein.cjs, or dist/skein.mjs before there was one.
  const skein = [join(dir, "dist", "skein.cjs"), join(dir, "dist", "skein.mjs")].find((file) => existsSync(file))
  if (skein === undefined) throw new Error(`the build of ${short} made no dist/skein.cjs or dist/skein.mjs`)
  const ownEnv = { ...env, SKEIN_CODE_CACHE_DIR: join(tmp, "code-cache-previous") }
  // Its own way of filling the cache, where it has one; otherwise its first measured starts do.
  const warmer = join(dir, "scripts", "warm-code-cache.mjs")
  if (existsSync(warmer)) {
    const { warmCodeCache } = await import(pathToFileURL(warmer).href)
    const problem = await warmCodeCache({ env: ownEnv })
    if (problem !== undefined) throw new Error(`the code cache of ${short} was not filled: ${problem}`)
  }
  return { commit, short, subject, skein, env: ownEnv }
}
