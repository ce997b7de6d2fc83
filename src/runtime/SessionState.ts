/**
 * A session's state as one value, and the pure step that changes it: which prompt runs when,
 * what a cancel stops, where steering goes, the settings, the open questions, the cost, when
 * the session went idle, whether it is closed. The actor (`SessionActor.ts`) feeds it its
 * messages and performs what comes back; tests drive it directly. No Effect, no I/O: a reply
 * or a question's asker is an opaque handle (a `Deferred`) the step only passes on.
 *
 * - Prompts run one at a time, in the order they were accepted; a closed session takes none.
 * - A turn is over when its loop is done *and* its presenter has let go (a presenter that runs
 *   the turn's stream lets go when the stream ends; a turn nobody presents has nobody to wait
 *   for). So whoever presents a turn finishes presenting it before the next one begins.
 * - A cancel interrupts the running turn and every prompt accepted before it: those start
 *   already cancelled (they end at once, as `cancelled`). Prompts accepted after it run.
 * - A presenter that lets go of a turn still queued leaves it unpresented: it still runs. One
 *   that lets go of the running turn withdraws its open questions (their askers hear nobody).
 * - Steering goes into the running turn until its last safe point has passed; otherwise it is a
 *   new turn nobody presents. What the turn never took becomes the next prompt, unless the
 *   turn was cancelled.
 * - A setting changes only once its change is logged (`Changed`); the same value is no change.
 *   A child session's mode may only be narrowed from the one it started in.
 * - A question goes to whoever presents the running turn; with nobody, the asker hears nobody
 *   at once. The first answer wins; an answer to no open question is `unknown_request`.
 */
import type * as Deferred from "effect/Deferred"
import type * as Fiber from "effect/Fiber"
import type { EphemeralBody, UsageShown } from "../log/Event.ts"
import type * as Models from "../providers/Models.ts"
import type { Capabilities } from "../session/ClientCalls.ts"
import { type SendResult, SessionError } from "../session/Protocol.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import type * as Usage from "./Usage.ts"
import { type Answer, isModeId, type ModeId, type UserBlock } from "../Vocabulary.ts"

/** Where a request's answer goes: every request of the protocol is answered with a `SendResult`. */
export type Reply = Deferred.Deferred<SendResult, SessionError>
/** Where a question's asker waits: `undefined` when nobody answers. */
export type Asker = Deferred.Deferred<Answer | undefined>

/** A prompt as it was sent: what a queued turn runs. */
interface Prompted {
  readonly content: ReadonlyArray<UserBlock>
  /** Whether someone presents it (runs its stream): then its questions wait for answers. */
  readonly presented: boolean
  readonly client?: Capabilities | undefined
  readonly by?: string | undefined
  readonly key?: string | undefined
  /** The caller's trace context (W3C `traceparent`), the parent of the turn's span. */
  readonly traceparent?: string | undefined
}

export interface Queued extends Prompted {
  readonly turn: number
  /** The cancel epoch it was accepted in: older than the state's means cancelled. */
  readonly epoch: number
}

/** A turn's loop (the model/tool loop, or a local command), once started. */
export type Loop = Fiber.Fiber<unknown, unknown>

interface Running {
  readonly turn: number
  readonly presented: boolean
  /** The cancel epoch it was accepted in. */
  readonly epoch: number
  readonly loop?: Loop | undefined
  /** Its loop has ended (`turn_end` logged). */
  readonly done: boolean
}

interface Steering {
  readonly turn: number
  readonly items: ReadonlyArray<ReadonlyArray<UserBlock>>
  /** False once the turn's last safe point has passed. */
  readonly open: boolean
}

interface Question {
  readonly requestId: string
  readonly turn: number
  readonly asker: Asker
}

interface Settings {
  readonly mode: ModeId
  /** The config options chosen so far (`model`, `thought_level`). */
  readonly config: ReadonlyMap<string, string>
}

/** What the step checks settings against; it never changes. */
export interface Limits {
  /** The models the session may switch to; without it, the model is fixed. */
  readonly models?: Models.Catalog | undefined
  /** The model when none was chosen. */
  readonly model?: string | undefined
  /** A child session's starting mode: its mode may only be narrowed from it. */
  readonly ceiling?: ModeId | undefined
}

