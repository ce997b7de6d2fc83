/**
 * A turn presented to one client: `session/prompt`, and `_session/steering` when no turn of
 * the client runs. The turn's events become `session/update` lines (through `Present`), its
 * questions become requests to the client, each in its place, and the prompt is answered on
 * the turn's end before the turn is let go of.
 *
 * Ordering: everything published before a question is written before it; nothing after it
 * overtakes it; the session starts its next turn only after the answer, and the peer writes
 * in enqueue order, so every update of a turn precedes the turn's response, nothing of the
 * turn follows it, and prompts are answered in order.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Stream from "effect/Stream"
import type * as Acp from "../acp/index.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import type { SessionEvent } from "../log/Event.ts"
import { outcomeOf, type Session } from "../session/Protocol.ts"
import * as Present from "../translate/Present.ts"
import type * as Translate from "../translate/Translate.ts"
import type { Answer, StopReason, UserBlock } from "../Vocabulary.ts"
import * as ClientBridge from "./ClientBridge.ts"
import * as Connection from "./Connection.ts"
import * as Rewind from "../checkpoints/RewindRequest.ts"
import { runtimeError, sessionError, userBlocks } from "./Convert.ts"

/**
 * Runs a turn of `s` presented to the client: its updates, its questions (its children's
 * too); `done` gets its outcome before the turn is let go of. Answers the outcome, or
 * `cancelled` when the session closed under it.
 */
export const presentTurn = (
  c: Connection.Connection,
  s: Session,
  content: ReadonlyArray<UserBlock>,
  done: (outcome: { readonly stopReason: StopReason }) => Effect.Effect<void>,
  ran?: { tools: boolean },
  traceparent?: string
) =>
  Effect.gen(function*() {
    c.presenting.set(s.id, (c.presenting.get(s.id) ?? 0) + 1)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        const n = (c.presenting.get(s.id) ?? 1) - 1
        if (n <= 0) c.presenting.delete(s.id)
        else c.presenting.set(s.id, n)
      })
    )
    const encodeFor = Connection.encoders(s.id)
    const presenter = Present.make(s.id, { native: c.client.nativeChildren, shown: c.client.shown })
    // The turn's open questions (its children's too), by session and request id; withdrawing one interrupts its request.
    const questions = yield* FiberMap.make<string>()
    /** Asks one question in its place: everything before it is written first; nothing after it overtakes it. */
    const ask = (key: string, sessionId: string, answer: (a: Answer) => Effect.Effect<void, unknown>, question: ClientBridge.Question) =>
      Effect.gen(function*() {
        yield* flush
        const sent = Deferred.makeUnsafe<void>()
        yield* FiberMap.run(questions, key, ClientBridge.askOn(c.peer, sessionId, answer, question, sent), { startImmediately: true })
        yield* Deferred.await(sent)
      })
    const answerTo = (id: string, requestId: string) => (answer: Answer) =>
      id === s.id ? s.answer(requestId, answer) : Effect.flatMap(c.runtime.getSession(id), (child) => child.answer(requestId, answer))
    let lines: Array<string> = []
    const flush = Effect.suspend(() => {
      if (lines.length === 0) return Effect.void
      const chunk = lines.length === 1 ? lines[0]! : lines.join("")
      lines = []
      return c.peer.sendEncoded(chunk)
    })
    // Everything published since the last take, encoded into one write-queue item.
    const present = (events: ReadonlyArray<SessionEvent>) =>
      Effect.gen(function*() {
        for (const event of events) {
          if (ran !== undefined && (event.type === "tool_call" || event.type === "subagent")) ran.tools = true
          for (const action of presenter.live(event)) {
            switch (action._tag) {
              case "update":
                lines.push(encodeFor(action.sessionId)(action.update as Translate.Update))
                break
              case "ask": {
                const requestId = action.question.data.requestId
                yield* ask(`${action.answerTo}:${requestId}`, action.sessionId, answerTo(action.answerTo, requestId), action.question)
                break
              }
              case "withdraw":
                yield* FiberMap.remove(questions, `${action.answerTo}:${action.requestId}`)
                break
            }
          }
          const outcome = outcomeOf(event)
          if (outcome !== undefined) {
            yield* flush
            // Answered before the turn is let go of: the next turn cannot start before this answer.
            return yield* done(outcome)
          }
        }
        yield* flush
        // Let the turn publish more before the next take: one wake-up per burst, not per delta.
        yield* Effect.yieldNow
      })
    const options = { ...Connection.turnOptions(c), ...(traceparent !== undefined ? { traceparent } : {}) }
    yield* s.turn(content, options).pipe(Stream.runForEachArray(present), Effect.mapError(sessionError))
    // The turn ended without its turn_end (the session closed under it).
    return { stopReason: "cancelled" as StopReason }
  }).pipe(Effect.scoped)

/** `session/prompt`: a turn presented to the client, answered with its stop reason. */
export const prompt = (c: Connection.Connection) => (params: Acp.Session.PromptRequest, ctx: Peer.RequestContext) =>
  Effect.gen(function*() {
    const s = yield* Connection.session(c, params.sessionId)
    yield* Connection.notChild(s)
    const content = yield* userBlocks(params.prompt)
    if (c.options.onPrompt !== undefined) yield* c.options.onPrompt
    const ran = { tools: false }
    // A client's W3C trace context (ACP's telemetry RFD): the turn's span continues its trace.
    const traceparent = params._meta?.["traceparent"]
    const outcome = yield* presentTurn(c, s, content, (outcome) => ctx.respond({ stopReason: outcome.stopReason }), ran, typeof traceparent === "string" ? traceparent : undefined)
    // A turn that ran tools (or a child's) may have added a prompt file or a skill; one that only talked did not.
    if (ran.tools) yield* Connection.announceCommands(c, s, true)
    return outcome
  })

/**
 * `_session/steering {sessionId, prompt}`: content for the turn this client is running in the
 * session, given to the model at its next safe point (`injected`); with none running, a new
 * turn presented to this client as a prompt's would be (`startedNewTurn`).
 */
export const steering = (c: Connection.Connection) => (params: Acp.Session.PromptRequest) =>
  Effect.gen(function*() {
    const s = yield* Connection.session(c, params.sessionId)
    yield* Connection.notChild(s)
    const content = yield* userBlocks(params.prompt)
    if ((c.presenting.get(s.id) ?? 0) > 0) {
      const result = yield* Effect.mapError(s.send({ _tag: "Steer", content }), sessionError)
      return { outcome: result.steering ?? "injected" }
    }
    yield* Effect.forkDetach(Effect.ignore(presentTurn(c, s, content, () => Effect.void)))
    return { outcome: "startedNewTurn" as const }
  })

/**
 * `_session/rewind {sessionId, turn}`: `/rewind turn` as a turn presented to this client (a
 * question about files someone else changed comes to it); answers what the rewind did.
 */
export const rewind = (c: Connection.Connection) => (params: typeof Rewind.RewindRequest.Type) =>
  Effect.gen(function*() {
    const s = yield* Connection.session(c, params.sessionId)
    yield* Connection.notChild(s)
    let stopReason: StopReason = "cancelled"
    yield* presentTurn(c, s, Rewind.prompt(params.turn), (outcome) => Effect.sync(() => void (stopReason = outcome.stopReason)))
    const record = yield* Effect.mapError(c.runtime.readSession(s.id), runtimeError)
    return { stopReason, ...Rewind.response(record.events) }
  })
