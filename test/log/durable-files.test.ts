/**
 * The files of the session store at every instant: a process killed (SIGKILL) half-way through
 * creating or deleting a session leaves whole files, and never the MCP servers' secrets without
 * their log; a refused load changes no byte; files and directories are owner-only.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import type { FaultPoint } from "../../src/log/Files.ts"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { NODE, REPO_ROOT } from "../support/AgentProcess.ts"
import { makeDirs, text } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

const CHILD = join(REPO_ROOT, "test/fixtures/faults/store-child.ts")

/** Runs one store operation in a child process that is killed at `point`. */
const killedAt = (home: string, operation: "create" | "open" | "remove", id: string, point: FaultPoint) => {
  const result = spawnSync(NODE, [CHILD, home, operation, id, point], { encoding: "utf8", timeout: 30_000 })
  assert.strictEqual(result.signal, "SIGKILL", `the child was not killed at ${point}: ${result.stdout}${result.stderr}`)
}

const names = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : [])

const header = (id: string, cwd = "/w") => JSON.stringify({ type: "session", v: LOG_VERSION, id, cwd, created: 1 }) + "\n"
const line = (seq: number, turn: number, type: string, data: unknown) => JSON.stringify({ seq, ts: seq, turn, type, data }) + "\n"
const oneTurn = line(1, 1, "turn_start", { content: [{ type: "text", text: "hi" }] }) +
  line(2, 1, "model_response", { call: 1, parts: [{ type: "text", text: "hello" }], stop: "end_turn" }) +
  line(3, 1, "turn_end", { stopReason: "end_turn" })

/** A session's files as a crash left them: its log, its MCP settings (secrets), a migration backup. */
const seedSession = (dir: string, id: string) => {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  writeFileSync(join(dir, `${id}.ndjson`), header(id) + oneTurn, { mode: 0o600 })
  writeFileSync(join(dir, `${id}.mcp.json`), JSON.stringify({ v: 1, servers: [] }), { mode: 0o600 })
  writeFileSync(join(dir, `${id}.mcp.json.123.tmp`), "{}", { mode: 0o600 })
  writeFileSync(join(dir, `${id}.ndjson.v0.bak`), header(id), { mode: 0o600 })
}

/** The log store over `home`, as a new process would build it. */
const storeIn = (home: string, faults?: (point: FaultPoint) => void) =>
  Effect.gen(function*() {
    return yield* SessionLog
  }).pipe(Effect.provide(SessionLog.layer({ home, faults })), Effect.provide(TempDir.platform))

describe("deleting a session", () => {
  it.effect("removes the secrets and every other side file first, then the log, then the lock", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const dir = join(home, "sessions")
      seedSession(dir, "s1")
      seedSession(dir, "s10")
      const seen = new Map<FaultPoint, Array<string>>()
      const log = yield* storeIn(home, (p) => void seen.set(p, names(dir)))
      yield* log.remove("s1")
      const other = ["s10.mcp.json", "s10.mcp.json.123.tmp", "s10.ndjson", "s10.ndjson.v0.bak"]
      assert.deepStrictEqual(seen.get("remove.side-files"), ["s1.lock", "s1.ndjson", ...other])
      assert.deepStrictEqual(seen.get("remove.log"), ["s1.lock", ...other])
      // Another session, whose id starts the same, is untouched.
      assert.deepStrictEqual(names(dir), other)
    }).pipe(Effect.provide(TempDir.platform)))

  for (const point of ["remove.side-files", "remove.log"] as const) {
    it.effect(`killed at ${point}: no secret outlives the log, and deleting again finishes`, () =>
      Effect.gen(function*() {
        const home = yield* TempDir.make()
        const dir = join(home, "sessions")
        seedSession(dir, "s1")
        killedAt(home, "remove", "s1", point)
        const left = names(dir)
        // The invariant: secrets only beside their log.
        if (left.some((n) => n.startsWith("s1.mcp.json"))) assert.include(left, "s1.ndjson")
        assert.deepStrictEqual(left, point === "remove.side-files" ? ["s1.lock", "s1.ndjson"] : ["s1.lock"])
        // The dead process's lock is stale: the next delete takes it over and finishes.
        const log = yield* storeIn(home)
        yield* log.remove("s1").pipe(Effect.provide(Logger.layer([])))
        assert.deepStrictEqual(names(dir), [])
      }).pipe(Effect.provide(TempDir.platform)))
  }

  it.live("Runtime.deleteSession removes the MCP settings beside the log (with their secrets)", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({
          cwd,
          mcpServers: [{ name: "s", command: "/nonexistent/mcp-server", args: [], env: [{ name: "TOKEN", value: "s3cret" }] }]
        })
        const dir = join(home, "sessions")
        assert.deepStrictEqual(names(dir), [`${session.id}.lock`, `${session.id}.mcp.json`, `${session.id}.ndjson`])
        assert.include(readFileSync(join(dir, `${session.id}.mcp.json`), "utf8"), "s3cret")
        yield* runtime.deleteSession(session.id)
        assert.deepStrictEqual(names(dir), [])
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script: { turns: [] } })), Effect.provide(Logger.layer([])))
    }))
})

