// A minimal ACP agent built on the official SDK (@agentclientprotocol/sdk, AgentApp), used by
// `npm run bench` as a second baseline: it answers `initialize` and `session/new` and
// nothing else. Exits when stdin closes.
import { agent, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk"
import { Readable, Writable } from "node:stream"

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
  .onRequest("session/new", () => ({ sessionId: "sdk-session" }))
  .onRequest("session/prompt", () => ({ stopReason: "end_turn" }))

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)))
connection.closed.then(() => process.exit(0), () => process.exit(0))
