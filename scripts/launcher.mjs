#!/usr/bin/env node
// dist/skein.cjs, the `skein` command (and dist/skein.mjs, the same as an ES module, for those
// who run that file): loads the bundle dist/skein-main.cjs (or, for `serve`,
// `monitor` and `acp --connect`, dist/skein-remote.cjs, which adds the session protocol's RPC) through a V8 code
// cache taken *after* a warm run, so the functions that start-up compiles lazily (most of
// Effect, the Schemas, the server) come back compiled instead of being parsed again. Node's
// own compile cache is taken before the code runs and holds little more than the top level.
//
// The cache is one file per build, Node version and command, in $SKEIN_CODE_CACHE_DIR or
// <tmpdir>/skein-code-cache-<uid> (a 0700 directory that must be ours). It is written once by
// a run that served something, shortly after its start-up or else at exit (the app calls the
// hooks below), and written again only if it does not match or V8 rejects it.
// SKEIN_NO_CODE_CACHE=1 turns it off. Nothing here writes to stdout, and any failure only
// means loading without a cache. scripts/build.mjs fills in BUILD. adr/0008 has the reasons.
//
// Built-ins come from process.getBuiltinModule: an ES `import` of node:fs would make Node read
// every export of it, fs.promises included, which loads a dozen more modules at start-up.
//
// The command is CommonJS: Node starts a CommonJS entry about 2 ms sooner than an ES module (no
// module loader to set up). scripts/build.mjs writes both files from this one, with HERE (this
// file's directory) filled in; nothing else here may depend on the kind of module.
//
// An older Node (`npx` runs whichever is first on PATH) gets one line on stderr, not a stack.
const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(`skein: Node.js 22.19 or later is needed (this is ${process.version}); see https://nodejs.org\n`)
  process.exit(1)
}
const fs = process.getBuiltinModule("node:fs")
const os = process.getBuiltinModule("node:os")
const path = process.getBuiltinModule("node:path")
const vm = process.getBuiltinModule("node:vm")
const { createRequire } = process.getBuiltinModule("node:module")

const BUILD = "__SKEIN_BUILD__"
const command = process.argv[2]
const rpc = command === "serve" || command === "monitor" || (command === "acp" && process.argv.slice(3).some((a) => a === "--connect" || a.startsWith("--connect=")))
const bundle = path.join(__SKEIN_HERE__, rpc ? "skein-remote.cjs" : "skein-main.cjs")

// Only the commands whose start-up a user waits on keep a cache of their own (`acp --connect`
// one for the remote bundle, which `serve` borrows); the others borrow `acp`'s (most of what
// they run is shared) and never write.
const own = command === "acp" || command === "run"
const uid = typeof process.getuid === "function" ? process.getuid() : undefined

const cacheDirectory = () => {
  const configured = process.env.SKEIN_CODE_CACHE_DIR
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
const file = directory === undefined
  ? undefined
  : path.join(directory, `${BUILD}-${process.version}-${process.arch}-${rpc ? "remote" : own ? command : "acp"}.cache`)

// A cache file is a header and V8's data. V8 checks the data only loosely (a damaged file can
// abort the process) and ties it to the source by length alone, so the header holds a CRC-32
// of the data and the bundle's size and mtime: anything that does not match is not used.
const MAGIC = 0x31434b53 // "SKC1"
const HEADER = 20
const bundleStat = fs.statSync(bundle)
// zlib's CRC-32 without loading node:zlib, its streams and its classes (~2.5 ms): the native
// binding has the same function. Should a Node ever drop `process.binding`, node:zlib it is.
const crc32 = (data) => {
  try {
    const binding = process.binding("zlib")
    if (typeof binding.crc32 === "function") return binding.crc32(data, 0) >>> 0
  } catch {}
  return process.getBuiltinModule("node:zlib").crc32(data)
}
const header = (data) => {
  const h = Buffer.alloc(HEADER)
  h.writeUInt32LE(MAGIC, 0)
  h.writeUInt32LE(crc32(data), 4)
  h.writeUInt32LE(bundleStat.size >>> 0, 8)
  h.writeDoubleLE(bundleStat.mtimeMs, 12)
  return h
}

const readCache = () => {
  let content
  try {
    const stat = fs.lstatSync(file)
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid)) return undefined
    content = fs.readFileSync(file)
  } catch {
    return undefined
  }
  if (content.length <= HEADER || content.readUInt32LE(0) !== MAGIC) return undefined
  if (content.readUInt32LE(8) !== bundleStat.size >>> 0 || content.readDoubleLE(12) !== bundleStat.mtimeMs) return undefined
  const data = content.subarray(HEADER)
  return header(data).equals(content.subarray(0, HEADER)) ? data : undefined
}

// The bundle is one function expression (scripts/build.mjs), compiled from the file's text as it
// is: V8 keeps that one copy of the source. Compiled in a function so that the cache's bytes (over
// 1 MB) are garbage as soon as V8 has read them, not a constant of this module.
const compile = () => {
  const cachedData = file === undefined ? undefined : readCache()
  const script = new vm.Script(fs.readFileSync(bundle, "utf8"), { filename: bundle, cachedData })
  return { script, loaded: cachedData !== undefined && script.cachedDataRejected !== true }
}
const { script, loaded } = compile()

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

// What the app can see of the cache (`skein doctor` shows it), and its two hooks:
// - markWarm: this run has served something, so a cache taken at exit holds the code a real
//   start-up runs, not just argument parsing;
// - snapshotSoon: start-up is over (`skein acp` built its runtime, right after `initialize`), so
//   take the cache shortly, before a long session compiles much more than start-up needs.
//   Not in the run that fills the cache for a build (scripts/warm-code-cache.mjs sets
//   SKEIN_CODE_CACHE_AT_EXIT=1): that run ends right after its first turn, and its cache, taken at
//   exit, then holds all of it (start-up, session/new, the turn) however slow the machine is.
// - aroundWrite: V8 ties a cache to its flags, so one written after the app set a V8 flag at run
//   time (src/cli/Heap.ts) would be rejected by every later start. The app registers, per flag it
//   sets, a hook that puts the flag back as it was at start and returns what undoes that; the
//   cache is taken between the two.
const aroundWrite = []
const status = {
  disabled,
  directory,
  file,
  loaded,
  markWarm: () => {},
  snapshotSoon: () => {},
  aroundWrite: (hook) => void aroundWrite.push(hook)
}
globalThis[Symbol.for("skein.codeCache")] = status

if (file !== undefined && own && !status.loaded) {
  let warm = false
  let written = false
  const write = () => {
    if (written) return
    written = true
    const temporary = `${file}.${process.pid}.tmp`
    try {
      const undo = []
      let data
      try {
        for (const hook of aroundWrite) undo.push(hook())
        data = script.createCachedData()
      } finally {
        for (const back of undo.reverse()) back()
      }
      fs.writeFileSync(temporary, Buffer.concat([header(data), data]), { mode: 0o600 })
      fs.renameSync(temporary, file)
      removeStale()
    } catch {
      try {
        fs.rmSync(temporary, { force: true })
      } catch {}
    }
  }
  status.markWarm = () => {
    warm = true
  }
  const atExit = process.env.SKEIN_CODE_CACHE_AT_EXIT === "1"
  status.snapshotSoon = () => {
    warm = true
    if (!atExit) setTimeout(write, 200).unref()
  }
  process.once("exit", () => {
    if (warm) write()
  })
}

const bundleModule = { exports: {} }
script.runInThisContext()(bundleModule.exports, createRequire(bundle), bundleModule, bundle, path.dirname(bundle))