describe("creating a session", () => {
  it.effect("killed before the log is linked into place: no log at all, and nothing is listed", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      killedAt(home, "create", "s1", "create.written")
      const dir = join(home, "sessions")
      assert.notInclude(names(dir), "s1.ndjson")
      const log = yield* storeIn(home)
      assert.deepStrictEqual((yield* log.list({})).sessions, [])
      assert.strictEqual((yield* Effect.flip(Effect.scoped(log.open("s1")))).reason, "not_found")
      // And deleting it clears what the killed create left.
      yield* log.remove("s1").pipe(Effect.provide(Logger.layer([])))
      assert.deepStrictEqual(names(dir), [])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("killed right after: the log is whole, and opening it removes the leftover", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      killedAt(home, "create", "s1", "create.linked")
      const dir = join(home, "sessions")
      assert.deepStrictEqual(names(dir), ["s1.lock", "s1.ndjson", "s1.ndjson.creating"])
      const log = yield* storeIn(home)
      const opened = yield* Effect.scoped(log.open("s1")).pipe(Effect.provide(Logger.layer([])))
      assert.strictEqual(opened.contents.header.id, "s1")
      assert.deepStrictEqual(names(dir), ["s1.ndjson"])
    }).pipe(Effect.provide(TempDir.platform)))
})

describe("migrating a log (v1 → the current format)", () => {
  const FIXTURE = join(REPO_ROOT, "test/fixtures/logs/v1-basic.ndjson")
  const original = readFileSync(FIXTURE, "utf8")
  const originalEvents = original.trimEnd().split("\n").slice(1).map((l) => JSON.parse(l))

  /** The log on disk is complete and loadable, in either format, with every event of the original. */
  const expectWholeLog = (home: string) =>
    Effect.gen(function*() {
      const log = yield* storeIn(home)
      const contents = yield* log.read("fixture-v1")
      assert.include([1, LOG_VERSION], contents.version)
      assert.strictEqual(contents.torn, undefined)
      assert.deepStrictEqual(contents.events.map(({ sessionId: _, ...e }) => e), originalEvents)
    })

  const seed = (home: string) => {
    mkdirSync(join(home, "sessions"), { recursive: true })
    writeFileSync(join(home, "sessions", "fixture-v1.ndjson"), original)
  }

  it.effect("opened for writing, it is replaced in one rename; the original stays as the backup, byte for byte", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      seed(home)
      const dir = join(home, "sessions")
      const before = statSync(join(dir, "fixture-v1.ndjson")).ino
      const log = yield* storeIn(home)
      yield* Effect.scoped(log.open("fixture-v1")).pipe(Effect.provide(Logger.layer([])))
      assert.deepStrictEqual(names(dir), ["fixture-v1.ndjson", "fixture-v1.ndjson.v1.bak"])
      // The backup is the original file itself (a hard link), not a copy.
      assert.strictEqual(statSync(join(dir, "fixture-v1.ndjson.v1.bak")).ino, before)
      assert.strictEqual(readFileSync(join(dir, "fixture-v1.ndjson.v1.bak"), "utf8"), original)
      assert.strictEqual(JSON.parse(readFileSync(join(dir, "fixture-v1.ndjson"), "utf8").split("\n")[0]!).v, LOG_VERSION)
      yield* expectWholeLog(home)
    }).pipe(Effect.provide(TempDir.platform)))

  for (const point of ["migrate.written", "migrate.backed-up", "migrate.replaced"] as const) {
    it.effect(`killed at ${point}: a complete log is there, and the next open finishes the migration`, () =>
      Effect.gen(function*() {
        const home = yield* TempDir.make()
        seed(home)
        const dir = join(home, "sessions")
        killedAt(home, "open", "fixture-v1", point)
        yield* expectWholeLog(home)
        const log = yield* storeIn(home)
        const opened = yield* Effect.scoped(log.open("fixture-v1")).pipe(Effect.provide(Logger.layer([])))
        assert.strictEqual(opened.contents.events.length, originalEvents.length)
        yield* expectWholeLog(home)
        assert.strictEqual((yield* log.read("fixture-v1")).version, LOG_VERSION)
        // Nothing of the killed migration is left but the backup of the original.
        assert.deepStrictEqual(names(dir), ["fixture-v1.ndjson", "fixture-v1.ndjson.v1.bak"])
        assert.strictEqual(readFileSync(join(dir, "fixture-v1.ndjson.v1.bak"), "utf8"), original)
      }).pipe(Effect.provide(TempDir.platform)))
  }
})

