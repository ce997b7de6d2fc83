// The plain-Node relay of `npm run bench`: the least a Node program must do to relay a model's
// stream over ACP. No imports, no dependencies, no validation, no log, no tools.
// Answers `initialize` and `session/new` like the floor; on `session/prompt` it POSTs a Chat
// Completions request to $OPENAI_BASE_URL/chat/completions with Node's built-in `fetch` (the
// client the vendors' SDKs use on Node; Skein's providers use `node:http`, through Effect's
// NodeHttpClient), reads the Server-Sent Events body, writes each `delta.content` as one
// `agent_message_chunk` update, and answers `end_turn` at `[DONE]`.
// Nothing is loaded or warmed before the prompt: a plain program pays for `fetch` (undici) on
// its first use.
const initializeResult = {
  protocolVersion: 1,
  agentCapabilities: {
    loadSession: false,
    promptCapabilities: { image: false, audio: false, embeddedContext: false },
    mcpCapabilities: { http: false, sse: false },
    sessionCapabilities: {}
  },
  authMethods: [],
  agentInfo: { name: "relay", title: "Relay", version: "0.0.0" }
}

const write = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n")
let sessions = 0

const prompt = async (message) => {
  const { sessionId, prompt: blocks } = message.params
  const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n")
  const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({
      model: process.env.BENCH_MODEL ?? "bench",
      messages: [{ role: "user", content: text }],
      stream: true,
      stream_options: { include_usage: true }
    })
  })
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes, { stream: true })
    let end
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = event.startsWith("data: ") ? event.slice(6) : ""
      if (data === "[DONE]") return write({ id: message.id, result: { stopReason: "end_turn" } })
      const content = data === "" ? undefined : JSON.parse(data).choices?.[0]?.delta?.content
      if (content) {
        write({ method: "session/update", params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: content } } } })
      }
    }
  }
  write({ id: message.id, result: { stopReason: "end_turn" } })
}

const answer = (message) => {
  if (message.method === "initialize") return write({ id: message.id, result: initializeResult })
  if (message.method === "session/new") return write({ id: message.id, result: { sessionId: `relay-session-${++sessions}` } })
  if (message.method === "session/prompt") {
    return prompt(message).catch((error) => write({ id: message.id, error: { code: -32603, message: String(error) } }))
  }
  if (message.id !== undefined) write({ id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } })
}

let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let newline
  while ((newline = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, newline)
    buffer = buffer.slice(newline + 1)
    if (line.trim().length > 0) answer(JSON.parse(line))
  }
})
process.stdin.on("end", () => process.exit(0))
