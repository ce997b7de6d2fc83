/**
 * `acp/Blocks.ts`, the one place ACP content blocks and Skein's user blocks meet: every user
 * block goes to ACP and back unchanged; an ACP block reads as text as the same block in a prompt
 * reads to the model (an embedded resource with its uri, a blob by its uri, audio as `[audio]`),
 * and an external agent's output is read that way too (`ExternalFold`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Blocks from "../../src/acp/Blocks.ts"
import type * as Content from "../../src/acp/Content.ts"
import * as Fold from "../../src/agents/ExternalFold.ts"
import { promptText, type UserBlock } from "../../src/Vocabulary.ts"

const users: ReadonlyArray<UserBlock> = [
  { type: "text", text: "hello" },
  { type: "resource_link", uri: "file:///a.ts", name: "a.ts", mimeType: "text/plain", title: "A", description: "the a", size: 12 },
  { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png", uri: "file:///p.png" },
  { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
  { type: "resource", uri: "file:///b.md", mimeType: "text/markdown", text: "# B" },
  { type: "resource", uri: "file:///c.bin", blob: "AAEC" }
]

describe("acp/Blocks", () => {
  it("every user block goes to ACP and back unchanged", () => {
    for (const block of users) assert.deepStrictEqual(Blocks.toUserBlock(Blocks.fromUserBlock(block)), block)
  })

  it("an ACP block reads as the same block of a prompt reads to the model; audio as [audio]", () => {
    for (const block of users) assert.strictEqual(Blocks.text(Blocks.fromUserBlock(block)), promptText([block]))
    assert.strictEqual(Blocks.text({ type: "resource", resource: { uri: "file:///b.md", text: "# B" } }), '<resource uri="file:///b.md">\n# B\n</resource>')
    const audio: Content.ContentBlock = { type: "audio", data: "AAA=", mimeType: "audio/wav" }
    assert.strictEqual(Blocks.toUserBlock(audio), undefined)
    assert.strictEqual(Blocks.text(audio), "[audio]")
  })

  it("an external agent's tool output with an embedded resource reads with its uri", () => {
    let state = Fold.initial("codex", 1, "/work")
    const outputs: Array<Fold.Output> = []
    const feed = (input: Fold.Input) => {
      const [next, out] = Fold.step(state, input)
      state = next
      outputs.push(...out)
    }
    feed({ _tag: "Update", readOnly: false, update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read b.md", kind: "read", status: "in_progress" } })
    feed({
      _tag: "Update",
      readOnly: false,
      update: {
        sessionUpdate: "tool_call_update",
        toolCallId: "t1",
        status: "completed",
        content: [{ type: "content", content: { type: "resource", resource: { uri: "file:///b.md", text: "# B" } } }]
      }
    })
    const result = outputs.flatMap((o) => (o._tag === "Canonical" && o.body.type === "tool_result" ? [o.body.data.content] : []))
    assert.deepStrictEqual(result, ['<resource uri="file:///b.md">\n# B\n</resource>'])
  })
})