describe("a refused load changes nothing", () => {
  it.live("a wrong cwd or a missing additional directory is refused before the torn tail is cut", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const dir = join(home, "sessions")
      mkdirSync(dir, { recursive: true })
      const file = join(dir, "s1.ndjson")
      // A crash's leftovers: a torn last line, and a turn left open.
      const bytes = header("s1", cwd) + line(1, 1, "turn_start", { content: [{ type: "text", text: "hi" }] }) + '{"seq":2,"ts":2,"tu'
      writeFileSync(file, bytes)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const wrong = yield* Effect.flip(runtime.loadSession({ sessionId: "s1", cwd: join(cwd, "..") }))
        assert.strictEqual(wrong.reason, "invalid_cwd")
        const missing = yield* Effect.flip(runtime.loadSession({ sessionId: "s1", cwd, additionalDirectories: [join(cwd, "gone")] }))
        assert.strictEqual(missing.reason, "invalid_cwd")
        assert.strictEqual(readFileSync(file, "utf8"), bytes)
        assert.deepStrictEqual(names(dir), ["s1.ndjson"])
        // Accepted, it is recovered as before.
        const loaded = yield* runtime.loadSession({ sessionId: "s1", cwd })
        assert.deepStrictEqual(loaded.events.map((e) => e.type), ["turn_start", "turn_end"])
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script: { turns: [] } })), Effect.provide(Logger.layer([])))
    }))
})

describe("modes", () => {
  it.live("the sessions directory is 0700 and every file in it 0600; a looser directory is tightened on start", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const dir = join(home, "sessions")
      const mode = (file: string) => (statSync(file).mode & 0o777).toString(8)
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({
          cwd,
          mcpServers: [{ name: "s", command: "/nonexistent/mcp-server", args: [], env: [] }]
        })
        yield* session.prompt(text("hi"))
        assert.strictEqual(mode(home), "700")
        assert.strictEqual(mode(dir), "700")
        for (const name of names(dir)) assert.strictEqual(mode(join(dir, name)), "600", name)
        assert.deepStrictEqual(names(dir).length, 3)
        return session.id
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script: { turns: [{ calls: [[{ text: "a" }]] }] } })), Effect.provide(Logger.layer([])))
      // An older Skein left them readable by others.
      chmodSync(dir, 0o755)
      chmodSync(join(dir, `${id}.ndjson`), 0o644)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        assert.strictEqual(mode(dir), "700")
        yield* runtime.loadSession({ sessionId: id, cwd })
        assert.strictEqual(mode(join(dir, `${id}.ndjson`)), "600")
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script: { turns: [] } })), Effect.provide(Logger.layer([])))
    }))
})
