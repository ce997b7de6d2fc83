/**
 * The spans and metrics of a session's work, named and attributed after OpenTelemetry's GenAI
 * semantic conventions where they have a name for it:
 *
 * - `invoke_agent <agent>`: a turn (`skein` for a top-level session, the agent's name for a
 *   child). Its parent is the client's `traceparent` when it sent one (`_meta.traceparent` on
 *   `session/prompt`), a child's is the parent's tool call that started or prompted it;
 *   otherwise it starts a trace.
 * - `chat <model>`: a model call (`gen_ai.provider.name`, `gen_ai.request.model`, tokens in and
 *   out, the session's cost so far when the model's price is known).
 * - `execute_tool <tool>`: a tool call, with how it ended (`ok`, `error`, `denied`).
 * - `skein.permit`: the permission gate's decision on a call (under its tool call, or under
 *   `skein.spawn` for an isolated workspace), with the verdict.
 * - `skein.permission`: the wait for an answer to a permission question (under the decision
 *   that asked it), with the answer.
 * - `skein.compaction`: a compaction of the conversation; its summary call is a `chat` under it.
 * - `skein.spawn`: a child session started by a tool call (the agent, the workspace); the
 *   child's turn is under the same tool call.
 *
 * The turn is the root of what it does, as in the spine: `invoke_agent` ⊃ `chat`,
 * `skein.compaction` ⊃ `chat`, and `execute_tool` ⊃ `skein.permit` ⊃ `skein.permission`.
 * `skein.permit`, `skein.compaction` and `skein.spawn` are named where they are made
 * (`Effect.fn` in `runtime/Gate.ts`, `Compaction.ts`, `Children.ts`); this module annotates them.
 *
 * Metrics: `skein.turns` (by stop reason), `skein.tokens` (by `gen_ai.token.type`),
 * `skein.tool.calls.failed` (by tool and outcome).
 *
 * Attributes are ids, names, numbers and outcomes; no prompt, argument, answer or output text.
 * The few strings that come from outside (a model name, a tool name the model made up) pass
 * through the secrets' redaction and are cut short. Without an exporter (no
 * `OTEL_EXPORTER_OTLP_ENDPOINT`) these are Effect's in-memory spans and metrics: nothing leaves.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Tracer from "effect/Tracer"
import * as Secrets from "../secrets/Secrets.ts"
import type { StopReason, Usage } from "../Vocabulary.ts"
import * as TraceContext from "./TraceContext.ts"

/** A string from outside, as an attribute: redacted, at most 200 characters. */
const clean = (value: string): string => {
  const redacted = Secrets.redact(value)
  return redacted.length > 200 ? `${redacted.slice(0, 200)}…` : redacted
}

/** `gen_ai.provider.name` for a wire dialect. */
const providerName = (dialect: string): string =>
  dialect.startsWith("openai-") ? "openai" : dialect.startsWith("anthropic-") ? "anthropic" : dialect

const turns = Metric.counter("skein.turns", { description: "Turns ended, by stop reason", incremental: true })
const tokens = Metric.counter("skein.tokens", { description: "Model tokens, by gen_ai.token.type (input, output)", incremental: true })
const toolFailures = Metric.counter("skein.tool.calls.failed", { description: "Tool calls that failed or were denied", incremental: true })

export interface TurnInfo {
  readonly sessionId: string
  readonly turn: number
  /** The agent a child session runs as. */
  readonly agent?: string | undefined
  /** A child session's parent session. */
  readonly parentSessionId?: string | undefined
  /** The caller's trace context (W3C `traceparent`): the turn's parent. */
  readonly traceparent?: string | undefined
}

/** Runs a turn in its span. */
export const turn = (info: TurnInfo) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const parent = TraceContext.parse(info.traceparent)
  const agent = clean(info.agent ?? "skein")
  return Effect.withSpan(self, `invoke_agent ${agent}`, {
    kind: "internal",
    ...(parent !== undefined ? { parent: Tracer.externalSpan(parent) } : { root: true }),
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agent,
      "gen_ai.conversation.id": info.sessionId,
      "skein.session.id": info.sessionId,
      "skein.turn": info.turn,
      ...(info.parentSessionId !== undefined ? { "skein.parent.session.id": info.parentSessionId } : {})
    }
  })
}

/** The turn ended (in its span): its stop reason, and whether it failed. */
export const turnEnded = (outcome: { readonly stopReason: StopReason; readonly error?: string | undefined }): Effect.Effect<void> =>
  Effect.andThen(
    Effect.annotateCurrentSpan({ "skein.stop_reason": outcome.stopReason, "skein.turn.failed": outcome.error !== undefined }),
    Metric.update(Metric.withAttributes(turns, { "skein.stop_reason": outcome.stopReason, "skein.turn.failed": String(outcome.error !== undefined) }), 1)
  )

export interface ModelCallInfo {
  /** The provider's wire dialect (`Provider.name`). */
  readonly dialect: string
  readonly model?: string | undefined
  readonly call: number
}

