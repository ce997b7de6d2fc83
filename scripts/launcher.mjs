#!/usr/bin/env node
// dist/skein.mjs, the `skein` command: loads the bundle dist/skein-main.cjs through a V8 code
// cache taken *after* a warm run, so the functions that start-up compiles lazily (most of
// Effect, the Schemas, the server) come back compiled instead of being parsed again. Node's
// own compile cache is taken before the code runs and holds little more than the top level.
//
// The cache is one file per build, Node version and command, in $SKEIN_CODE_CACHE_DIR or
// <tmpdir>/skein-code-cache-<uid> (a 0700 directory that must be ours). It is written once, at
// exit, by a run that served something (the app calls the hook below), and rewritten only if
// V8 rejects it. SKEIN_NO_CODE_CACHE=1 turns it off. Nothing here writes to stdout, and any
// failure only means loading without a cache. scripts/build.mjs fills in BUILD.
import fs from "node:fs"
import { createRequire } from "node:module"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import vm from "node:vm"

const BUILD = "__SKEIN_BUILD__"
const bundle = fileURLToPath(new URL("./skein-main.cjs", import.meta.url))
const source = fs.readFileSync(bundle, "utf8")

// Only the commands whose start-up a user waits on keep a cache of their own; the others
// borrow `acp`'s (most of what they run is shared) and never write.
const command = process.argv[2]
const own = command === "acp" || command === "run"

const cacheDirectory = () => {
  const configured = process.env.SKEIN_CODE_CACHE_DIR
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined
  const directory = configured || path.join(os.tmpdir(), `skein-code-cache${uid === undefined ? "" : `-${uid}`}`)
  try {
    fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
    const stat = fs.lstatSync(directory)
    // A cache is code: never read one from a directory another user could have written.
    if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o022) !== 0) return undefined
    return directory
  } catch {
    return undefined
  }
}

const disabled = process.env.SKEIN_NO_CODE_CACHE === "1" || process.env.SKEIN_NO_CODE_CACHE === "true"
const directory = disabled ? undefined : cacheDirectory()
const cacheFile = (name) =>
  path.join(directory, `${BUILD}-${process.version}-${process.arch}-${name}.cache`)
const file = directory === undefined ? undefined : cacheFile(own ? command : "acp")

let cachedData
if (file !== undefined) {
  try {
    const stat = fs.lstatSync(file)
    if (stat.isFile() && (stat.uid === process.getuid?.() || process.getuid === undefined)) cachedData = fs.readFileSync(file)
  } catch {}
}

// Strict, as the ES modules it was bundled from.
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {"use strict";${source}\n})`, {
  filename: bundle,
  cachedData
})

// Caches of other builds are removed once they have gone unused for a week.
const removeStale = () => {
  const now = Date.now()
  for (const name of fs.readdirSync(directory)) {
    if (!name.endsWith(".cache") || name.startsWith(`${BUILD}-`)) continue
    const other = path.join(directory, name)
    const stat = fs.statSync(other)
    if (now - Math.max(stat.atimeMs, stat.mtimeMs) > 7 * 24 * 3600 * 1000) fs.rmSync(other, { force: true })
  }
}

if (file !== undefined && own && (cachedData === undefined || script.cachedDataRejected)) {
  let warm = false
  // The app calls this once it has served something: a cache taken then holds the code a
  // real start-up runs, not just argument parsing.
  globalThis[Symbol.for("skein.codeCache.warm")] = () => {
    warm = true
  }
  process.once("exit", () => {
    if (!warm) return
    const temporary = `${file}.${process.pid}.tmp`
    try {
      fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o600 })
      fs.renameSync(temporary, file)
      removeStale()
    } catch {
      try {
        fs.rmSync(temporary, { force: true })
      } catch {}
    }
  })
}
cachedData = undefined

const module = { exports: {} }
script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle))
