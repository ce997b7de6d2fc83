// A minimal ACP agent built on the official SDK (@agentclientprotocol/sdk, AgentApp), used by
// `npm run bench` as a baseline. It answers `initialize` and `session/new`, and answers
// `session/prompt` by relaying N text deltas, each as one `session/update`
// (`agent_message_chunk`, text "x") sent with the SDK's `notify` and awaited, as an SDK agent
// relays a model's stream; then it responds `end_turn`.
// N: a prompt text of the form `deltas:N`, else $BENCH_DELTAS, else 1. Exits when stdin closes.
import { agent, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk"
import { Readable, Writable } from "node:stream"

const defaultDeltas = Number.parseInt(process.env.BENCH_DELTAS ?? "", 10) || 1
const deltasOf = (prompt) => {
  const block = prompt.find((b) => b.type === "text")
  const m = block === undefined ? null : /^deltas:(\d+)$/.exec(block.text.trim())
  return m === null ? defaultDeltas : Number(m[1])
}

let sessions = 0
const app = agent({ name: "sdk-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities: { image: false, audio: false, embeddedContext: false },
      mcpCapabilities: { http: false, sse: false },
      sessionCapabilities: {}
    },
    authMethods: [],
    agentInfo: { name: "sdk-agent", title: "SDK agent", version: "0.0.0" }
  }))
  .onRequest("session/new", () => ({ sessionId: `sdk-session-${++sessions}` }))
  .onRequest("session/prompt", async ({ params, client }) => {
    const n = deltasOf(params.prompt)
    for (let i = 0; i < n; i++) {
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } }
      })
    }
    return { stopReason: "end_turn" }
  })

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)))
connection.closed.then(() => process.exit(0), () => process.exit(0))
