/**
 * Helpers for tests that drive sessions through the Runtime: a workspace and a home in a temp
 * directory, the runtime built from `Skein.layer` or from its pieces (for a custom toolkit or
 * provider), a recorder of a session's events, the log read back (from its store, or from
 * disk), and a provider that answers scripted calls chosen by the prompt text.
 *
 * `withSkein` and `withPieces` keep sessions in memory (`store: "memory"`): the workspace is on
 * disk, the logs are not, so a test of the runtime never waits on the disk. A test about files,
 * locks or crashes passes `store: "files"` (or builds `piecesLayer` without `sessions`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Skein, type SkeinConfig } from "../../src/index.ts"
import type { SessionEvent } from "../../src/log/Event.ts"
import { promptText, type UserBlock } from "../../src/Vocabulary.ts"
import type * as History from "../../src/log/History.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { encodeEvent } from "../../src/log/Store.ts"
import type { LogError } from "../../src/log/LogError.ts"
import type { ModelRequest, Provider } from "../../src/providers/Provider.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import { Bus } from "../../src/runtime/Bus.ts"
import { Config } from "../../src/runtime/Config.ts"
import { Runtime, type RuntimeError } from "../../src/runtime/Api.ts"
import { layer as RuntimeLayer } from "../../src/runtime/Runtime.ts"
import type * as Session from "../../src/runtime/SessionDeps.ts"
import * as Protocol from "../../src/session/Protocol.ts"
import type { Toolkit } from "../../src/tools/Toolkit.ts"
import * as TempDir from "./TempDir.ts"

export interface Env {
  readonly home: string
  /** The session cwd; holds `notes.txt` ("Hello notes\n"). */
  readonly cwd: string
  readonly runtime: Runtime["Service"]
  /** A session's log as its store holds it (memory or files), read through the runtime. */
  readonly readLog: (sessionId: string) => Effect.Effect<LogFile, RuntimeError>
}

/** A temp home and workspace. */
export const makeDirs = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const home = join(base, "home")
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  writeFileSync(join(cwd, "notes.txt"), "Hello notes\n")
  return { base, home, cwd }
})

/** A session's log through the runtime, as the file store would hold it. */
const readThrough = (runtime: Runtime["Service"]) => (sessionId: string) =>
  Effect.map(runtime.readSession(sessionId), (record): LogFile => {
    const events = record.events.map(logged)
    const text = JSON.stringify(record.header) + "\n" + record.events.map(encodeEvent).join("")
    return { text, header: { ...record.header }, events }
  })

const run = <A, E>(home: string, cwd: string, body: (env: Env) => Effect.Effect<A, E, Scope.Scope | Bus>) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    return yield* body({ home, cwd, runtime, readLog: readThrough(runtime) })
  })

/** Runs `body` with the local runtime (sessions in memory unless `store` says files) over a fresh home and workspace. */
export const withSkein = <A, E>(
  config: Omit<SkeinConfig, "home">,
  body: (env: Env) => Effect.Effect<A, E, Scope.Scope | Bus>
) =>
  Effect.gen(function*() {
    const { home, cwd } = yield* makeDirs
    // Without the sandbox unless a test asks for it: these tests are about the runtime.
    return yield* run(home, cwd, body).pipe(Effect.provide(Skein.layerLocal({ home, store: "memory", sandbox: "off", ...config })))
  })

/**
 * The runtime from its pieces, for a custom toolkit or provider: sessions in `sessions` (in
 * memory; several runtimes given the same ones share them, as processes share a home), or
 * without it in files under `home`.
 */
export const piecesLayer = (options: {
  readonly home: string
  readonly provider: Provider
  readonly toolkit: Toolkit
  readonly maxTurnRequests?: number
  readonly sessions?: MemoryStore.Sessions | undefined
  /** Makes the memory store's writes fail on demand (a full disk, a lost lease). */
  readonly faults?: MemoryStore.Faults | undefined
  /** Another store (the Postgres one), in place of the memory or file store. */
  readonly store?: Layer.Layer<SessionLog, LogError> | undefined
}) =>
  RuntimeLayer.pipe(
    Layer.provideMerge(Bus.layer),
    Layer.provide(
      options.store !== undefined
        ? options.store
        : options.sessions !== undefined
        ? SessionLog.layerMemory({ sessions: options.sessions, faults: options.faults })
        : SessionLog.layer({ home: options.home })
    ),
    Layer.provide(Config.layer({
      home: options.home,
      provider: options.provider,
      model: undefined,
      maxTurnRequests: options.maxTurnRequests ?? 50,
      permissionTimeoutMs: 60_000,
      defaultMode: "default",
      toolkit: options.toolkit,
      version: "test"
    })),
    Layer.provide(TempDir.platform)
  )

/** Runs `body` with a Runtime from its pieces, sessions in memory, over a fresh home and workspace. */
export const withPieces = <A, E>(
  options: { readonly provider: Provider; readonly toolkit: Toolkit; readonly maxTurnRequests?: number },
  body: (env: Env) => Effect.Effect<A, E, Scope.Scope | Bus>
) =>
  Effect.gen(function*() {
    const { home, cwd } = yield* makeDirs
    return yield* run(home, cwd, body).pipe(Effect.provide(piecesLayer({ home, sessions: new MemoryStore.Sessions(), ...options })))
  })

export const text = (value: string) => [{ type: "text" as const, text: value }]

export interface Recorder {
  /** Every event received so far, in order. */
  readonly seen: Array<SessionEvent>
  /** Waits (at most `ms`, default 5 s) until an event matching `pred` has arrived. */
  readonly until: (pred: (event: SessionEvent) => boolean, ms?: number) => Effect.Effect<SessionEvent>
  /** Takes whatever has arrived without waiting; returns everything seen. */
  readonly drain: Effect.Effect<ReadonlyArray<SessionEvent>>
}