export interface State {
  readonly limits: Limits
  /** Turns accepted so far (the last turn number given out). */
  readonly accepted: number
  readonly epoch: number
  readonly queue: ReadonlyArray<Queued>
  readonly running: Running | undefined
  readonly steering: Steering | undefined
  readonly settings: Settings
  readonly questions: ReadonlyArray<Question>
  /** Questions asked so far (their ids are `turn.n`). */
  readonly asked: number
  /** The session's cost so far (USD), when the model's price is known. */
  readonly spent: number
  /** What the last usage update showed (a loaded session's: derived from its log). */
  readonly shown: UsageShown | undefined
  /** When the session last finished its work (ms since the epoch, from the Clock). */
  readonly idleSince: number
  readonly closed: boolean
  /** Why the session was closed when that was not asked for (another Skein took it over). */
  readonly closedWith: SessionError | undefined
}

/** A config change, or a mode change (`id: "mode"`). */
export interface Change {
  readonly id: string
  readonly value: string
}

export type Message =
  | ({ readonly _tag: "Submit"; readonly reply?: Reply | undefined } & Prompted)
  | { readonly _tag: "Steer"; readonly content: ReadonlyArray<UserBlock>; readonly reply: Reply }
  | { readonly _tag: "Cancel" }
  /** The turn's loop started. */
  | { readonly _tag: "Looping"; readonly turn: number; readonly loop: Loop }
  /** The turn's loop ended (`interrupted`: by a cancel or a close), at `at`. */
  | { readonly _tag: "TurnDone"; readonly turn: number; readonly interrupted: boolean; readonly at: number }
  /** The turn's presenter let go of it. */
  | { readonly _tag: "Released"; readonly turn: number }
  /** The running turn takes its steering at a safe point (`final`: its last one, if nothing is taken). */
  | { readonly _tag: "TakeSteering"; readonly turn: number; readonly final: boolean }
  | { readonly _tag: "Configure"; readonly change: Change; readonly reply: Reply }
  /** A change was logged. */
  | { readonly _tag: "Changed"; readonly change: Change }
  | { readonly _tag: "Ask"; readonly turn: number; readonly body: (requestId: string) => EphemeralBody; readonly asker: Asker }
  | { readonly _tag: "Answer"; readonly requestId: string; readonly answer: Answer; readonly reply: Reply }
  /** The asker stopped waiting (its turn was cancelled, the wait timed out). */
  | { readonly _tag: "Withdraw"; readonly asker: Asker }
  /** A model call's cost. */
  | { readonly _tag: "Spend"; readonly usd: number }
  /** A usage update was shown. */
  | { readonly _tag: "Shown"; readonly usage: UsageShown }
  /** Another Skein took the session over. */
  | { readonly _tag: "Lose"; readonly error: SessionError }
  /** The session's scope is closing. */
  | { readonly _tag: "Close" }

export type Output =
  | { readonly _tag: "Reply"; readonly reply: Reply; readonly result: SendResult }
  | { readonly _tag: "Refuse"; readonly reply: Reply; readonly error: SessionError }
  /** Start this turn now; `cancelled` when a cancel came after it was accepted. */
  | { readonly _tag: "Start"; readonly turn: Queued; readonly cancelled: boolean }
  /** Interrupt the running turn's loop. */
  | { readonly _tag: "Interrupt"; readonly turn: number; readonly loop: Loop }
  /** Submit this content as a prompt nobody presents (steering the turn never took). */
  | { readonly _tag: "Resubmit"; readonly content: ReadonlyArray<UserBlock> }
  /** Log this change (then `Changed`), and answer `reply`. */
  | { readonly _tag: "Log"; readonly change: Change; readonly reply: Reply }
  /** Publish an event of turn `turn`. */
  | { readonly _tag: "Emit"; readonly turn: number; readonly body: EphemeralBody }
  /** Tell a question's asker its answer (`undefined`: nobody answers). */
  | { readonly _tag: "Tell"; readonly asker: Asker; readonly answer: Answer | undefined }
  /** Steering content for the running turn, taken now. */
  | { readonly _tag: "Steered"; readonly items: ReadonlyArray<ReadonlyArray<UserBlock>> }
  /** Close the session, saying why to whoever asks for it. */
  | { readonly _tag: "CloseSession"; readonly error: SessionError }

