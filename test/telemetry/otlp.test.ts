/**
 * OpenTelemetry end to end: the built agent, with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a
 * local OTLP/HTTP receiver (JSON protocol), runs a turn that reads a file, writes one (asking
 * permission) and starts a child, then a turn that compacts the conversation; when it exits,
 * the receiver holds the turn's spans under the client's `traceparent`, nested as the spine
 * reads (the turn ⊃ its model calls; the turn ⊃ each tool call ⊃ the gate's decision ⊃ the wait
 * for an answer; the spawn and the child's turn under the parent's `spawn_agent` call; the
 * compaction ⊃ its summary call), with their attributes — and no prompt text or secret anywhere
 * in what was sent.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, type Script, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

interface Received {
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
}

const receivers: Array<http.Server> = []
afterEach(() => {
  for (const server of receivers.splice(0)) server.close()
})

/** An OTLP/HTTP receiver on a free loopback port: it keeps every request and answers `{}`. */
const receiver = async () => {
  const received: Array<Received> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, text: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  receivers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

type Attribute = { readonly key: string; readonly value: Record<string, unknown> }
interface Span {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly attributes: Record<string, unknown>
}

const attributeValue = (value: Record<string, unknown>): unknown => {
  if ("stringValue" in value) return value["stringValue"]
  if ("intValue" in value) return Number(value["intValue"])
  if ("doubleValue" in value) return value["doubleValue"]
  if ("boolValue" in value) return value["boolValue"]
  if ("arrayValue" in value) return ((value["arrayValue"] as { values?: Array<Record<string, unknown>> }).values ?? []).map(attributeValue)
  return value
}
const attributes = (list: ReadonlyArray<Attribute> | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, attributeValue(a.value)]))

const spansOf = (received: ReadonlyArray<Received>): Array<Span> =>
  received.filter((r) => r.path === "/v1/traces").flatMap((r) =>
    (JSON.parse(r.text).resourceSpans as Array<any>).flatMap((rs) =>
      (rs.scopeSpans as Array<any>).flatMap((ss) =>
        (ss.spans as Array<any>).map((s) => ({
          name: s.name,
          traceId: s.traceId,
          spanId: s.spanId,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
          attributes: attributes(s.attributes)
        })))))

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const CLIENT_SPAN = "00f067aa0ba902b7"
const SECRET = "sk-ant-api03-Zq8vX2mN5pL7rT9wY1bC3dF6hJ4kM0nQ"
const PROMPT_WORD = "Xylophonic-prompt-marker"

const script: Script = {
  turns: [{
    calls: [
      [{ text: "Reading." }, call("read", { path: "notes.txt" }, "r1"), call("spawn_agent", { task: "Check the notes", agent: "explorer" }, "s1"), { usage: { input: 1200, output: 40 } }],
      [call("write", { path: "out.txt", content: `key ${SECRET}\n` }, "w1"), { usage: { input: 1300, output: 50 } }],
      [call("wait_agent", {}, "wa")],
      [{ text: "Done." }, { usage: { input: 1400, output: 20 } }]
    ]
  }],
  agents: { explorer: { turns: [{ calls: [[{ text: "The notes say hi." }, { usage: { input: 10, output: 3 } }]] }] } }
}

