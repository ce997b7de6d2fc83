/**
 * External ACP agents: a child session whose turns are run by another agent process
 * (`codex-acp`, another Skein) that Skein drives as an ACP *client*. What that agent streams
 * is folded into the child's log as Skein's own canonical events, so the child reloads,
 * replays and is presented like any session; its questions reach the child's presenter.
 *
 * The seam is the session's `runTurn`: `Runner.run(io)` replaces the model/tool loop of one
 * turn. `TurnIO` is the part of the turn's contract (`session/TurnContract.ts`) it uses, so
 * that this folder never imports the runtime (which imports it).
 *
 * - **Process.** Started on the first `run` (a child that never runs costs nothing), in the
 *   scope given to `make` (`ExternalConnection.ts`). If it dies, the turn ends with an error
 *   and the next `run` starts it again (resuming its session with `session/load` when it
 *   offers that).
 * - **Protocol.** `initialize` (fs offered, no terminal), one `session/new`, then one
 *   `session/prompt` per turn. The agent's `session/request_permission` goes to the turn's
 *   `Questions` (`ExternalQuestions.ts`); its `fs/read_text_file` and `fs/write_text_file` are
 *   served inside the session's roots, a write through the turn's `Permission`
 *   (`ExternalFiles.ts`): the services `run` is provided, as the loop is. Anything else is
 *   "method not found".
 * - **Folding.** What the agent streams, and what its requests announce, is folded into the
 *   turn's canonical events by a pure step (`ExternalFold.ts`); this runner carries out its
 *   outputs in order, one step at a time: events to log and publish, and the model call in
 *   progress and the calls asked for, in `io.state`, for the session's supervisor. A log that
 *   refuses an event ends the turn. (Streamed text is not checkpointed as `model_partial`: if
 *   Skein itself dies mid-call, that call's text is lost to the child's log, not to the agent.)
 * - **Ceiling.** While the child's ceiling (`tools/Ceiling.ts`) lets nothing change (its parent
 *   switched to plan, say), an agent that reports a change starting is stopped: the turn ends
 *   with an error saying why (Skein cannot hold a program to read-only otherwise). Its
 *   questions are held to the ceiling too (`ExternalQuestions.ts`).
 * - **Cancel.** Interrupting `run` answers the agent's open questions `cancelled`, sends
 *   `session/cancel` and waits (a few seconds) for the prompt's answer, folding what comes
 *   meanwhile; then the interruption goes on and the session's supervisor finalizes what is
 *   open. An agent that does not answer in time is stopped.
 *
 * Nothing here writes to Skein's stdout (its own client's channel): the agent's output is
 * read from its pipes and only ever reaches the log, the bus and the stderr tail.
 */
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Blocks from "../acp/Blocks.ts"
import type * as AcpAnswers from "../acp/Answers.ts"
import type * as AcpClient from "../acp/Client.ts"
import type * as Initialize from "../acp/Initialize.ts"
import { AgentMethod, ClientMethod } from "../acp/Methods.ts"
import type * as AcpUpdate from "../acp/Update.ts"
import * as Peer from "../jsonrpc/Peer.ts"
import * as Rpc from "../jsonrpc/Protocol.ts"
import type { LogError } from "../log/LogError.ts"
import type { TurnOutcome } from "../session/Protocol.ts"
import type { Permission, Questions, TurnIO } from "../session/TurnContract.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"
import type * as Tool from "../tools/Tool.ts"
import { type ModelStop, promptText, type StopReason, type ToolKind, type UserBlock } from "../Vocabulary.ts"
import * as Connection from "./ExternalConnection.ts"
import * as Files from "./ExternalFiles.ts"
import * as Fold from "./ExternalFold.ts"
import * as AgentQuestions from "./ExternalQuestions.ts"

export interface Runner {
  /** Runs one turn through the agent. Never fails: a problem is an outcome with an `error`. */
  readonly run: (io: TurnIO) => Effect.Effect<TurnOutcome, never, Tool.ToolEnv | Permission | Questions>
  /** The agent's process id while it runs. */
  readonly pid: () => number | undefined
}

/** After `session/cancel`, how long the agent has to answer the prompt before it is stopped. */
export const CANCEL_WAIT_MS = 5_000

/** A prompt block the agent accepts: images and embedded resources only when it says it takes them. */
const promptBlock = (block: UserBlock, caps: Initialize.PromptCapabilities | undefined) =>
  (block.type === "image" && caps?.image !== true) || (block.type === "resource" && caps?.embeddedContext !== true)
    ? { type: "text" as const, text: promptText([block]) }
    : Blocks.fromUserBlock(block)