interface Step {
  readonly state: State
  readonly outputs: ReadonlyArray<Output>
}

/** Made at the first refusal, not as the module loads: an error takes its stack when it is made. */
let closedDefault: SessionError | undefined

export const initial = (options: {
  readonly turnsSoFar: number
  readonly settings: Settings
  readonly limits: Limits
  readonly now: number
  /** A loaded session's cost so far and last usage update (`Usage.restore`). */
  readonly usage?: Usage.Restored | undefined
}): State => ({
  limits: options.limits,
  accepted: options.turnsSoFar,
  epoch: 0,
  queue: [],
  running: undefined,
  steering: undefined,
  settings: options.settings,
  questions: [],
  asked: 0,
  spent: options.usage?.spent ?? 0,
  shown: options.usage?.shown,
  idleSince: options.now,
  closed: false,
  closedWith: undefined
})

const stay = (state: State, outputs: ReadonlyArray<Output> = []): Step => ({ state, outputs })

/** Starts the next queued turn when nothing runs; steering opens for a turn that will run. */
const next = (state: State): Step => {
  if (state.running !== undefined || state.queue.length === 0) return stay(state)
  const [head, ...rest] = state.queue
  const cancelled = head!.epoch < state.epoch || state.closed
  return stay(
    {
      ...state,
      queue: rest,
      running: { turn: head!.turn, presented: head!.presented, epoch: head!.epoch, done: false },
      steering: cancelled ? undefined : { turn: head!.turn, items: [], open: true }
    },
    [{ _tag: "Start", turn: head!, cancelled }]
  )
}

/** A turn is over once its loop is done and nobody presents it any more. */
const settle = (state: State): Step =>
  state.running !== undefined && state.running.done && !state.running.presented ? next({ ...state, running: undefined }) : stay(state)

const then = (first: Step, after: (state: State) => Step): Step => {
  const second = after(first.state)
  return { state: second.state, outputs: [...first.outputs, ...second.outputs] }
}

const accept = (state: State, prompt: Prompted): { readonly turn: number; readonly step: Step } => {
  const turn = state.accepted + 1
  const queued: Queued = {
    turn,
    content: prompt.content,
    presented: prompt.presented,
    ...(prompt.client !== undefined ? { client: prompt.client } : {}),
    ...(prompt.by !== undefined ? { by: prompt.by } : {}),
    ...(prompt.key !== undefined ? { key: prompt.key } : {}),
    ...(prompt.traceparent !== undefined ? { traceparent: prompt.traceparent } : {}),
    epoch: state.epoch
  }
  return { turn, step: next({ ...state, accepted: turn, queue: [...state.queue, queued] }) }
}

/** Whether steering sent now goes into the running turn (otherwise it starts a new one). */
export const steerable = (state: State): boolean =>
  state.steering !== undefined && state.steering.open && state.running?.turn === state.steering.turn && !state.running.done

/** Whether someone presents turn `turn` now (its questions wait for answers). */
export const presents = (state: State, turn: number): boolean => state.running?.turn === turn && state.running.presented

/** No turn left to run (the last one's presenter may still be finishing with it). */
export const resting = (state: State): boolean => state.queue.length === 0 && (state.running === undefined || state.running.done)

/** Whether nothing runs or waits. */
export const idle = (state: State): boolean => state.running === undefined && state.queue.length === 0

/** Why a request is refused now that the session is closed. */
export const closedError = (state: State): SessionError =>
  state.closedWith ?? (closedDefault ??= new SessionError({ reason: "closed", message: "The session is closed" }))

/** The model chosen (or the session's own). */
export const model = (state: State): string | undefined => state.settings.config.get("model") ?? state.limits.model

