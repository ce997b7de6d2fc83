/**
 * `skein sessions [list|show ID|rm ID|fork ID]`: the logged sessions, for people at a
 * terminal. Reads the logs directly (no runtime, no provider); `rm` refuses a
 * session another Skein process has open; `fork` writes a new log from one (see
 * `runtime/Fork.ts`) and refuses a turn another process is still running. An ID
 * may be shortened to any unique prefix.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as nodePath from "node:path"
import * as readline from "node:readline"
import * as Framing from "../jsonrpc/Framing.ts"
import * as Listing from "../log/Listing.ts"
import * as Lock from "../log/Lock.ts"
import type { Canonical } from "../log/Event.ts"
import type * as Reader from "../log/Reader.ts"
import * as Replay from "../log/Replay.ts"
import { SessionLog } from "../log/SessionLog.ts"
import * as Fork from "../runtime/Fork.ts"
import * as SessionId from "../runtime/SessionId.ts"
import { VERSION } from "../version.ts"
import * as Checks from "./Checks.ts"
import * as Shadow from "../checkpoints/Shadow.ts"
import * as Options from "./Options.ts"
import * as Usage from "./Usage.ts"

export const signalExitCode = 130

/**
 * The log service and the Node platform, for commands that only read or remove logs: the files
 * under the home, or the PostgreSQL database of `--store` (loaded only then).
 */
export const logLayer = (home: string, store?: string | undefined) =>
  (store === undefined
    ? SessionLog.layer({ home })
    : Layer.unwrap(Effect.map(Effect.promise(() => import("../log/PgStore.ts")), (PgStore) => PgStore.layer(store)))
  ).pipe(Layer.provideMerge(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))

/** A session id from an id or a unique prefix of one. */
export const resolveId = (ref: string) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const fs = yield* FileSystem.FileSystem
    // An id that names no session is the user's mistake (exit 2), like any other bad argument.
    if (!Listing.isSessionId(ref)) return yield* Effect.fail(new Options.UsageError(`Not a session id: ${ref}`))
    const files = yield* fs.exists(log.directory).pipe(Effect.orElseSucceed(() => false))
    if (!files) {
      // A store without files (PostgreSQL): its sessions are listed, children too.
      const all = yield* log.list({ children: true, limit: 1_000_000 })
      const ids = all.sessions.map((s) => s.id)
      if (ids.includes(ref)) return ref
      const matches = ids.filter((id) => id.startsWith(ref))
      if (matches.length === 1) return matches[0]!
      if (matches.length > 1) return yield* Effect.fail(new Options.UsageError(`"${ref}" matches ${matches.length} sessions; give more of the id`))
      return yield* Effect.fail(new Options.UsageError(`No session ${ref} in ${log.directory}`))
    }
    if (yield* fs.exists(log.pathOf(ref)).pipe(Effect.orElseSucceed(() => false))) return ref
    const names = yield* fs.readDirectory(log.directory).pipe(Effect.orElseSucceed(() => [] as Array<string>))
    const matches = names.filter((n) => n.endsWith(".ndjson") && n.startsWith(ref)).map((n) => n.slice(0, -".ndjson".length))
    if (matches.length === 1) return matches[0]!
    if (matches.length > 1) {
      return yield* Effect.fail(new Options.UsageError(`"${ref}" matches ${matches.length} sessions; give more of the id`))
    }
    return yield* Effect.fail(new Options.UsageError(`No session ${ref} in ${log.directory}`))
  })

/** Reads a session's log from an id, an id prefix, or the path of a log file. */
export const readRef = (ref: string) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const fs = yield* FileSystem.FileSystem
    if (ref.includes("/") || ref.endsWith(".ndjson")) {
      if (!(yield* fs.exists(ref).pipe(Effect.orElseSucceed(() => false)))) {
        return yield* Effect.fail(new Options.UsageError(`No such file: ${ref}`))
      }
      return yield* log.readFile(ref)
    }
    return yield* log.read(yield* resolveId(ref))
  })

/**
 * The events as the next `session/load` would see them: a turn a crash left open is shown
 * closed, unless a live process holds the session (its turn may still be running).
 */
export const asLoaded = (contents: Reader.Contents) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const fs = yield* FileSystem.FileSystem
    // A file: the lock beside it; a store without files (PostgreSQL): the session's lease.
    const held = contents.file.endsWith(".ndjson") && (yield* fs.exists(contents.file).pipe(Effect.orElseSucceed(() => false)))
      ? Lock.isLive(yield* Lock.owner(fs, contents.file.replace(/\.ndjson$/, ".lock")))
      : yield* log.held(contents.header.id)
    return held ? contents.events : Replay.withRecovery(contents.events)
  })

const reported: ReadonlySet<string> = new Set(["LogError", "RuntimeError", "SessionError"])

/**
 * Prints a log or runtime error as one line and answers its exit code: 2 for a session that
 * does not exist (the user's mistake), else 1. Anything else goes on.
 */
