/**
 * End to end: sign-in over ACP with the built agent and the official client library, every
 * line checked against the stable ACP schema. `initialize` offers the terminal method
 * (`skein setup`) to a client that runs them, and `logout`; opening a session with no
 * provider configured answers `auth_required` (-32000) naming the methods; once `config.json`
 * names a provider (as `skein setup` writes it) sessions open, with or without `authenticate`,
 * and a new session uses the provider read last; `logout` forgets the stored keys.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { errorCode, expectClean, message, useAgents } from "../support/AgentProcess.ts"
import * as CompatServer from "../support/CompatServer.ts"

const servers: Array<CompatServer.CompatServer> = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})
const serve = async (answer: string, key?: string) => {
  const server = await CompatServer.start({ models: ["coder"], answer, ...(key !== undefined ? { key } : {}) })
  servers.push(server)
  return server
}

/** config.json as `skein setup` writes it for a local server. */
const localConfig = (url: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ provider: "local", model: "coder", providers: { local: { dialect: "openai-chat", baseUrl: url, ...extra } } })

const rejection = async (promise: Promise<unknown>) => {
  try {
    await promise
    return undefined
  } catch (error) {
    return error as { code: number; message: string; data?: any }
  }
}

describe("e2e: sign-in", () => {
  const agents = useAgents()

  it("initialize offers the terminal set-up (`skein setup`, in this agent's home) and logout to a client that runs terminal methods", async () => {
    const agent = agents.start({ script: undefined, clientCapabilities: { authTerminal: true } })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.auth).toEqual({ logout: {} })
    expect(init.authMethods).toEqual([
      expect.objectContaining({ type: "terminal", id: "skein-setup", args: ["setup"], env: { SKEIN_HOME: agent.home } }),
      expect.objectContaining({ id: "skein-config", name: "Use the configured provider" })
    ])
    expect(init.authMethods?.[1]).not.toHaveProperty("type")
    expectClean(agent)
  })

  it("a client without terminal methods is offered the agent method only; one with the older `terminal-auth` flag also gets the command line", async () => {
    const plain = agents.start({ script: undefined })
    expect((await plain.initialize()).authMethods?.map((m) => m.id)).toEqual(["skein-config"])
    expectClean(plain)

    const legacy = agents.start({ script: undefined })
    const init = await legacy.sdk.request("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { "terminal-auth": true } } })
    const setup = init.authMethods?.find((m) => m.id === "skein-setup") as any
    expect(setup).toMatchObject({ type: "terminal", args: ["setup"] })
    expect(setup._meta["terminal-auth"]).toEqual({
      command: expect.stringMatching(/node$/),
      args: [expect.stringMatching(/dist\/skein\.mjs$/), "setup"],
      env: { SKEIN_HOME: legacy.home },
      label: "Skein set-up"
    })
    expectClean(legacy)
  })

  it("with nothing configured, session/new, load, resume and fork answer auth_required (-32000) with the methods; nothing is created", async () => {
    const agent = agents.start({ script: undefined, clientCapabilities: { authTerminal: true } })
    const init = await agent.initialize()
    const refused = await rejection(agent.sdk.request("session/new", { cwd: agent.cwd, mcpServers: [] }))
    expect(refused).toMatchObject({ code: -32000, message: expect.stringContaining("Authentication required: Skein has no model provider configured") })
    expect(refused?.data?.authMethods).toEqual(init.authMethods)
    expect(refused?.data?.reason).toContain("skein setup")
    expect(await errorCode(agent.sdk.request("session/load", { sessionId: "s-1", cwd: agent.cwd, mcpServers: [] }))).toBe(-32000)
    expect(await errorCode(agent.sdk.request("session/resume", { sessionId: "s-1", cwd: agent.cwd, mcpServers: [] } as any))).toBe(-32000)
    // Listing needs no provider, and nothing was created.
    expect((await agent.sdk.request("session/list", {})).sessions).toEqual([])
    expectClean(agent)

    const unstable = agents.start({ script: undefined, unstable: true })
    await unstable.initialize()
    expect(await errorCode(unstable.sdk.request<unknown>("session/fork" as any, { sessionId: "s-1", cwd: unstable.cwd, mcpServers: [] }))).toBe(-32000)
    expectClean(unstable)
  })

  it("after `skein setup` wrote config.json, the next session/new opens (no authenticate needed) and its prompt reaches that provider", async () => {
    const server = await serve("Signed in.")
    const agent = agents.start({ script: undefined, clientCapabilities: { authTerminal: true } })
    await agent.initialize()
    expect(await errorCode(agent.newSession())).toBe(-32000)
    writeFileSync(join(agent.home, "config.json"), localConfig(server.url))
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "hello")).stopReason).toBe("end_turn")
    expect(agent.updates(sessionId)).toEqual([message("Signed in.", "m1.1")])
    expect(server.requests.at(-1)).toMatchObject({ path: "/v1/chat/completions", body: { model: "coder" } })
    expectClean(agent)
  })

  it("authenticate reads the configuration again: new sessions use the provider it names now", async () => {
    const first = await serve("From the first server.")
    const second = await serve("From the second server.")
    const agent = agents.start({ script: undefined, prepareHome: (home) => writeFileSync(join(home, "config.json"), localConfig(first.url)) })
    await agent.initialize()
    const before = await agent.newSession()
    writeFileSync(join(agent.home, "config.json"), localConfig(second.url))
    expect(await agent.sdk.request("authenticate", { methodId: "skein-config" })).toEqual({})
    const after = await agent.newSession()
    await agent.prompt(after, "hello")
    expect(agent.updates(after)).toEqual([message("From the second server.", "m1.1")])
    expect(second.requests.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(1)
    expect(first.requests).toEqual([])
    expect(before).not.toBe(after)
    // An unknown method is a bad request, not a sign-in.
    expect(await errorCode(agent.sdk.request("authenticate", { methodId: "password" }))).toBe(-32602)
    // A configuration that became invalid: authenticate says so (auth_required), and the one read before stays.
    writeFileSync(join(agent.home, "config.json"), "{ broken")
    const invalid = await rejection(agent.sdk.request("authenticate", { methodId: "skein-config" }))
    expect(invalid).toMatchObject({ code: -32000, message: expect.stringContaining("is not valid JSON") })
    const still = await agent.newSession()
    await agent.prompt(still, "hello")
    expect(agent.updates(still)).toEqual([message("From the second server.", "m1.1")])
    expectClean(agent)
  })

  it("logout forgets the keys stored in config.json (the rest stays, 0600), and sessions need a sign-in again", async () => {
    const key = "sk-stored-9c1e5a7b3d2f4e6a"
    const server = await serve("Keyed.", key)
    const agent = agents.start({
      script: undefined,
      prepareHome: (home) => {
        // A built-in provider with a stored key: without it, it cannot answer.
        writeFileSync(join(home, "config.json"), JSON.stringify({
          provider: "anthropic-messages",
          sandbox: "auto",
          providers: {
            "anthropic-messages": { apiKey: key, models: ["claude-sonnet-4-5"] },
            local: { dialect: "openai-chat", baseUrl: server.url, headers: { Authorization: `Bearer ${key}`, "X-Title": "Skein" } }
          }
        }))
        chmodSync(join(home, "config.json"), 0o644)
      }
    })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.auth?.logout).toEqual({})
    await agent.newSession()
    expect(await agent.sdk.request("logout", {})).toEqual({})
    const config = JSON.parse(readFileSync(join(agent.home, "config.json"), "utf8"))
    expect(config).toEqual({
      provider: "anthropic-messages",
      sandbox: "auto",
      providers: {
        "anthropic-messages": { models: ["claude-sonnet-4-5"] },
        local: { dialect: "openai-chat", baseUrl: server.url, headers: { "X-Title": "Skein" } }
      }
    })
    expect(readFileSync(join(agent.home, "config.json"), "utf8")).not.toContain(key)
    expect(statSync(join(agent.home, "config.json")).mode & 0o777).toBe(0o600)
    expect(await errorCode(agent.newSession())).toBe(-32000)
    // Again, with nothing left to forget: answered, the file untouched.
    const unchanged = statSync(join(agent.home, "config.json")).mtimeMs
    expect(await agent.sdk.request("logout", {})).toEqual({})
    expect(statSync(join(agent.home, "config.json")).mtimeMs).toBe(unchanged)
    expectClean(agent)
  })

  it("logout with a config.json that is not JSON fails with a clear error and leaves the file as it was", async () => {
    const agent = agents.start({ script: { turns: [] } })
    await agent.initialize()
    writeFileSync(join(agent.home, "config.json"), "{ not json")
    const failed = await rejection(agent.sdk.request("logout", {}))
    expect(failed).toMatchObject({ code: -32603, message: expect.stringContaining("config.json is not valid JSON") })
    expect(readFileSync(join(agent.home, "config.json"), "utf8")).toBe("{ not json")
    expectClean(agent)
  })

  it("with the scripted provider there is nothing to sign in to: sessions open in an empty home", async () => {
    const agent = agents.start({ script: { turns: [{ calls: [[{ text: "Scripted." }]] }] }, clientCapabilities: { authTerminal: true } })
    const init = await agent.initialize()
    expect(init.authMethods?.map((m) => m.id)).toEqual(["skein-setup", "skein-config"])
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "hi")
    expect(agent.updates(sessionId)).toEqual([message("Scripted.", "m1.1")])
    expect(await agent.sdk.request("authenticate", { methodId: "skein-config" })).toEqual({})
    expectClean(agent)
  })
})
