/**
 * Faults: processes that try to outlive Skein. The built agent runs, in one bash call, every
 * escape of test/support/Escapes.ts (setsid, a double fork whose parent exits, nohup and
 * disown, a daemon that closes its stdio, and, under a cgroup, one that also clears its
 * environment), next to an MCP server that leaves a daemon behind. Then the agent is stopped
 * each way it can be: stdin EOF, SIGTERM, SIGINT, SIGHUP (clean shutdowns) and SIGKILL. Afterwards no process of any escape is alive and
 * no cgroup of the agent is left. Once with a cgroup per command (skipped, saying why, where
 * this user cannot write one), once with the fallback forced by SKEIN_NO_CGROUP=1.
 *
 * The tests run at the same time (each mostly waits on its agent): every one has its own
 * agent, its own sleep arguments and its own clean-up, at its own end.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as Cgroup from "../../src/tools/process/Cgroup.ts"
import { AgentProcess, NODE, REPO_ROOT } from "../support/AgentProcess.ts"
import { cgroupOf, cgroupsWritable, ESCAPES, escapeCommand, escapePid, killSurvivors, survivors, uniqueArg } from "../support/Escapes.ts"
import { until } from "../fixtures/faults/harness.ts"

const MCP_DAEMON = path.join(REPO_ROOT, "test/fixtures/mcp/daemonizing.mjs")

const stops: ReadonlyArray<{ readonly name: string; readonly stop: (agent: AgentProcess) => void; readonly exit: object }> = [
  { name: "stdin EOF", stop: (agent) => agent.closeStdin(), exit: { code: 0, signal: null } },
  { name: "SIGTERM", stop: (agent) => agent.child.kill("SIGTERM"), exit: { code: 0, signal: null } },
  { name: "SIGINT", stop: (agent) => agent.child.kill("SIGINT"), exit: { code: 0, signal: null } },
  { name: "SIGHUP", stop: (agent) => agent.child.kill("SIGHUP"), exit: { code: 0, signal: null } },
  { name: "kill -9", stop: (agent) => agent.child.kill("SIGKILL"), exit: { code: null, signal: "SIGKILL" } }
]

const writable = cgroupsWritable()
const mechanisms = [
  { name: writable ? "cgroup" : "cgroup (skipped: no writable cgroup v2 subtree for this user here)", cgroup: true, skip: !writable },
  { name: "environment marker (SKEIN_NO_CGROUP=1)", cgroup: false, skip: process.platform !== "linux" }
]

/** Skein's per-process cgroup subtrees under the test's own cgroup, which the agent inherits. */
const agentCgroups = (agentPid: number): Array<string> => {
  const own = Cgroup.ownDirectory()
  if (own === undefined) return []
  try {
    return readdirSync(own).filter((name) => name.startsWith(`skein-${agentPid}-`))
  } catch {
    return []
  }
}

for (const mechanism of mechanisms) {
  describe.skipIf(mechanism.skip).concurrent(`faults: escaping processes, ${mechanism.name}`, () => {
    for (const { name, stop, exit } of stops) {
      it(`${name}: nothing the commands or the MCP server started is left`, async ({ onTestFinished }) => {
        const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-escape-")))
        onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
        const escapes = ESCAPES.filter((e) => mechanism.cgroup || e.cgroupOnly !== true).map((escape) => ({ escape, arg: uniqueArg() }))
        const daemonArg = uniqueArg()
        onTestFinished(() => killSurvivors([...escapes.map((e) => e.arg), daemonArg]))
        const command = `${escapeCommand(dir, escapes)}\nsleep 30`
        const agent = AgentProcess.start({
          script: { turns: [{ calls: [[{ tool: "bash", args: { command }, id: "b1" }], [{ text: "never" }]] }] },
          // The sandbox off: the escapes write their pids (a PID namespace numbers its own) to a
          // directory of the machine's /tmp (a sandboxed command has its own). The sandbox's
          // clean-up is tested in test/e2e/sandbox.test.ts.
          args: ["--mode", "bypassPermissions", "--sandbox", "off"],
          env: { SKEIN_NO_CGROUP: mechanism.cgroup ? "" : "1" }
        })
        onTestFinished(() => agent.kill())
        await agent.initialize()
        const mcpServers = [{
          name: "d",
          command: NODE,
          args: [MCP_DAEMON],
          env: [{ name: "MCP_DAEMON_PIDFILE", value: path.join(dir, "mcp-daemon.pid") }, { name: "MCP_DAEMON_ARG", value: daemonArg }]
        }]
        const { sessionId } = (await agent.sdk.request("session/new", { cwd: agent.cwd, mcpServers } as acp.NewSessionRequest)) as acp.NewSessionResponse
        void agent.prompt(sessionId, "run it").catch(() => undefined)

        await until(() => escapes.every((_, i) => escapePid(dir, i) > 0), "every escape to run", 10_000)
        await until(() => survivors(daemonArg).length === 1, "the MCP server's daemon", 10_000)
        const pids = [...escapes.map((e) => survivors(e.arg)), survivors(daemonArg)]
        expect(pids.map((p) => p.length)).toEqual([...escapes.map(() => 1), 1])
        // Each runs where the mechanism under test put it.
        for (const [pid] of pids) {
          const inAgentCgroup = cgroupOf(pid!)?.includes(`/skein-${agent.child.pid}-`) ?? false
          expect(inAgentCgroup).toBe(mechanism.cgroup)
        }

        stop(agent)
        expect(await agent.waitExit(10_000)).toEqual(exit)
        const all = [...escapes.map((e) => e.arg), daemonArg]
        // After a clean shutdown everything is dead already; after SIGKILL the watchdog
        // needs a moment.
        await until(() => all.every((arg) => survivors(arg).length === 0), "every escape to die", 5_000).catch(() => undefined)
        expect(Object.fromEntries(all.map((arg) => [arg, survivors(arg)]))).toEqual(Object.fromEntries(all.map((arg) => [arg, []])))
        await until(() => agentCgroups(agent.child.pid!).length === 0, "the agent's cgroups to be removed", 5_000).catch(() => undefined)
        expect(agentCgroups(agent.child.pid!)).toEqual([])
      })
    }
  })
}
