/**
 * One turn presented at a terminal: submits the prompt, shows the turn's events in order, and
 * answers its permission questions at the keyboard in their place (after everything that led
 * to them), one question at a time. Esc or Ctrl-C while the turn runs cancels it; at a
 * question they reject the call and cancel the turn (`interrupted`), and the prompt comes back.
 * Keys typed meanwhile are the caller's (`onKey`: queue, steer, change the mode).
 */
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type { SessionEvent } from "../../log/Event.ts"
import type { PermissionAsked, UserBlock } from "../../Vocabulary.ts"
import { outcomeOf, type Session, type TurnOutcome } from "../../session/Protocol.ts"
import type { Input, TurnKey } from "./Input.ts"
import * as Question from "./Question.ts"
import type { View } from "./Render.ts"
import * as Terminal from "./Terminal.ts"

interface Presented {
  readonly outcome: TurnOutcome
  /** The user stopped the turn (Esc or Ctrl-C, during it or at a question). */
  readonly interrupted: boolean
}

interface Options {
  /** Shows each event (people's rendering, or JSON lines). */
  readonly show: (event: SessionEvent) => void
  /** The people's view, when there is one (the spinner, diffs already shown). */
  readonly view?: View | undefined
  /** The keyboard, when stdin is a terminal: questions are asked there and Ctrl-C cancels. */
  readonly input?: Input | undefined
  /** A child session (a subagent) of the turn, by id: its questions are asked here too and answered on it. */
  readonly child?: ((id: string) => Effect.Effect<Session, unknown>) | undefined
  /** Keys typed during the turn other than interrupting; with it, what is typed is shown and kept. */
  readonly onKey?: ((key: Exclude<TurnKey, { readonly _tag: "Interrupt" }>) => Effect.Effect<void>) | undefined
}

export const turn = (session: Session, content: ReadonlyArray<UserBlock>, options: Options) =>
  Effect.scoped(Effect.gen(function*() {
    const input = options.input
    let interrupted = false
    const stop = Effect.suspend(() => {
      if (interrupted) return Effect.void
      interrupted = true
      Terminal.noteLine("Stopping the turn…", Terminal.dim)
      return session.cancel
    })
    if (input !== undefined) {
      const keys = yield* input.turn({
        typeAhead: options.onKey !== undefined,
        hint: options.onKey !== undefined ? "enter: queue · ctrl-s: steer now · esc: interrupt · shift-tab: mode" : ""
      })
      yield* Queue.take(keys).pipe(
        Effect.flatMap((key) => (key._tag === "Interrupt" ? stop : options.onKey?.(key) ?? Effect.void)),
        Effect.forever,
        Effect.forkScoped
      )
    }

    let outcome: TurnOutcome = { stopReason: "cancelled" }
    // The open question, asked at the keyboard beside the stream: a question the session stops
    // waiting for (its permission timeout) is taken back at once, even while the keyboard is read.
    const questions = yield* FiberMap.make<string>()
    // One question on the screen at a time (children may ask together).
    const oneAtATime = yield* Semaphore.make(1)
    const answer = (asked: PermissionAsked, on: Effect.Effect<Session, unknown> = Effect.succeed(session)) =>
      oneAtATime.withPermits(1)(Effect.gen(function*() {
        const target = yield* Effect.orElseSucceed(on, () => undefined)
        if (target === undefined) return
        // The turn is being stopped: nothing to wait for, the call is denied.
        if (input === undefined || interrupted) return yield* Effect.ignore(target.answer(asked.requestId, { outcome: "cancelled" }))
        options.view?.pause()
        if (asked.toolCall.content !== undefined && asked.toolCall.content.length > 0) options.view?.diffShown(asked.toolCall.toolCallId)
        const reply = yield* Question.ask(input, asked)
        if (reply === "stop") {
          // Cancelling the turn takes its question back (a denial); an answer would reach the
          // session before the cancel does, and the turn would go on with it.
          yield* stop
        } else {
          // The question may have been withdrawn meanwhile: then the answer is not needed.
          yield* Effect.ignore(target.answer(asked.requestId, reply))
        }
        if (!interrupted) options.view?.waiting()
      }))

    /** Subagents, by id: their agent's name, which their questions and notes carry. */
    const agents = new Map<string, string>()
    const note = (text: string) => {
      if (options.view !== undefined) Terminal.noteLine(text, Terminal.dim)
    }
    /** A `subagent` event of the turn or of one of its children: a line about it. */
    const subagent = (e: SessionEvent & { readonly type: "subagent" }) => {
      const data = e.data
      if (data.event === "spawned") {
        agents.set(data.id, data.agent ?? "agent")
        note(`↳ subagent ${data.agent ?? "agent"} started: ${(data.task ?? "").split("\n", 1)[0]!.slice(0, 100)}`)
      } else if (data.event === "result") {
        const said = data.error ?? data.answer ?? ""
        note(`↳ subagent ${agents.get(data.id) ?? data.id} ${data.state ?? "ended"}${said.length > 0 ? `: ${said.split("\n", 1)[0]!.slice(0, 100)}` : ""}`)
      }
    }
    /** An event of a child, published again in the turn: its questions are asked here, named after it. */
    const childEvent = (e: SessionEvent): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (e.type === "child_event") return yield* childEvent(e.data.event as SessionEvent)
        if (e.type === "subagent") return subagent(e)
        const key = (requestId: string) => `${e.sessionId}:${requestId}`
        if (e.type === "permission_asked") {
          const named = { ...e.data, toolCall: { ...e.data.toolCall, title: `${agents.get(e.sessionId) ?? "subagent"}: ${e.data.toolCall.title}` } }
          const on = options.child?.(e.sessionId) ?? Effect.fail("no child sessions here")
          yield* FiberMap.run(questions, key(e.data.requestId), answer(named, on), { startImmediately: true })
        } else if (e.type === "question_withdrawn") {
          yield* FiberMap.remove(questions, key(e.data.requestId))
        }
      })

    options.view?.begin()
    // Without a keyboard nobody can answer: the turn's questions are denied at once.
    yield* session.turn(content, input === undefined ? { unattended: true } : {}).pipe(
      Stream.runForEach((e) =>
        Effect.gen(function*() {
          options.show(e)
          if (e.type === "child_event") yield* childEvent(e.data.event as SessionEvent)
          else if (e.type === "subagent") subagent(e)
          if (e.type === "permission_asked") {
            yield* FiberMap.run(questions, e.data.requestId, answer(e.data), { startImmediately: true })
          } else if (e.type === "question_withdrawn" && (yield* FiberMap.has(questions, e.data.requestId))) {
            yield* FiberMap.remove(questions, e.data.requestId)
            Terminal.noteLine("The question was withdrawn (no answer in time): the call was not run.", Terminal.dim)
          }
          outcome = outcomeOf(e) ?? outcome
        })
      )
    )
    return { outcome, interrupted: interrupted || outcome.stopReason === "cancelled" } satisfies Presented
  }))
