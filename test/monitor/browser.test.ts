/**
 * The web monitor in headless Chromium, against the built `skein serve --web`, with sessions
 * driven by an editor's way in (`skein acp --connect` and the official ACP client): the page
 * shows a session's text as it streams, a child under its parent, an approval answered on the
 * page lets the tool run (`--web-approve`) while the editor's request is withdrawn, a model
 * answer holding `<script>` is shown as text, and a read-only monitor has no answer button and
 * refuses an answer. The page never runs without the token.
 */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, type Script, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { skipReason, useBrowsers } from "../support/Browser.ts"
import { type Server, useServers } from "../support/Serve.ts"

const agents = useAgents()
const { serve } = useServers()
const browsers = useBrowsers()
const skip = skipReason()
if (skip !== undefined) console.warn(skip)

const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

/** The monitor's one-time URL, as `skein serve` printed it. */
const monitorUrl = (server: Server): string => {
  const match = /monitor at (http:\/\/\S+)/.exec(server.stderr)
  if (match === null) throw new Error(`no monitor URL in: ${server.stderr}`)
  return match[1]!
}
const base = (url: string) => url.replace(/\/\?token=.*$/, "")

/** An editor connected to the server. `permission`: how it answers (default: never). */
const editor = (server: Server, permission: "never" | "allow" = "never"): Promise<AgentProcess> =>
  agents.ready({
    script: { turns: [] },
    args: ["--connect", `unix:${server.home}/skein.sock`],
    permission: permission === "never" ? () => new Promise(() => {}) : (request) => ({ outcome: { outcome: "selected", optionId: request.options[0]!.optionId } })
  })

