/**
 * Live calls to the real APIs, one tiny prompt and one tool call each. They
 * run only when the matching key is set (never in the default suite):
 *
 *   OPENAI_API_KEY=… npx vitest run test/providers/live.test.ts
 *   ANTHROPIC_API_KEY=… npx vitest run test/providers/live.test.ts
 *
 * Models: SKEIN_LIVE_OPENAI_MODEL (default gpt-5-mini), SKEIN_LIVE_OPENAI_CHAT_MODEL
 * (default gpt-4.1-mini), SKEIN_LIVE_ANTHROPIC_MODEL (default claude-haiku-4-5).
 * The base URLs follow OPENAI_BASE_URL / ANTHROPIC_BASE_URL as usual.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Dialect } from "../../src/providers/Models.ts"
import type { StreamPart } from "../../src/providers/Provider.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as TempDir from "../support/TempDir.ts"
import * as D from "./support/Dialects.ts"

const live: ReadonlyArray<{ readonly dialect: Dialect; readonly key: string; readonly model: string }> = [
  { dialect: "openai-responses", key: "OPENAI_API_KEY", model: process.env.SKEIN_LIVE_OPENAI_MODEL ?? "gpt-5-mini" },
  { dialect: "openai-chat", key: "OPENAI_API_KEY", model: process.env.SKEIN_LIVE_OPENAI_CHAT_MODEL ?? "gpt-4.1-mini" },
  { dialect: "anthropic-messages", key: "ANTHROPIC_API_KEY", model: process.env.SKEIN_LIVE_ANTHROPIC_MODEL ?? "claude-haiku-4-5" }
]

for (const { dialect, key, model } of live) {
  describe.skipIf(process.env[key] === undefined || process.env[key] === "")(`live ${dialect} (${model})`, () => {
    const provider = Registry.resolve({ home: join(tmpdir(), "skein-live-no-home"), env: process.env, provider: dialect, model }).pipe(
      Effect.provide(TempDir.platform)
    )

    it.live("answers a tiny prompt with text, usage and a stop", () =>
      Effect.gen(function*() {
        const resolved = yield* provider
        const parts: Array<StreamPart> = yield* Stream.runCollect(resolved.provider.stream(D.request({
          model: resolved.model,
          tools: [],
          messages: [{ role: "user", content: [{ type: "text", text: "Reply with the single word: pong" }] }]
        })))
        const failure = parts.find((p) => p._tag === "Failure")
        assert.isUndefined(failure, JSON.stringify(failure))
        const text = parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : [])).join("")
        assert.match(text.toLowerCase(), /pong/)
        const usage = parts.find((p) => p._tag === "Usage")
        assert.isAbove(usage?._tag === "Usage" ? usage.usage.input : 0, 0)
        assert.deepStrictEqual(parts.at(-1), { _tag: "Finish", stop: "end_turn" })
      }), 60_000)

    it.live("calls a tool with JSON arguments", () =>
      Effect.gen(function*() {
        const resolved = yield* provider
        const parts = yield* Stream.runCollect(resolved.provider.stream(D.request({
          model: resolved.model,
          messages: [{ role: "user", content: [{ type: "text", text: "Use the read tool to read the file notes.txt. Do not answer without it." }] }]
        })))
        const call = parts.find((p) => p._tag === "ToolCall")
        assert.deepStrictEqual(call?._tag === "ToolCall" ? [call.name, call.args] : parts, ["read", { path: "notes.txt" }])
        assert.deepStrictEqual(parts.at(-1), { _tag: "Finish", stop: "tool_use" })
      }), 60_000)
  })
}