describe("telemetry: OTLP export", () => {
  it("exports a turn's spans under the client's traceparent, a child's under its spawn call, with GenAI attributes and no secrets", async () => {
    const { url, received } = await receiver()
    const agent = await agents.ready({
      script,
      files: { "notes.txt": "hi\n" },
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_HEADERS: "x-receiver-token=abc%20def",
        OTEL_SERVICE_NAME: "skein-under-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci,service.name=ignored",
        ANTHROPIC_API_KEY: SECRET
      }
    })
    const sessionId = await agent.newSession()
    const response = await agent.requestRaw("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: `${PROMPT_WORD}: read the notes; the key is ${SECRET}` }],
      _meta: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` }
    }, 20_000)
    expect(response.result).toEqual({ stopReason: "end_turn" })
    // A second turn compacts the conversation (a local command: one summary call, no model turn).
    const compacted = await agent.requestRaw("session/prompt", { sessionId, prompt: [{ type: "text", text: "/compact" }] }, 20_000)
    expect(compacted.result).toEqual({ stopReason: "end_turn" })
    agent.closeStdin()
    expect((await agent.waitExit(10_000)).code).toBe(0)
    expectClean(agent)

    // Every request carried the configured header and the JSON protocol.
    const traces = received.filter((r) => r.path === "/v1/traces")
    expect(traces.length).toBeGreaterThan(0)
    for (const r of received) {
      expect(r.headers["x-receiver-token"]).toBe("abc def")
      expect(r.headers["content-type"]).toContain("application/json")
    }
    const resource = attributes(JSON.parse(traces[0]!.text).resourceSpans[0].resource.attributes)
    expect(resource["service.name"]).toBe("skein-under-test")
    expect(resource["deployment.environment"]).toBe("ci")

    const spans = spansOf(received)
    const byName = (name: string) => spans.filter((s) => s.name === name)
    const [turn] = byName("invoke_agent skein")
    expect(turn).toBeDefined()
    // The client's trace goes on: the turn's parent is the span it named.
    expect(turn!.traceId).toBe(CLIENT_TRACE)
    expect(turn!.parentSpanId).toBe(CLIENT_SPAN)
    expect(turn!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": sessionId,
      "skein.turn": 1,
      "skein.stop_reason": "end_turn",
      "skein.turn.failed": false
    })

    const calls = spans.filter((s) => s.name.startsWith("chat ") && s.parentSpanId === turn!.spanId)
    expect(calls.map((s) => s.attributes["skein.model_call"])).toEqual([1, 2, 3, 4])
    expect(calls[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "scripted",
      "gen_ai.system": "scripted",
      "gen_ai.usage.input_tokens": 1200,
      "gen_ai.usage.output_tokens": 40,
      "gen_ai.response.finish_reasons": ["tool_use"]
    })

    const tool = (name: string) => spans.find((s) => s.name === `execute_tool ${name}`)!
    for (const name of ["read", "spawn_agent", "write", "wait_agent"]) {
      expect(tool(name).parentSpanId).toBe(turn!.spanId)
      expect(tool(name).attributes["gen_ai.tool.name"]).toBe(name)
      expect(tool(name).attributes["skein.tool.outcome"]).toBe("ok")
    }
    // Every tool call holds the gate's decision on it, with the verdict.
    const decisions = byName("skein.permit")
    const decision = (name: string) => decisions.filter((s) => s.parentSpanId === tool(name).spanId)
    for (const name of ["read", "spawn_agent", "write", "wait_agent"]) {
      expect(decision(name).map((s) => s.attributes)).toEqual([{ "gen_ai.tool.name": name, "skein.permit.verdict": "allow" }])
    }
    // The permission wait is under the decision on the write it asked about, with the answer.
    const permission = byName("skein.permission")
    expect(permission.map((s) => s.parentSpanId)).toEqual([decision("write")[0]!.spanId])
    expect(permission[0]!.attributes["skein.permission.outcome"]).toBe("allow_once")

    // The spawn is under the tool call that asked for it, with the agent and the workspace.
    const spawns = byName("skein.spawn")
    expect(spawns.map((s) => s.parentSpanId)).toEqual([tool("spawn_agent").spanId])
    expect(spawns[0]!.attributes).toMatchObject({ "gen_ai.agent.name": "explorer", "skein.spawn.workspace": "shared" })

    // The child's turn is under the tool call that started it, in the same trace.
    const [child] = byName("invoke_agent explorer")
    expect(child).toBeDefined()
    expect(child!.traceId).toBe(CLIENT_TRACE)
    expect(child!.parentSpanId).toBe(tool("spawn_agent").spanId)
    expect(child!.attributes["skein.parent.session.id"]).toBe(sessionId)
    const childCall = spans.find((s) => s.name.startsWith("chat ") && s.parentSpanId === child!.spanId)!
    expect(childCall.attributes["gen_ai.usage.output_tokens"]).toBe(3)

    // The second turn: the compaction under it, its summary call a model call under the compaction.
    const [second] = spans.filter((s) => s.name === "invoke_agent skein" && s.attributes["skein.turn"] === 2)
    expect(second).toBeDefined()
    const compactions = byName("skein.compaction")
    expect(compactions.map((s) => s.parentSpanId)).toEqual([second!.spanId])
    expect(compactions[0]!.attributes).toMatchObject({ "skein.compaction.trigger": "manual", "skein.compaction.outcome": "Compacted" })
    const summaries = spans.filter((s) => s.name.startsWith("chat ") && s.parentSpanId === compactions[0]!.spanId)
    expect(summaries.map((s) => s.attributes["skein.model_call"])).toEqual([1])
    expect(spans.filter((s) => s.name.startsWith("chat ") && s.parentSpanId === second!.spanId)).toEqual([])

    // Metrics: turns (the parent's and the child's) and tokens.
    const metrics = received.filter((r) => r.path === "/v1/metrics").map((r) => r.text).join("\n")
    expect(metrics).toContain("skein.turns")
    expect(metrics).toContain("skein.tokens")

    // Nothing sent holds the prompt's text or the secret (the write's content included).
    for (const r of received) {
      expect(r.text).not.toContain(PROMPT_WORD)
      expect(r.text).not.toContain(SECRET)
    }
  })

  it("keeps stdout clean and the turn going when the receiver is down or a variable is malformed", async () => {
    // A port nothing listens on: the exporter's failures go to stderr, never to stdout or the turn.
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const agent = await agents.ready({
      script: { turns: [{ calls: [[call("read", { path: "notes.txt" }, "r1")], [{ text: "fine" }]] }] },
      files: { "notes.txt": "hi\n" },
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "not a url",
        OTEL_RESOURCE_ATTRIBUTES: "broken=%ZZ",
        OTEL_EXPORTER_OTLP_HEADERS: `authorization=${SECRET}`
      }
    })
    const sessionId = await agent.newSession()
    const response = await agent.requestRaw("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "go" }],
      _meta: { traceparent: "00-not-a-trace-01" }
    }, 20_000)
    expect(response.result).toEqual({ stopReason: "end_turn" })
    agent.closeStdin()
    expect((await agent.waitExit(15_000)).code).toBe(0)
    expectClean(agent)
    expect(agent.stderr).toContain("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is not a URL")
    expect(agent.stderr).toContain("OTEL_RESOURCE_ATTRIBUTES is not a list of key=value pairs")
    expect(agent.stderr).not.toContain(SECRET)
  })
})