export const reportErrors = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      (error): error is E & { readonly _tag: string; readonly message: string; readonly reason?: string } =>
        typeof error === "object" && error !== null && "_tag" in error && reported.has(String(error._tag)),
      (error) => Effect.sync(() => {
        process.stderr.write(`skein: ${error.message}\n`)
        return error.reason === "not_found" ? 2 as const : 1 as const
      })
    )
  )

/** Writes to stdout and waits until it is handed off (large outputs, then exit). */
export const writeOut = (text: string) =>
  Effect.callback<void>((resume) => {
    process.stdout.write(text, () => resume(Effect.void))
  })

const when = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ")

const list = (query: Listing.Query, json: boolean) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const page = yield* log.list(query)
    if (json) {
      for (const s of page.sessions) process.stdout.write(Framing.encode(s))
      return 0
    }
    if (page.sessions.length === 0) {
      process.stdout.write(`No sessions in ${log.directory}\n`)
      return 0
    }
    for (const s of page.sessions) {
      const child = s.parent !== undefined ? `  (subagent of ${s.parent})` : s.forkedFrom !== undefined ? `  (fork of ${s.forkedFrom})` : ""
      process.stdout.write(`${s.id}  ${when(s.updatedAt)}  ${s.cwd}${child}\n    ${s.title ?? "(no prompt yet)"}\n`)
    }
    if (page.nextCursor !== undefined) process.stdout.write(`… more sessions: use --limit N to see more\n`)
    return 0
  })

/**
 * The tree of a session's children (subagents), from the `subagent` events of its log and of
 * theirs: one line per child (id, agent, what became of it, its task), indented by depth.
 */
const childTree = (events: ReadonlyArray<Canonical>, depth = 1): Effect.Effect<Array<string>, never, SessionLog> =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const out: Array<string> = []
    const children = new Map<string, { agent: string; task: string; state: string }>()
    for (const event of events) {
      if (event.type !== "subagent") continue
      const data = event.data
      if (data.event === "spawned") children.set(data.id, { agent: data.agent ?? "agent", task: data.task ?? "", state: "running" })
      const child = children.get(data.id)
      if (child !== undefined && data.state !== undefined && data.event !== "closed") child.state = data.state
    }
    for (const [id, child] of children) {
      const task = child.task.replace(/\s+/g, " ").trim()
      out.push(`${"  ".repeat(depth)}└ ${id}  ${child.agent}  ${child.state}  ${task.length > 60 ? `${task.slice(0, 59)}…` : task}`)
      const own = yield* Effect.option(log.read(id))
      if (own._tag === "Some") out.push(...(yield* childTree(own.value.events, depth + 1)))
      else out.push(`${"  ".repeat(depth + 1)}(its log is gone)`)
    }
    return out
  })

const show = (contents: Reader.Contents) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const info = yield* fs.stat(contents.file).pipe(Effect.option)
    const events = contents.events
    const turns = events.filter((e) => e.type === "turn_start").length
    const out: Array<string> = [`log      ${contents.file}`]
    if (info._tag === "Some") out.push(`size     ${Number(info.value.size)} bytes, ${events.length} events, ${turns} turns`)
    if (contents.torn !== undefined) out.push(`note     the last line (${contents.torn.line}) is torn; it is cut when the session next loads`)
    const parent = contents.header.parent
    if (parent !== undefined) {
      out.push(`parent   ${parent.sessionId} (its tool call ${parent.toolCallId}; depth ${parent.depth})`, `agent    ${contents.header.agent ?? "general"}`)
    }
    const forkedFrom = contents.header.forkedFrom
    if (forkedFrom !== undefined) out.push(`origin   forked from ${forkedFrom.sessionId} at turn ${forkedFrom.turn}`)
    const tree = yield* childTree(events)
    if (tree.length > 0) out.push("children", ...tree)
    yield* writeOut(out.join("\n") + "\n" + Replay.transcript(contents.header, yield* asLoaded(contents)))
    return 0
  })

/** The shortest id prefix `rm` takes: a slip of one or two characters must not pick a session. */
export const MIN_RM_PREFIX = 4

/** A yes/no question on stderr, answered with a line on stdin (a terminal); anything but y/yes is no. */
const confirm = (question: string) =>
  Effect.callback<boolean>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    let done = false
    const finish = (yes: boolean) => {
      if (done) return
      done = true
      rl.close()
      resume(Effect.succeed(yes))
    }
    rl.on("SIGINT", () => finish(false))
    rl.on("close", () => finish(false))
    rl.question(question, (answer) => finish(/^(y|yes)$/i.test(answer.trim())))
    return Effect.sync(() => finish(false))
  })

/**
 * `rm ID`: at least `MIN_RM_PREFIX` characters of the id (or all of it); at a terminal it asks
 * first, unless `--yes`. Without a terminal nobody can be asked: the full id or `--yes` it takes.
 */