/** Subscribes to a session's events (before anything is submitted). */
export const record = (session: { readonly id: string }) =>
  Effect.gen(function*() {
    const bus = yield* Bus
    const sub = yield* bus.subscribe(session.id)
    if (sub === undefined) return yield* Effect.die(new Error(`session ${session.id} is not live`))
    const seen: Array<SessionEvent> = []
    const until = (pred: (event: SessionEvent) => boolean, ms = 5_000) =>
      Effect.gen(function*() {
        const found = seen.find(pred)
        if (found !== undefined) return found
        for (;;) {
          const events = yield* sub.takeAll
          if (events.length === 0) return yield* Effect.die(new Error("the session closed"))
          seen.push(...events)
          const match = events.find(pred)
          if (match !== undefined) return match
        }
      }).pipe(
        Effect.timeoutOrElse({
          duration: ms,
          orElse: () => Effect.die(new Error(`no matching event within ${ms} ms; saw ${seen.map((e) => e.type).join(", ")}`))
        })
      )
    const drain = Effect.map(sub.poll, (more) => {
      seen.push(...more)
      return seen
    })
    return { seen, until, drain } satisfies Recorder
  })

/**
 * Sends a prompt nobody presents and gives its turn number and (to await when the test wants
 * it) its outcome, read from the session's events.
 */
export const submit = (session: { readonly id: string; readonly send: Protocol.Session["send"] }, content: ReadonlyArray<UserBlock>) =>
  Effect.gen(function*() {
    const bus = yield* Bus
    // The watch outlives the caller's scope: it ends with the turn, or with the session.
    const scope = yield* Scope.make()
    const sub = yield* bus.subscribe(session.id).pipe(Scope.provide(scope))
    const { turn } = yield* session.send({ _tag: "Prompt", content }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
    const outcome = Deferred.makeUnsafe<Protocol.TurnOutcome>()
    yield* Effect.forkDetach(Effect.gen(function*() {
      for (;;) {
        const events = sub === undefined ? [] : yield* sub.takeAll
        if (events.length === 0) return yield* Deferred.succeed(outcome, { stopReason: "cancelled" })
        for (const event of events) {
          if (event.turn !== turn) continue
          // A turn whose end its log refused ends here for its presenter (`turn_aborted`).
          const ended = event.type === "turn_aborted" ? { stopReason: event.data.stopReason, error: event.data.error } : Protocol.outcomeOf(event)
          if (ended !== undefined) return yield* Deferred.succeed(outcome, ended)
        }
      }
    }).pipe(Effect.ensuring(Scope.close(scope, Exit.void))))
    return { turn: turn!, outcome }
  })

/** A session live in this process, as the runtime that hosts it sees it (tests look inside it). */
export const localOf = (session: { readonly id: string }): Session.Session => {
  const local = session as Partial<Session.Session>
  if (local.history === undefined || local.idleSince === undefined) throw new Error(`session ${session.id} is not a local session`)
  return local as Session.Session
}

/** The history a session live in this process folded. */
export const historyOf = (session: { readonly id: string }): History.History => localOf(session).history

export const types = (events: ReadonlyArray<{ readonly type: string }>) => events.map((e) => e.type)

/** The canonical fields of an event as the log stores them. */
export const logged = (event: SessionEvent): LogLine => ({ seq: event.seq, ts: event.ts, turn: event.turn, type: event.type, data: event.data })

/** `[type, data]` of each event, for comparing against a literal. */
export const typeData = (events: ReadonlyArray<{ readonly type: string; readonly data: unknown }>): Array<[string, unknown]> =>
  events.map((e) => [e.type, e.data])

/** One event line of a log file. */
export interface LogLine {
  readonly seq: number
  readonly ts: number
  readonly turn: number | null
  readonly type: string
  readonly data: unknown
}

export interface LogFile {
  readonly text: string
  readonly header: Record<string, unknown>
  readonly events: ReadonlyArray<LogLine>
}

/** A log's text as a header and its event lines. */
const logFile = (text: string): LogFile => {
  const lines = text.split("\n")
  if (lines.pop() !== "") throw new Error("the log does not end with a newline")
  const [header, ...events] = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
  return { text, header: header!, events: events as unknown as LogFile["events"] }
}

/** Reads `<home>/sessions/<id>.ndjson` back. */
export const readLog = (home: string, sessionId: string): LogFile =>
  logFile(readFileSync(join(home, "sessions", `${sessionId}.ndjson`), "utf8"))

/** Reads a session's log back from memory `sessions` (after its runtime closed, too). */
export const readStored = (sessions: MemoryStore.Sessions, sessionId: string): LogFile => {
  const text = sessions.text(sessionId)
  if (text === undefined) throw new Error(`no session ${sessionId} in the memory store`)
  return logFile(text)
}

const lastPrompt = (request: ModelRequest): string => {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!
    if (message.role === "user") return promptText(message.content)
  }
  return ""
}

/**
 * A provider that answers each turn with the scripted calls listed under its prompt text, so
 * sessions of one runtime can follow different scripts. An unknown prompt fails the call.
 */
export const byPrompt = (
  turns: Record<string, ReadonlyArray<ReadonlyArray<Scripted.Part>>>,
  onRequest?: (request: ModelRequest) => void
): Provider => ({
  name: "by-prompt",
  stream: (request) =>
    Stream.suspend(() => {
      onRequest?.(request)
      const calls = turns[lastPrompt(request)]
      if (calls === undefined) return Stream.succeed({ _tag: "Failure", message: `no script for ${lastPrompt(request)}`, retryable: false })
      return Scripted.make({ turns: [{ calls }] }).stream({ ...request, turn: 1 })
    })
})