/**
 * The ACP schemas of what an agent asks of Skein and answers it, loaded with the first
 * connection to an external agent: a process that never starts one (every `skein acp` until it
 * does) never builds them.
 */
interface Wire {
  readonly client: typeof AcpClient
  readonly update: typeof AcpUpdate
  readonly answers: typeof AcpAnswers
}
const wire: Effect.Effect<Wire> = Effect.promise(() =>
  Promise.all([import("../acp/Client.ts"), import("../acp/Update.ts"), import("../acp/Answers.ts")]).then(([client, update, answers]) => ({ client, update, answers }))
)

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/** How a prompt ended, as `run` sees it. */
type Settled =
  | { readonly _tag: "answered"; readonly stopReason: StopReason }
  /** The agent answered the prompt with an error. */
  | { readonly _tag: "refused"; readonly message: string }
  /** The agent is gone (or its connection was closed). */
  | { readonly _tag: "lost"; readonly message: string }
  /** The session's log refused an event (`Prompt.broken` says why). */
  | { readonly _tag: "broken" }
  /** The agent reported a change while its session may change nothing: it is stopped. */
  | { readonly _tag: "confined"; readonly message: string }

/** One running prompt: the fold of its updates into the turn. */
interface Prompt {
  readonly io: TurnIO
  /** The turn's edges its handlers ask: the permission gate, and whoever presents the turn. */
  readonly edges: Context.Context<Permission | Questions>
  /** The fold's state; changed only by `step`, one step at a time. */
  fold: Fold.State
  /** Still folding into its turn (nothing is logged for it once this is false). */
  attached: boolean
  /** Why the session's log refused one of its events, if it did: the turn cannot go on. */
  broken: string | undefined
  readonly settled: Deferred.Deferred<Settled>
  /** Completed when `run` stops waiting (a cancel, or the end): the agent's open questions give up. */
  readonly ended: Deferred.Deferred<void>
}

// ---------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------

