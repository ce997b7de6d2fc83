/**
 * Prompts queued on one session are answered in the order they arrived, and no update of a
 * turn is written while the prompt before it is still unanswered: a client can always tell
 * which prompt an update belongs to. Driven in-process, with many prompts queued at once so
 * that later turns run while earlier prompts are being answered.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import { serve } from "../../src/server/AcpServer.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"
import * as TempDir from "../support/TempDir.ts"

const PROMPTS = 8
const ROUNDS = 25
const SLOW = "1 millis"

describe("prompt order", () => {
  it.live("answers and updates of queued prompts never overtake each other", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const cwd = join(base, "ws")
      mkdirSync(cwd)
      const turns = Array.from({ length: PROMPTS * ROUNDS }, (_, i) => ({ calls: [[{ text: `t${i % PROMPTS}` }]] }))
      const script = yield* Scripted.parse(JSON.stringify({ turns }), "order.json")
      const mt = yield* MemoryTransport.make
      // A client that reads slowly: the writer falls behind, and handlers wait for queue space.
      const slow = { ...mt.transport, write: (chunk: string) => Effect.andThen(Effect.sleep(SLOW), mt.transport.write(chunk)) }
      yield* serve(slow, { version: "test" }).pipe(
        Effect.provide(Skein.layer({ home: join(base, "home"), script })),
        Effect.forkChild
      )
      yield* mt.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1 } })
      yield* mt.next
      yield* mt.send({ jsonrpc: "2.0", id: "new", method: "session/new", params: { cwd, mcpServers: [] } })
      let created = (yield* mt.next) as any
      while (created.id !== "new") created = yield* mt.next
      const sessionId = created.result.sessionId

      for (let round = 0; round < ROUNDS; round++) {
        const ids = Array.from({ length: PROMPTS }, (_, k) => `r${round}p${k}`)
        yield* mt.send(...ids.map((id) => ({
          jsonrpc: "2.0",
          id,
          method: "session/prompt",
          params: { sessionId, prompt: [{ type: "text", text: id }] }
        })))
        // What the client sees: each chunk must belong to the first prompt not yet answered.
        let open = 0
        while (open < PROMPTS) {
          const message = (yield* mt.next) as any
          if (message.id === ids[open]) {
            assert.deepStrictEqual(message.result, { stopReason: "end_turn" })
            open++
          } else if (message.method === "session/update" && message.params.update.sessionUpdate === "agent_message_chunk") {
            assert.strictEqual(message.params.update.content.text, `t${open}`, `round ${round}: a chunk while ${ids[open]} is the open prompt`)
          } else if (message.id !== undefined) {
            assert.fail(`round ${round}: ${message.id} answered while ${ids[open]} is still open`)
          }
        }
      }
    }).pipe(Effect.provide(TempDir.platform)))
})