const remove = (ref: string, yes: boolean, home: string) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const id = yield* resolveId(ref)
    if (id !== ref && ref.length < MIN_RM_PREFIX) {
      return yield* Effect.fail(new Options.UsageError(`Give at least ${MIN_RM_PREFIX} characters of the session id to remove it (or the whole id)`))
    }
    if (!yes) {
      if (process.stdin.isTTY === true) {
        const title = (yield* Effect.option(log.read(id)))
        const first = title._tag === "Some" ? title.value.events.find((e) => e.type === "turn_start") : undefined
        const what = first !== undefined && first.type === "turn_start" ? ` ("${Listing.title(first.data.content) ?? ""}")` : ""
        if (!(yield* confirm(`Remove session ${id}${what}? [y/N] `))) {
          process.stderr.write("Not removed.\n")
          return 1
        }
      } else if (id !== ref) {
        return yield* Effect.fail(new Options.UsageError(`Not at a terminal, so nobody can confirm: give the whole id (${id}) or --yes`))
      }
    }
    yield* log.remove(id)
    // Its checkpoints (the shadow repository under Skein's home) go with it.
    yield* Shadow.removeAll(home, id)
    process.stdout.write(`Removed session ${id}\n`)
    return 0
  })

/** Reasons of the runtime's errors that are the user's to fix (exit 2). */
const usageReasons: ReadonlySet<string> = new Set(["not_found", "invalid_request"])

/** `fork ID [--turn N]`: writes the fork and prints its id (alone on stdout, for scripts). */
const fork = (ref: string, turnArg: string | undefined) =>
  Effect.gen(function*() {
    const turn = turnArg === undefined ? undefined : Number(turnArg)
    if (turn !== undefined && (turnArg!.trim() === "" || !Number.isInteger(turn) || turn < 0)) {
      return yield* Effect.fail(new Options.UsageError("--turn must be a whole number, 0 or more (0: before the first turn)"))
    }
    const log = yield* SessionLog
    const sessionId = yield* resolveId(ref)
    const record = yield* Fork.fork(log, { sessionId, turn, id: SessionId.make(), version: VERSION }).pipe(
      Effect.catchIf((error) => usageReasons.has(error.reason), (error) => Effect.fail(new Options.UsageError(error.message)))
    )
    process.stdout.write(`${record.header.id}\n`)
    process.stderr.write(`Forked ${sessionId} at turn ${record.header.forkedFrom?.turn ?? 0}: ${record.header.id}\n`)
    return 0
  })

const SUBCOMMANDS: ReadonlySet<string> = new Set(["list", "ls", "show", "rm", "delete", "fork"])

const HELP = `Usage:
  skein sessions [list] [--cwd DIR] [--limit N] [--json] [--children]
                                                            The sessions, newest first (--children: subagents' too)
  skein sessions show ID                                    A session's details, its children's tree, and its transcript
  skein sessions rm ID [--yes]                              Delete a session's log: ID is the whole id or at least
                                                            ${MIN_RM_PREFIX} characters of it; at a terminal it asks first
                                                            (--yes: don't); otherwise it needs the whole id or --yes
  skein sessions fork ID [--turn N]                         A new session with ID's conversation up to the end of
                                                            turn N (default: the last); prints the new id
ID may be any unique prefix of a session id. Sessions live in $SKEIN_HOME/sessions (--home),
or in a PostgreSQL database with --store URL (SKEIN_STORE).
`

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => Options.parse(args, Usage.OPTIONS),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(HELP)
      return 0
    }
    const [sub = "list", ...rest] = parsed.positionals
    if (!SUBCOMMANDS.has(sub)) return yield* Effect.fail(new Options.UsageError(`Unknown sessions command "${sub}" (expected list, show, rm or fork)`))
    Usage.refuse("sessions", parsed, Options.env)
    const common = Options.common(parsed.values)
    Checks.home(common.home, { write: sub === "rm" || sub === "delete" || sub === "fork" })
    const limit = parsed.values.limit === undefined ? 50 : Number(parsed.values.limit)
    if (!Number.isInteger(limit) || limit < 1) return yield* Effect.fail(new Options.UsageError("--limit must be a positive integer"))
    const one = (what: string) =>
      rest.length === 1 ? Effect.succeed(rest[0]!) : Effect.fail(new Options.UsageError(`skein sessions ${what} takes one session ID`))
    const program = Effect.gen(function*() {
      switch (sub) {
        case "list":
        case "ls":
          if (rest.length > 0) return yield* Effect.fail(new Options.UsageError("skein sessions list takes no arguments"))
          return yield* list({
            cwd: parsed.values.cwd !== undefined ? nodePath.resolve(parsed.values.cwd) : undefined,
            limit,
            children: parsed.values.children === true
          }, parsed.values.json === true)
        case "show":
          return yield* show(yield* readRef(yield* one("show")))
        case "rm":
        case "delete":
          return yield* remove(yield* one("rm"), parsed.values.yes === true, common.home)
        case "fork":
          return yield* fork(yield* one("fork"), parsed.values.turn)
        default:
          return yield* Effect.fail(new Options.UsageError(`Unknown sessions command "${sub}" (expected list, show, rm or fork)`))
      }
    })
    return yield* reportErrors(program).pipe(Effect.provide(logLayer(common.home, common.store)))
  })