describe.skipIf(skip !== undefined)("web monitor in Chromium", () => {
  it("opens with the one-time URL only, and streams a session's text as it arrives", async () => {
    const script: Script = {
      turns: [{ calls: [[{ text: "First part of the answer." }, { sleep_ms: 2500 }, { text: " Second part." }]] }]
    }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0"])
    const url = monitorUrl(server)
    const context = await browsers.launch()
    const page = await context.newPage()

    // Without the token: refused, and no page script runs.
    const refused = await page.goto(base(url) + "/")
    expect(refused?.status()).toBe(401)
    expect(await page.textContent("body")).toContain("Open the monitor with the URL")

    const agent = await editor(server)
    const sessionId = await agent.newSession()
    // The one-time URL of the session's page: the token becomes a cookie, and leaves the address.
    const opened = await page.goto(`${base(url)}/sessions/${sessionId}?token=${url.split("token=")[1]}`)
    expect(opened?.status()).toBe(200)
    expect(page.url()).toBe(`${base(url)}/sessions/${sessionId}`)
    const cookies = await context.cookies()
    expect(cookies.map((c) => [c.httpOnly, c.sameSite])).toEqual([[true, "Strict"]])

    const prompt = agent.prompt(sessionId, "Tell me in two parts")
    const text = page.locator(".call .text")
    await text.getByText("First part of the answer.").waitFor()
    // Shown as it came: the second part is still to come (the model pauses between them).
    expect(await text.textContent()).not.toContain("Second part")
    await text.getByText("First part of the answer. Second part.").waitFor()
    expect((await prompt).stopReason).toBe("end_turn")
    await page.locator(".footer").getByText("Ended: end_turn").waitFor()
  })

  it("lists a child under its parent, and shows a model's <script> as text", async () => {
    const script: Script = {
      turns: [{
        calls: [
          [call("spawn_agent", { task: "Look around", agent: "explorer" }, "s1")],
          [call("wait_agent", {}, "w1")],
          [{ text: "Done: <script>window.__pwned = 1</script><b>not bold</b> <img src=x onerror=\"window.__pwned = 2\">" }]
        ]
      }],
      agents: { explorer: { turns: [{ calls: [[{ text: "Nothing to see." }]] }] } }
    }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0"])
    const agent = await editor(server)
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "Delegate")).stopReason).toBe("end_turn")
    const page = await (await browsers.launch()).newPage()
    await page.goto(monitorUrl(server))

    const parent = page.locator(`li[data-id="${sessionId}"]`)
    await parent.waitFor()
    const child = parent.locator(":scope > ul.children > li")
    await child.first().waitFor()
    expect(await child.count()).toBe(1)
    expect(await child.first().locator(".meta").textContent()).toContain("explorer")
    const childId = await child.first().getAttribute("data-id")

    // The parent's page: the answer as characters, nothing run or parsed from it.
    await page.locator(`li[data-id="${sessionId}"] > .row > a`).click()
    const answer = page.locator(".call .text").last()
    await answer.getByText("<script>window.__pwned = 1</script>", { exact: false }).waitFor()
    expect(await answer.textContent()).toContain("<b>not bold</b> <img src=x onerror=")
    expect(await answer.locator("script, b, img").count()).toBe(0)
    expect(await page.evaluate("window.__pwned")).toBeUndefined()
    // The child's line links to its own page.
    await page.locator(`a[href="/sessions/${childId}"]`).first().click()
    await page.locator(".call .text").getByText("Nothing to see.").waitFor()
  })

  it("answers an approval on the page (--web-approve): the tool runs, and the editor's request is withdrawn", async () => {
    const script: Script = {
      turns: [{ calls: [[call("write", { path: "approved.txt", content: "from the page\n" }, "w1")], [{ text: "Written." }]] }]
    }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0", "--web-approve"])
    const agent = await editor(server)
    const sessionId = await agent.newSession()
    const page = await (await browsers.launch()).newPage()
    await page.goto(monitorUrl(server))

    const prompt = agent.prompt(sessionId, "Write it")
    await waitUntil(() => agent.permissionRequests.length === 1, "the editor's permission request", 10_000)
    const card = page.locator("article.question")
    await card.waitFor()
    expect(await card.locator(".tool").textContent()).toContain("approved.txt")
    await card.locator("button", { hasText: "Allow" }).first().click()

    expect((await prompt).stopReason).toBe("end_turn")
    expect(readFileSync(path.join(agent.cwd, "approved.txt"), "utf8")).toBe("from the page\n")
    // The editor's request was withdrawn: the page answered first.
    const request = agent.messages().find((m) => m.method === "session/request_permission")!
    await waitUntil(() => agent.messages().some((m) => m.method === "$/cancel_request" && m.params?.requestId === request.id), "the editor's request withdrawn", 10_000)
    // The inbox empties.
    await page.locator("article.question").waitFor({ state: "detached" })
  })

  it("keeps a 100,000-delta turn bounded: the page holds its text's tail, and gets batches, not deltas", async () => {
    const script: Script = { turns: [{ calls: [[{ text: "x", repeat: 100_000 }, { text: "THE END" }]] }] }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0"])
    const url = monitorUrl(server)
    const agent = await editor(server)
    const sessionId = await agent.newSession()
    const page = await (await browsers.launch()).newPage()
    await page.goto(`${base(url)}/sessions/${sessionId}?token=${url.split("token=")[1]}`)
    // What the stream carries, read beside the page.
    let frames = 0
    let deltas = 0
    const controller = new AbortController()
    const response = await fetch(`${base(url)}/api/sessions/${sessionId}/events`, { headers: { authorization: `Bearer ${url.split("token=")[1]}` }, signal: controller.signal })
    const reading = (async () => {
      const decoder = new TextDecoder()
      let buffer = ""
      try {
        for await (const chunk of response.body!) {
          buffer += decoder.decode(chunk as Uint8Array, { stream: true })
          const lines = buffer.split("\n")
          buffer = lines.pop()!
          for (const line of lines) {
            if (!line.startsWith("data: ")) continue
            const message = JSON.parse(line.slice(6))
            if (message.type !== "events") continue
            frames++
            deltas += message.events.filter((e: any) => e.type === "text_delta").length
          }
        }
      } catch {
        // aborted
      }
    })()
    expect((await agent.prompt(sessionId, "Go on and on")).stopReason).toBe("end_turn")
    await page.locator(".footer").getByText("Ended: end_turn").waitFor()
    controller.abort()
    await reading
    const text = (await page.locator(".call .text").last().textContent())!
    expect(text.length).toBeLessThan(64_000 + 100)
    expect(text).toMatch(/… \d+ earlier characters not shown …/)
    expect(text.endsWith("xxxTHE END")).toBe(true)
    // Merged into batches: far fewer than the deltas the model streamed.
    expect(frames).toBeGreaterThan(0)
    expect(deltas).toBeLessThan(10_000)
  })

  it("read-only by default: no answer button, and an answer is refused", async () => {
    const script: Script = { turns: [{ calls: [[call("write", { path: "nope.txt", content: "x" }, "w1")], [{ text: "ok" }]] }] }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0"])
    const agent = await editor(server, "never")
    const sessionId = await agent.newSession()
    const page = await (await browsers.launch()).newPage()
    await page.goto(monitorUrl(server))
    void agent.prompt(sessionId, "Write it").catch(() => {})
    const card = page.locator("article.question")
    await card.waitFor()
    expect(await card.locator("button").count()).toBe(0)
    expect(await card.locator(".readonly").textContent()).toContain("Read-only")
    const requestId = await card.getAttribute("data-request")
    // From the page itself (its cookie, its origin): refused.
    const status = await page.evaluate(
      `fetch("/api/answer", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sessionId: ${JSON.stringify(sessionId)}, requestId: ${JSON.stringify(requestId)}, optionId: "allow_once" }) }).then((r) => r.status)`
    )
    expect(status).toBe(403)
    expect(existsSync(path.join(agent.cwd, "nope.txt"))).toBe(false)
  })
})