/** What a model call's span reads of its result. */
export interface CallResult {
  readonly usage: Usage | undefined
  readonly stop: string
  readonly failure: string | undefined
}

/** Runs a model call in its span, and counts its tokens. */
export const modelCall = (info: ModelCallInfo) => <A extends CallResult, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const provider = providerName(info.dialect)
  const model = info.model === undefined ? undefined : clean(info.model)
  const base = { "gen_ai.provider.name": provider, ...(model !== undefined ? { "gen_ai.request.model": model } : {}) }
  return self.pipe(
    Effect.tap((result) => {
      const usage = result.usage
      return Effect.andThen(
        Effect.annotateCurrentSpan({
          "gen_ai.response.finish_reasons": [result.stop],
          ...(usage !== undefined
            ? {
              "gen_ai.usage.input_tokens": usage.input,
              "gen_ai.usage.output_tokens": usage.output,
              ...(usage.cached !== undefined ? { "gen_ai.usage.cache_read.input_tokens": usage.cached } : {})
            }
            : {}),
          ...(result.failure !== undefined ? { "error.type": "provider_error" } : {})
        }),
        usage === undefined ? Effect.void : Effect.andThen(
          Metric.update(Metric.withAttributes(tokens, { ...base, "gen_ai.token.type": "input" }), usage.input),
          Metric.update(Metric.withAttributes(tokens, { ...base, "gen_ai.token.type": "output" }), usage.output)
        )
      )
    }),
    Effect.withSpan(`chat ${model ?? provider}`, {
      kind: "client",
      attributes: { ...base, "gen_ai.system": provider, "gen_ai.operation.name": "chat", "skein.provider.dialect": info.dialect, "skein.model_call": info.call }
    })
  )
}

/** The session's cost so far (USD), on the span of the call that added to it. */
export const cost = (usd: number | undefined): Effect.Effect<void> =>
  usd === undefined ? Effect.void : Effect.annotateCurrentSpan("skein.cost.usd", usd)

/** Runs a tool call in its span. `known`: the tool exists (a made-up name is shown as `unknown`). */
export const toolCall = (call: { readonly id: string; readonly name: string; readonly known: boolean }) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const name = call.known ? clean(call.name) : "unknown"
  return Effect.withSpan(self, `execute_tool ${name}`, {
    kind: "internal",
    attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": clean(call.id) }
  })
}

/** How the tool call ended (in its span); a failure or a denial is counted. */
export const toolEnded = (name: string, known: boolean, outcome: "ok" | "error" | "denied"): Effect.Effect<void> => {
  const annotate = Effect.annotateCurrentSpan("skein.tool.outcome", outcome)
  return outcome === "ok"
    ? annotate
    : Effect.andThen(annotate, Metric.update(Metric.withAttributes(toolFailures, { "gen_ai.tool.name": known ? clean(name) : "unknown", "skein.tool.outcome": outcome }), 1))
}

/** Runs the wait for a permission answer in its span; `outcome` names what came of it. */
export const permission = <A>(tool: string, outcome: (answer: A) => string) => <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  self.pipe(
    Effect.tap((answer) => Effect.annotateCurrentSpan("skein.permission.outcome", clean(outcome(answer)))),
    Effect.withSpan("skein.permission", { kind: "internal", attributes: { "gen_ai.tool.name": clean(tool) } })
  )

/** In a compaction's span (`skein.compaction`): what started it, and what came of it. */
export const compaction = <A extends { readonly _tag: string }, E, R>(self: Effect.Effect<A, E, R>, trigger: string): Effect.Effect<A, E, R> =>
  Effect.andThen(
    Effect.annotateCurrentSpan("skein.compaction.trigger", trigger),
    Effect.tap(self, (outcome) => Effect.annotateCurrentSpan("skein.compaction.outcome", outcome._tag))
  )

/**
 * In the gate's span (`skein.permit`): the tool, and the verdict — `allow`, `allow_read_only`
 * (allowed confined to reading) or `deny`.
 */
export const permit = <A extends { readonly _tag: "allow" | "deny"; readonly readOnly?: true | undefined }, E, R>(
  self: Effect.Effect<A, E, R>,
  call: { readonly name: string }
): Effect.Effect<A, E, R> =>
  Effect.andThen(
    Effect.annotateCurrentSpan("gen_ai.tool.name", clean(call.name)),
    Effect.tap(self, (verdict) =>
      Effect.annotateCurrentSpan("skein.permit.verdict", verdict._tag === "deny" ? "deny" : verdict.readOnly === true ? "allow_read_only" : "allow"))
  )

/** In a spawn's span (`skein.spawn`): the agent asked for and the workspace. */
export const spawn = (request: { readonly agent?: string | undefined; readonly workspace?: string | undefined }): Effect.Effect<void> =>
  Effect.annotateCurrentSpan({ "gen_ai.agent.name": clean(request.agent ?? "general"), "skein.spawn.workspace": request.workspace ?? "shared" })
