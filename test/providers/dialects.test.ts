/**
 * Each HTTP dialect against recorded SSE fixtures served on 127.0.0.1: text,
 * reasoning, single and parallel tool calls, usage, bad tool arguments, an
 * error mid-stream, and what each sends on the wire. The same expectations
 * hold for all three, except where the wire formats differ (ids, signatures).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { StreamPart } from "../../src/providers/Provider.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

describe.each(D.specs)("$dialect", (spec) => {
  const serve = (...replies: ReadonlyArray<SseServer.Reply>) =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue(...replies)
      const provider = yield* D.provider(spec, server.url)
      return { server, provider }
    })

  it.live("streams text, then usage, then the stop", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* serve({ file: `${spec.dialect}/text.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts, [D.text("Hello"), D.text(" world"), D.usage, { _tag: "Finish", stop: "end_turn" }])
      assert.strictEqual(server.requests.length, 1)
      const sent = server.requests[0]!
      assert.strictEqual(sent.method, "POST")
      assert.strictEqual(sent.url, spec.path)
      assert.strictEqual(sent.headers[spec.auth[0]], spec.auth[1])
      assert.strictEqual(sent.body.model, spec.model)
      assert.strictEqual(sent.body.stream, true)
    })))

  it.live("streams reasoning as thoughts, with what the dialect needs carried back", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* serve({ file: `${spec.dialect}/reasoning.sse` })
      const parts = yield* D.collect(provider)
      const thinking = parts.filter((p) => p._tag === "ThinkingDelta")
      assert.strictEqual(thinking.map((p) => p.text).join(""), "Let me think.")
      const signatures = thinking.flatMap((p) => (p.signature !== undefined ? [p.signature] : []))
      assert.deepStrictEqual(signatures, spec.signature === undefined ? [] : [spec.signature])
      // Thinking comes first, then the answer.
      const firstText = parts.findIndex((p) => p._tag === "TextDelta")
      assert.isTrue(parts.findIndex((p) => p._tag === "ThinkingDelta") < firstText)
      assert.deepStrictEqual(parts.slice(firstText), [D.text("Done."), D.usage, { _tag: "Finish", stop: "end_turn" }])
    })))

  it.live("a single tool call, its arguments assembled from deltas", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* serve({ file: `${spec.dialect}/tool.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts, [
        { _tag: "ToolCall", id: spec.toolIds[0], name: "read", args: { path: "notes.txt" } },
        D.usage,
        { _tag: "Finish", stop: "tool_use" }
      ])
    })))

  it.live("parallel tool calls, in order", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* serve({ file: `${spec.dialect}/parallel.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts, [
        { _tag: "ToolCall", id: spec.toolIds[0], name: "read", args: { path: "a.txt" } },
        { _tag: "ToolCall", id: spec.toolIds[1], name: "read", args: { path: "b.txt" } },
        D.usage,
        { _tag: "Finish", stop: "tool_use" }
      ])
    })))

  it.live("arguments that are not JSON arrive as the raw string (the tool reports them), never a crash", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* serve({ file: `${spec.dialect}/bad-args.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts[0], { _tag: "ToolCall", id: spec.toolIds[0], name: "read", args: "{\"path\": notes.txt" })
      assert.deepStrictEqual(parts.at(-1), { _tag: "Finish", stop: "tool_use" })
    })))

  it.live("an error event mid-stream ends the call with a Failure after the text, without retrying", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* serve({ file: `${spec.dialect}/error.sse` }, { file: `${spec.dialect}/text.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts.slice(0, -1), [D.text("Hel")])
      const last = parts.at(-1)!
      assert.strictEqual(last._tag, "Failure")
      assert.match((last as Extract<StreamPart, { _tag: "Failure" }>).message, /server error/)
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("sends the system prompt, the tools and the history in the dialect's shape", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* serve({ file: `${spec.dialect}/text.sse` })
      yield* D.collect(
        provider,
        D.request({
          messages: [
            { role: "user", content: [{ type: "text", text: "read it" }] },
            {
              role: "assistant",
              parts: [
                { type: "thinking", text: "hmm", ...(spec.signature !== undefined ? { signature: spec.signature } : {}) },
                { type: "text", text: "Reading." },
                { type: "tool_call", id: spec.toolIds[0], name: "read", args: { path: "notes.txt" } }
              ]
            },
            { role: "tool", id: spec.toolIds[0], name: "read", ok: true, content: "Hello notes" }
          ]
        })
      )
      const body = server.requests[0]!.body
      const wire = JSON.stringify(body)
      assert.include(wire, "You are a test.")
      assert.include(wire, "Reading.")
      assert.include(wire, "Hello notes")
      assert.include(wire, "notes.txt")
      assert.notInclude(wire, D.SECRET)
      if (spec.dialect === "openai-chat") {
        assert.deepStrictEqual(body.messages[0], { role: "system", content: "You are a test." })
        assert.deepStrictEqual(body.stream_options, { include_usage: true })
        assert.strictEqual(body.tools[0].function.name, "read")
        assert.deepStrictEqual(body.messages[2].tool_calls[0].function, { name: "read", arguments: "{\"path\":\"notes.txt\"}" })
        assert.deepStrictEqual(body.messages[3], { role: "tool", tool_call_id: "call_1", content: "Hello notes" })
      } else if (spec.dialect === "openai-responses") {
        assert.strictEqual(body.store, false)
        assert.strictEqual(body.instructions, "You are a test.")
        assert.deepStrictEqual(body.include, ["reasoning.encrypted_content"])
        assert.strictEqual(body.tools[0].name, "read")
        assert.deepStrictEqual(body.input.map((i: any) => i.type ?? i.role), ["user", "reasoning", "assistant", "function_call", "function_call_output"])
        assert.strictEqual(body.input[1].encrypted_content, "gAAAAB-encrypted-1")
        assert.deepStrictEqual(body.input[1].summary, [{ type: "summary_text", text: "hmm" }])
      } else {
        assert.deepStrictEqual(body.system, [{ type: "text", text: "You are a test.", cache_control: { type: "ephemeral" } }])
        assert.deepStrictEqual(body.tools[0].cache_control, { type: "ephemeral" })
        assert.strictEqual(typeof body.max_tokens, "number")
        assert.deepStrictEqual(body.messages.map((m: any) => m.role), ["user", "assistant", "user"])
        assert.deepStrictEqual(body.messages[1].content.map((b: any) => b.type), ["thinking", "text", "tool_use"])
        assert.strictEqual(body.messages[1].content[0].signature, spec.signature)
        const result = body.messages[2].content[0]
        assert.deepStrictEqual(result, { type: "tool_result", tool_use_id: "toolu_1", content: "Hello notes", cache_control: { type: "ephemeral" } })
        // The tool loop's last assistant turn starts with a signed thinking block, so thinking stays on.
        assert.strictEqual(body.thinking?.type, "enabled")
      }
    })))

  it.live("images go to models that accept them, and become a note for those that do not", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: `${spec.dialect}/text.sse` }, { file: `${spec.dialect}/text.sse` })
      const withImage = D.request({
        messages: [{ role: "user", content: [{ type: "text", text: "what is this" }, { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }] }]
      })
      const model = (images: boolean) => new Map([[spec.model, { id: spec.model, efforts: [], reasoning: false, images }]])
      yield* D.collect(yield* D.provider(spec, server.url, { models: model(true) }), withImage)
      yield* D.collect(yield* D.provider(spec, server.url, { models: model(false) }), withImage)
      const [accepted, refused] = server.requests.map((r) => JSON.stringify(r.body))
      assert.include(accepted, "iVBORw0KGgo=")
      assert.notInclude(refused, "iVBORw0KGgo=")
      assert.include(refused, "does not accept images")
    })))
})
