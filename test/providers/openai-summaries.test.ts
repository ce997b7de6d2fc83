/**
 * OpenAI refuses reasoning summaries to organizations it has not verified (HTTP 400,
 * `param: "reasoning.summary"`). The Responses dialect then asks again without them, at once,
 * and keeps not asking for that model: the model still answers, with no thoughts shown.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

const spec = D.specs.find((s) => s.dialect === "openai-responses")!
const unverified = {
  status: 400,
  body: JSON.stringify({
    error: {
      message: "Your organization must be verified to generate reasoning summaries.",
      type: "invalid_request_error",
      param: "reasoning.summary",
      code: "unsupported_value"
    }
  })
}

describe("openai-responses: reasoning summaries refused", () => {
  it.live("asks again without summaries, and keeps not asking for them", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue(unverified, { file: "openai-responses/text.sse" }, { file: "openai-responses/text.sse" })
      const provider = yield* D.provider(spec, server.url)
      const first = yield* D.collect(provider)
      assert.deepStrictEqual(first.at(-1), { _tag: "Finish", stop: "end_turn" })
      assert.strictEqual(first.filter((p) => p._tag === "Failure").length, 0)
      const second = yield* D.collect(provider)
      assert.deepStrictEqual(second.at(-1), { _tag: "Finish", stop: "end_turn" })
      const sent = server.requests.map((r) => r.body.reasoning)
      assert.strictEqual(sent.length, 3)
      assert.strictEqual(sent[0].summary, "auto")
      assert.isUndefined(sent[1].summary)
      assert.isUndefined(sent[2].summary)
    })))

  it.live("any other 400 is reported, not retried", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ status: 400, body: JSON.stringify({ error: { message: "bad tool schema", type: "invalid_request_error", param: "tools[0]" } }) })
      const provider = yield* D.provider(spec, server.url)
      const parts = yield* D.collect(provider)
      assert.strictEqual(parts.at(-1)?._tag, "Failure")
      assert.strictEqual(server.requests.length, 1)
    })))
})
