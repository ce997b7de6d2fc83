/**
 * `web_fetch` end to end: the built agent, driven by the official ACP client, fetches a page
 * from a real HTTP server on loopback. The client is asked first (the host named, "always"
 * offered for that host), then the model gets the page as Markdown; a second fetch from the
 * same host is not asked again, one from the same machine by another name is.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const servers: Array<Server> = []
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    server.close()
  }
})

const PAGE = `<!doctype html><html><head><title>Install</title><script>track("secret-tracker")</script></head>
<body><h1>Install Skein</h1><p>See <a href="/docs">the docs</a>.</p><pre><code>npm i skein</code></pre></body></html>`

/** A server on 127.0.0.1 with one page; it records what each request sent. */
const serve = async () => {
  const seen: Array<IncomingHttpHeaders> = []
  const server = createServer((request, response) => {
    seen.push(request.headers)
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", "set-cookie": "id=42" }).end(PAGE)
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { port: (server.address() as AddressInfo).port, seen }
}

const toolResult = (updates: ReadonlyArray<any>, id: string) =>
  updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id && u.status !== undefined).at(-1)

describe("e2e: web_fetch", () => {
  it("asks for the host, then gives the model the page as Markdown; always covers that host alone", async () => {
    const { port, seen } = await serve()
    const url = `http://127.0.0.1:${port}/install`
    const agent = await agents.ready({
      script: {
        turns: [{
          calls: [
            [{ tool: "web_fetch", args: { url, prompt: "the install command" }, id: "f1" }],
            [{ tool: "web_fetch", args: { url: `${url}?again` }, id: "f2" }],
            [{ tool: "web_fetch", args: { url: `http://localhost:${port}/install` }, id: "f3" }],
            [{ text: "done" }]
          ]
        }]
      },
      permission: (request) => ({
        outcome: { outcome: "selected", optionId: request.toolCall.toolCallId === "f1" ? "allow_always" : "reject_once" }
      })
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "how do I install it?")).stopReason).toBe("end_turn")

    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["f1", "f3"])
    const first = agent.permissionRequests[0]!
    expect(first.toolCall).toMatchObject({ title: `Fetch ${url} (127.0.0.1:${port} (this machine))`, kind: "fetch" })
    expect(first.options.map((o) => o.name)).toContain(`Always allow fetches from 127.0.0.1:${port} (this machine)`)
    expect(agent.permissionRequests[1]!.toolCall.title).toBe(`Fetch http://localhost:${port}/install (localhost:${port} (this machine))`)

    const updates = agent.updates(sessionId)
    const fetched = toolResult(updates, "f1")
    expect(fetched.status).toBe("completed")
    const text = JSON.stringify(fetched.content)
    for (const shown of ["The page, for: the install command", "# Install Skein", `[the docs](http://127.0.0.1:${port}/docs)`, "npm i skein"]) {
      expect(text).toContain(JSON.stringify(shown).slice(1, -1))
    }
    expect(text).not.toContain("secret-tracker")
    expect(toolResult(updates, "f2").status).toBe("completed")
    expect(toolResult(updates, "f3").status).toBe("failed")
    // Two requests reached the server (f3 was rejected), neither with the cookie it was given.
    expect(seen).toHaveLength(2)
    expect(seen.map((h) => h.cookie)).toEqual([undefined, undefined])
    const rules = agent.readLog(sessionId).filter((e: any) => e.type === "permission").map((e: any) => e.data.rule)
    expect(rules[0]).toEqual({ decision: "allow", kind: "host", value: `127.0.0.1:${port}`, label: `fetches from 127.0.0.1:${port} (this machine)` })
    expectClean(agent)
  })
})