export const make = (agent: Connection.ExternalAgent, options: Connection.Options): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    /** Serializes the fold: notifications, the handlers' own announcements and the prompt's end. */
    const fold = yield* Semaphore.make(1)
    const starting = yield* Semaphore.make(1)
    let connection: Connection.Connection | undefined
    /** The agent's session of a connection that was lost, to resume on the next one. */
    let resumable: string | undefined
    let current: Prompt | undefined
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
      })
    )

    const who = `The external agent ${agent.name}`

    /** Whether the session may change nothing now, and a call of this kind may change something. */
    const confining = (kind: ToolKind): boolean => {
      const ceiling = options.ceiling?.()
      return ceiling !== undefined && !Ceiling.mayChange(ceiling) && !Ceiling.onlyLooks(kind)
    }

    // ---- folding ------------------------------------------------------------------

    /** Carries out one output of the fold, in the order given. */
    const perform = (p: Prompt, output: Fold.Output): Effect.Effect<void, LogError> => {
      switch (output._tag) {
        case "Canonical":
          return p.io.emit.canonical(output.body)
        case "Ephemeral":
          return p.io.emit.ephemeral(output.body)
        case "Streaming":
          return Effect.sync(() => {
            p.io.state.partial = output.parts
            p.io.state.call = output.call
          })
        case "Requested":
          return Effect.sync(() => {
            p.io.state.requested.set(output.id, output.args)
          })
        case "Confined": {
          const why = Ceiling.whyReadOnly(options.ceiling!()) ?? "it may change nothing"
          return Deferred.succeed(p.settled, {
            _tag: "confined",
            message: `${who} was stopped: it started ${Connection.quoted(output.title, 120)}, which may change files, and ${why}.`
          })
        }
        case "Subject":
        case "Writing":
          // Answers to the request that fed the step: it reads them.
          return Effect.void
        default:
          return output satisfies never
      }
    }

    /**
     * Folds an input into `p` while it is attached and carries out the outputs; a log failure
     * ends the prompt. The outputs, or `undefined` when nothing was folded.
     */
    const step = (p: Prompt, input: Fold.Input): Effect.Effect<ReadonlyArray<Fold.Output> | undefined> =>
      fold.withPermits(1)(Effect.suspend(() => {
        if (!p.attached) return Effect.succeed(undefined)
        const [next, outputs] = Fold.step(p.fold, input)
        p.fold = next
        return Effect.as(Effect.forEach(outputs, (output) => perform(p, output), { discard: true }), outputs)
      })).pipe(
        Effect.catch((error: LogError) =>
          Effect.suspend(() => {
            p.broken ??= `could not log an event: ${error.message}`
            return Effect.as(Deferred.succeed(p.settled, { _tag: "broken" }), undefined)
          })
        )
      )

    /** Whether the session may change nothing now. */
    const readOnly = (): boolean => {
      const ceiling = options.ceiling?.()
      return ceiling !== undefined && !Ceiling.mayChange(ceiling)
    }

    /** The prompt was answered (or failed): every call still open fails, then the last model call is logged. */
    const conclude = (p: Prompt, stop: ModelStop, error?: string) => step(p, { _tag: "Conclude", stop, error })

    /** Stops folding into the turn; open questions give up. */
    const detach = (p: Prompt) =>
      fold.withPermits(1)(Effect.sync(() => {
        p.attached = false
        if (current === p) current = undefined
      })).pipe(Effect.andThen(Deferred.succeed(p.ended, undefined)))

    // ---- the agent's requests -------------------------------------------------------

    /** The running prompt of the agent's session `sessionId` on `conn`. */
    const promptOf = (conn: Connection.Connection, sessionId: string): Prompt | undefined =>
      connection === conn && sessionId === conn.sessionId && current !== undefined && current.attached ? current : undefined

    /** The running prompt as the handlers of the agent's requests see it. */
    const served = (p: Prompt): Files.Served => ({ io: p.io, step: (input) => step(p, input), ended: p.ended })

    const asking: AgentQuestions.Asking = { timeoutMs: options.permissionTimeoutMs, confining }

    const handlers = (wire: Wire) => (conn: Connection.Connection) => ({
      requests: {
        [ClientMethod.sessionRequestPermission]: Peer.request(wire.client.RequestPermissionRequest, (params) => {
          const p = promptOf(conn, params.sessionId)
          return p === undefined
            ? Effect.succeed({ outcome: { outcome: "cancelled" } } as const)
            : Effect.provideContext(AgentQuestions.requestPermission(served(p), asking, params), p.edges)
        }),
        [ClientMethod.fsReadTextFile]: Peer.request(wire.client.ReadTextFileRequest, (params) => {
          const p = promptOf(conn, params.sessionId)
          return p === undefined ? Effect.fail(Files.noPrompt()) : Files.readTextFile(p.io, params)
        }),
        [ClientMethod.fsWriteTextFile]: Peer.request(wire.client.WriteTextFileRequest, (params) => {
          const p = promptOf(conn, params.sessionId)
          return p === undefined ? Effect.fail(Files.noPrompt()) : Effect.provideContext(Files.writeTextFile(served(p), params), p.edges)
        })
      },
      notifications: {
        [ClientMethod.sessionUpdate]: Peer.notification(wire.update.SessionNotification, (n) => {
          const p = promptOf(conn, n.sessionId)
          // Outside a prompt (a `session/load` replay, commands offered): nothing of a turn.
          return p === undefined ? Effect.void : Effect.asVoid(step(p, { _tag: "Update", update: n.update, readOnly: readOnly() }))
        })
      }
    })

    // ---- the process ------------------------------------------------------------------

    /** Closes a connection: its process group is dead when this returns. */
    const drop = (conn: Connection.Connection) =>
      Effect.suspend(() => {
        if (connection === conn) connection = undefined
        if (conn.sessionId !== "") resumable = conn.sessionId
        return Scope.close(conn.scope, Exit.void)
      })

    /** The live connection, started (again) when there is none. */
    const connect = (io: TurnIO, services: Context.Context<Tool.ToolEnv>) =>
      starting.withPermits(1)(Effect.gen(function*() {
        if (connection !== undefined && !(yield* Deferred.isDone(connection.lost))) return connection
        if (connection !== undefined) yield* drop(connection)
        if (closed) return yield* Effect.fail(`${who} is closed`)
        const handled = handlers(yield* wire)
        connection = yield* Connection.open(agent, options, { parent, resumable, cwd: io.cwd, roots: io.roots, handlers: handled, services })
        return connection
      }))

    // ---- a turn ---------------------------------------------------------------------

    /** Sends the prompt; its end (an answer, an error, the agent gone) settles `p`. */
    const send = (conn: Connection.Connection, p: Prompt) =>
      conn.peer.request(AgentMethod.sessionPrompt, {
        sessionId: conn.sessionId,
        prompt: p.io.content.map((block) => promptBlock(block, conn.prompts))
      }).pipe(
        Effect.flatMap((answer) => Effect.flatMap(wire, (w) => Schema.decodeUnknownEffect(w.answers.PromptResponse)(answer))),
        Effect.map((answer): Settled => ({ _tag: "answered", stopReason: answer.stopReason })),
        Effect.catch((error): Effect.Effect<Settled> =>
          error._tag === "RpcError" && error.code === Rpc.ErrorCode.PeerClosed
            ? Effect.map(Deferred.await(conn.lost), (message) => ({ _tag: "lost", message }))
            : Effect.succeed({
              _tag: "refused",
              message: error._tag === "RpcError"
                ? `${Connection.quoted(error.message)} (${error.code})`
                : "it answered with something Skein cannot read"
            })
        ),
        (answered) => Effect.raceFirst(answered, Effect.map(Deferred.await(conn.lost), (message): Settled => ({ _tag: "lost", message }))),
        Effect.flatMap((settled) => Deferred.succeed(p.settled, settled)),
        // The connection closed under it (Skein is shutting the child down).
        Effect.onInterrupt(() => Deferred.succeed(p.settled, { _tag: "lost", message: `${who} was stopped` }))
      )

    /** The turn was cancelled: the agent is told, and given a moment to finish. */
    const cancel = (conn: Connection.Connection, p: Prompt, sending: Fiber.Fiber<unknown>) =>
      Effect.gen(function*() {
        // Open questions first: ACP wants them answered `cancelled` before the prompt ends.
        yield* Deferred.succeed(p.ended, undefined)
        yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
        const answered = yield* ProcessGroup.awaitFor(p.settled, CANCEL_WAIT_MS)
        yield* detach(p)
        const settled = answered ? yield* Deferred.await(p.settled) : undefined
        // An agent that does not stop, or broke, is not given another prompt.
        if (settled === undefined || settled._tag !== "answered") {
          yield* Fiber.interrupt(sending)
          yield* drop(conn)
        }
      })

    const runPrompt = (conn: Connection.Connection, io: TurnIO, edges: Context.Context<Permission | Questions>) =>
      Effect.gen(function*() {
        const p: Prompt = {
          io,
          edges,
          fold: Fold.initial(agent.name, io.turn, io.cwd),
          attached: true,
          broken: undefined,
          settled: yield* Deferred.make<Settled>(),
          ended: yield* Deferred.make<void>()
        }
        current = p
        io.state.partial = []
        io.state.call = p.fold.call
        // Once the prompt is sent, an interruption is always a cancel the agent hears of.
        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const sending = yield* Effect.forkIn(send(conn, p), conn.scope)
            const waited = yield* Effect.exit(restore(Deferred.await(p.settled)))
            if (Exit.isFailure(waited)) {
              yield* cancel(conn, p, sending)
              return yield* Effect.failCause(waited.cause)
            }
            return yield* restore(finish(conn, p, waited.value))
          })
        ).pipe(Effect.ensuring(detach(p)))
      })

    /** What a settled prompt leaves in the log, and the turn's outcome. */
    const finish = (conn: Connection.Connection, p: Prompt, settled: Settled) =>
      Effect.gen(function*() {
        let outcome: TurnOutcome
        switch (settled._tag) {
          case "answered":
            yield* conclude(p, Fold.modelStopOf(settled.stopReason))
            outcome = { stopReason: settled.stopReason }
            break
          case "refused": {
            const error = `${who} failed the prompt: ${settled.message}`
            yield* conclude(p, "error", error)
            outcome = { stopReason: "end_turn", error }
            break
          }
          case "lost":
            yield* conclude(p, "error", settled.message)
            yield* drop(conn)
            outcome = { stopReason: "end_turn", error: settled.message }
            break
          case "broken":
            outcome = { stopReason: "end_turn" }
            break
          case "confined":
            // It is told, then stopped: a program that goes on alone cannot be held to read-only.
            yield* conclude(p, "error", settled.message)
            yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
            yield* drop(conn)
            outcome = { stopReason: "end_turn", error: settled.message }
            break
          default:
            return settled satisfies never
        }
        if (p.broken === undefined) return outcome
        // The log refused an event: the agent is stopped (it would go on alone).
        yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
        yield* drop(conn)
        return { stopReason: "end_turn", error: `The turn failed inside Skein: ${p.broken}` } satisfies TurnOutcome
      })

    const run = Effect.fn("External.run")(function*(io: TurnIO) {
      const services = yield* Effect.context<Tool.ToolEnv>()
      const edges = yield* Effect.context<Permission | Questions>()
      const connected = yield* Effect.result(connect(io, services))
      if (Result.isFailure(connected)) return { stopReason: "end_turn", error: connected.failure } satisfies TurnOutcome
      return yield* runPrompt(connected.success, io, edges)
    })

    return { run, pid: () => connection?.pid } satisfies Runner
  })