const invalid = (reason: "invalid_mode" | "invalid_config", message: string) => new SessionError({ reason, message })

/** Why a change may not be made, if it may not. */
const refusal = (state: State, change: Change): SessionError | undefined => {
  if (change.id === "mode") {
    if (!isModeId(change.value)) return invalid("invalid_mode", `Unknown mode "${change.value}"`)
    const ceiling = state.limits.ceiling
    if (ceiling !== undefined && Ceiling.broader(change.value, ceiling)) {
      return invalid("invalid_mode", `A child session may only be narrowed: it started in "${ceiling}", and "${change.value}" allows more`)
    }
    return undefined
  }
  if (change.id === "model") {
    const models = state.limits.models
    return models !== undefined && models.entries.some((e) => e.key === change.value) ? undefined : invalid("invalid_config", `Unknown model "${change.value}"`)
  }
  if (change.id === "thought_level") {
    const efforts = state.limits.models?.info(model(state))?.efforts ?? []
    return efforts.includes(change.value)
      ? undefined
      : invalid("invalid_config", `The model does not take the reasoning effort "${change.value}"${efforts.length > 0 ? ` (it takes ${efforts.join(", ")})` : ""}`)
  }
  return invalid("invalid_config", `Unknown config option "${change.id}"`)
}

const current = (settings: Settings, id: string): string | undefined => (id === "mode" ? settings.mode : settings.config.get(id))

const withdrawn = (question: Question, answered: boolean): Output => ({
  _tag: "Emit",
  turn: question.turn,
  body: { type: "question_withdrawn", data: { requestId: question.requestId, ...(answered ? { answered: true } : {}) } }
})

