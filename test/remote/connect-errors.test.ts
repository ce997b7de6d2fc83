/**
 * `skein acp --connect` with settings that cannot work says so before it serves anything: one
 * `skein: …` line on stderr that says what to do, exit 2, nothing on stdout (no URL, no token, a
 * short one, nothing listening, no socket, a socket of another user, a wrong token over tcp and
 * ws: a real handshake). A server that goes away later: each request is answered with a
 * JSON-RPC error in the same plain words, and the agent goes on. Never a class name of the
 * transport.
 */
import { spawnSync } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as acp from "@agentclientprotocol/sdk"
import { NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"
import { freePort, useServers } from "../support/Serve.ts"
import * as Visible from "../support/Visible.ts"

const TOKEN = "a-test-token-that-is-long-enough"
const CLASS_NAMES = /SocketOpenError|SocketError|RpcClientError|RuntimeError|SessionError|Refused|ErrorEvent/

const { serve } = useServers()
const agents = useAgents()
const script = { turns: [{ calls: [[{ text: "Hello." }]] }, { calls: [[{ text: "Again." }]] }] }

/** `skein acp --connect URL` with `env`, its stdin left open: what it said before it exited. */
const connectOnly = (url: string, env: Record<string, string> = {}, options: { readonly uid?: number; readonly home?: string } = {}) => {
  const home = options.home ?? mkdtempSync(path.join(os.tmpdir(), "skein-connect-"))
  // Another user runs the copies in a place it may enter (the checkout may be in a 0700 directory).
  const [node, skein] = options.uid === undefined ? [NODE, SKEIN] : [Visible.node(), Visible.skein()]
  const run = spawnSync(node, [skein, "acp", "--connect", url], {
    env: { ...process.env, SKEIN_SERVE_TOKEN: "", HOME: home, ...env },
    input: "",
    encoding: "utf8",
    timeout: 20_000,
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {})
  })
  if (options.home === undefined) rmSync(home, { recursive: true, force: true })
  return { status: run.status, stdout: run.stdout, stderr: run.stderr }
}

const refusedToken = (url: string) => `skein: The Skein server at ${url} refused the token: give the token it was started with (SKEIN_SERVE_TOKEN or --token-file).\n`

describe("skein acp --connect checks what it can before it serves", () => {
  it("a missing, short or malformed setting, and nothing at the address: one line, exit 2", () => {
    const port = freePort()
    const tcp = `tcp://127.0.0.1:${port}`
    const cases: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
      [tcp, {}, `skein: ${tcp} needs the server's token: set SKEIN_SERVE_TOKEN or pass --token-file FILE\n`],
      [`ws://127.0.0.1:${port}/skein`, {}, `skein: ws://127.0.0.1:${port}/skein needs the server's token: set SKEIN_SERVE_TOKEN or pass --token-file FILE\n`],
      [tcp, { SKEIN_SERVE_TOKEN: "short" }, "skein: The token is too short to be the server's (a server takes 16 characters or more): check SKEIN_SERVE_TOKEN or --token-file\n"],
      ["http://127.0.0.1:80/x", {}, "skein: \"http://127.0.0.1:80/x\": the scheme must be unix:, tcp:// or ws://\n"],
      [tcp, { SKEIN_SERVE_TOKEN: TOKEN }, `skein: Nothing listens at ${tcp}: is \`skein serve --listen ${tcp}\` running?\n`],
      ["unix:/nonexistent/skein.sock", {}, "skein: There is no socket at /nonexistent/skein.sock: is `skein serve` running? (It makes that socket when it starts.)\n"]
    ]
    for (const [url, env, expected] of cases) {
      const run = connectOnly(url, env)
      expect({ url, ...run }).toEqual({ url, status: 2, stdout: "", stderr: expected })
    }
  })

  it("a wrong token, over tcp and over ws: the server is asked, and its refusal said in one line", async () => {
    for (const scheme of ["tcp", "ws"] as const) {
      const port = freePort()
      const url = scheme === "tcp" ? `tcp://127.0.0.1:${port}` : `ws://127.0.0.1:${port}/skein`
      const server = await serve(script, url, { SKEIN_SERVE_TOKEN: TOKEN })
      const run = connectOnly(url, { SKEIN_SERVE_TOKEN: "not-the-server-token-0000" })
      expect(run).toEqual({ status: 2, stdout: "", stderr: refusedToken(url) })
      expect(server.stderr).not.toContain("not-the-server-token-0000")
      // The right token is let in: the agent serves (and exits 0 when its stdin ends).
      expect(connectOnly(url, { SKEIN_SERVE_TOKEN: TOKEN })).toEqual({ status: 0, stdout: "", stderr: "" })
    }
  })

  it.skipIf(process.getuid?.() !== 0)("a unix socket of another user: permission denied, and whose socket it is", async () => {
    const server = await serve(script, undefined)
    const socket = path.join(server.home, "skein.sock")
    const home = mkdtempSync(path.join(os.tmpdir(), "skein-nobody-"))
    chmodSync(home, 0o777)
    try {
      const run = connectOnly(`unix:${socket}`, {}, { uid: 65534, home })
      expect(run).toEqual({
        status: 2,
        stdout: "",
        stderr: `skein: Cannot open ${socket}: permission denied. The socket is only for the user who started \`skein serve\`: connect as that user.\n`
      })
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe("skein acp --connect when the server goes away", () => {
  it("each request is answered with an error that says what happened and what to do; the agent goes on", async () => {
    const server = await serve(script, undefined)
    const url = `unix:${server.home}/skein.sock`
    const agent = await agents.ready({ script: { turns: [] }, args: ["--connect", url] })
    const sessionId = await agent.newSession(server.cwd)
    expect((await agent.prompt(sessionId, "hi")).stopReason).toBe("end_turn")

    server.child.kill("SIGKILL")
    await new Promise((resolve) => server.child.once("exit", resolve))
    const failures: Array<string> = []
    for (const request of [() => agent.prompt(sessionId, "again"), () => agent.newSession(server.cwd), () => agent.sdk.request("session/list", {})]) {
      const error = await request().then(() => undefined, (e: unknown) => e)
      expect(error).toBeInstanceOf(acp.RequestError)
      failures.push((error as acp.RequestError).message)
    }
    for (const message of failures) {
      expect(message).toMatch(new RegExp(`^(The connection to the Skein server at ${url} was lost \\(the server stopped, or the network failed\\): is it still running\\? The next request connects again\\.|Nothing listens at ${server.home}/skein\\.sock: is \`skein serve\` running\\? \\(It makes that socket when it starts\\.\\))$`))
      expect(message).not.toMatch(CLASS_NAMES)
    }
    expect(agent.child.exitCode).toBe(null)
    expect(agent.stderr).not.toMatch(CLASS_NAMES)
  })
})