export const step = (state: State, message: Message): Step => {
  switch (message._tag) {
    case "Submit": {
      if (state.closed) return stay(state, message.reply === undefined ? [] : [{ _tag: "Refuse", reply: message.reply, error: closedError(state) }])
      const { turn, step: accepted } = accept(state, message)
      return message.reply === undefined ? accepted : { ...accepted, outputs: [{ _tag: "Reply", reply: message.reply, result: { turn } }, ...accepted.outputs] }
    }
    case "Steer": {
      if (state.closed) return stay(state, [{ _tag: "Refuse", reply: message.reply, error: closedError(state) }])
      if (steerable(state)) {
        const steering = state.steering!
        return stay({ ...state, steering: { ...steering, items: [...steering.items, message.content] } }, [
          { _tag: "Reply", reply: message.reply, result: { turn: steering.turn, steering: "injected" } }
        ])
      }
      const { turn, step: accepted } = accept(state, { content: message.content, presented: false })
      return { ...accepted, outputs: [{ _tag: "Reply", reply: message.reply, result: { turn, steering: "startedNewTurn" } }, ...accepted.outputs] }
    }
    case "Cancel": {
      // A turn whose loop has not started yet is interrupted once it has (`Looping`).
      const running = state.running
      const loop = running !== undefined && !running.done ? running.loop : undefined
      return stay({ ...state, epoch: state.epoch + 1 }, loop !== undefined ? [{ _tag: "Interrupt", turn: running!.turn, loop }] : [])
    }
    case "Looping": {
      const running = state.running
      if (running?.turn !== message.turn || running.done) return stay(state)
      // A cancel that came while the loop was being started.
      const cancelled = state.epoch > running.epoch || state.closed
      return stay({ ...state, running: { ...running, loop: message.loop } }, cancelled ? [{ _tag: "Interrupt", turn: running.turn, loop: message.loop }] : [])
    }
    case "TurnDone": {
      if (state.running?.turn !== message.turn) return stay(state)
      // Steering the turn never took becomes the next prompt; a cancel drops it.
      const left = state.steering?.turn === message.turn ? state.steering.items : []
      const ended = settle({ ...state, running: { turn: message.turn, presented: state.running.presented, epoch: state.running.epoch, done: true }, steering: undefined })
      const after = resting(ended.state) ? { ...ended.state, idleSince: message.at } : ended.state
      return stay(after, left.length > 0 && !message.interrupted ? [...ended.outputs, { _tag: "Resubmit", content: left.flat() }] : ended.outputs)
    }
    case "Released": {
      const running = state.running
      if (running?.turn === message.turn) {
        if (!running.presented) return stay(state)
        // Its open questions are withdrawn before their askers hear nobody: what an asker's turn
        // does next comes after the withdrawal.
        const left = state.questions.filter((q) => q.turn === running.turn)
        const abandoned: Array<Output> = running.done ? [] : left.flatMap((q): Array<Output> => [withdrawn(q, false), { _tag: "Tell", asker: q.asker, answer: undefined }])
        const released = running.done ? state : { ...state, questions: state.questions.filter((q) => q.turn !== running.turn) }
        return then(stay(released, abandoned), (s) => settle({ ...s, running: { ...running, presented: false } }))
      }
      return stay({ ...state, queue: state.queue.map((q) => (q.turn === message.turn ? { ...q, presented: false } : q)) })
    }
    case "TakeSteering": {
      const steering = state.steering
      if (steering === undefined || steering.turn !== message.turn) return stay(state, [{ _tag: "Steered", items: [] }])
      const open = !(message.final && steering.items.length === 0)
      return stay({ ...state, steering: { ...steering, items: [], open: steering.open && open } }, [{ _tag: "Steered", items: steering.items }])
    }
    case "Configure": {
      const refused = refusal(state, message.change)
      if (refused !== undefined) return stay(state, [{ _tag: "Refuse", reply: message.reply, error: refused }])
      if (current(state.settings, message.change.id) === message.change.value) return stay(state, [{ _tag: "Reply", reply: message.reply, result: {} }])
      return stay(state, [{ _tag: "Log", change: message.change, reply: message.reply }])
    }
    case "Changed": {
      const { id, value } = message.change
      if (id === "mode") return stay(isModeId(value) ? { ...state, settings: { ...state.settings, mode: value } } : state)
      return stay({ ...state, settings: { ...state.settings, config: new Map([...state.settings.config, [id, value]]) } })
    }
    case "Ask": {
      if (!presents(state, message.turn)) return stay(state, [{ _tag: "Tell", asker: message.asker, answer: undefined }])
      const requestId = `${message.turn}.${state.asked + 1}`
      const question: Question = { requestId, turn: message.turn, asker: message.asker }
      return stay({ ...state, asked: state.asked + 1, questions: [...state.questions, question] }, [{ _tag: "Emit", turn: message.turn, body: message.body(requestId) }])
    }
    case "Answer": {
      const question = state.questions.find((q) => q.requestId === message.requestId)
      if (question === undefined) {
        return stay(state, [{
          _tag: "Refuse",
          reply: message.reply,
          error: new SessionError({ reason: "unknown_request", message: `No question ${JSON.stringify(message.requestId.slice(0, 64))} is waiting for an answer` })
        }])
      }
      // The asker has its answer before anyone hears of it; the withdrawal only tells the other
      // places that show the question.
      return stay({ ...state, questions: state.questions.filter((q) => q !== question) }, [
        { _tag: "Tell", asker: question.asker, answer: message.answer },
        withdrawn(question, true),
        { _tag: "Reply", reply: message.reply, result: {} }
      ])
    }
    case "Withdraw": {
      const question = state.questions.find((q) => q.asker === message.asker)
      return question === undefined ? stay(state) : stay({ ...state, questions: state.questions.filter((q) => q !== question) }, [withdrawn(question, false)])
    }
    case "Spend":
      return stay({ ...state, spent: state.spent + message.usd })
    case "Shown":
      return stay({ ...state, shown: message.usage })
    case "Lose":
      return state.closedWith !== undefined ? stay(state) : stay({ ...state, closedWith: message.error }, [{ _tag: "CloseSession", error: message.error }])
    case "Close": {
      // Nothing more starts; the running turn's loop stops (its turn still ends, as cancelled).
      const running = state.running
      const loop = running !== undefined && !running.done ? running.loop : undefined
      return stay({ ...state, closed: true }, loop !== undefined ? [{ _tag: "Interrupt", turn: running!.turn, loop }] : [])
    }
  }
}
