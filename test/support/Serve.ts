/**
 * A `skein serve` of the built binary for a test: a home, a workspace and a script in a temp
 * folder; started and awaited until it listens; stopped (SIGTERM) and removed after each test.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach } from "vitest"
import { NODE, SKEIN } from "./AgentProcess.ts"

export interface Server {
  readonly child: ChildProcess
  readonly home: string
  readonly cwd: string
  /** The script file the server answers model calls from. */
  readonly scriptPath: string
  stderr: string
}

/** Starts servers for a test file and stops them after each test. */
export const useServers = () => {
  const servers: Array<Server> = []
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill("SIGTERM")
        await new Promise((resolve) => server.child.once("exit", resolve))
      }
      rmSync(path.dirname(server.home), { recursive: true, force: true })
    }
  })
  /** Starts `skein serve` (at `listen`, default its home's unix socket; `args` added) and waits until it listens. */
  const serve = async (script: unknown, listen: string | undefined, env: Record<string, string> = {}, extra: ReadonlyArray<string> = []): Promise<Server> => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-serve-")))
    const home = path.join(root, "home")
    const cwd = path.join(root, "ws")
    mkdirSync(home)
    mkdirSync(cwd)
    const scriptPath = path.join(root, "script.json")
    writeFileSync(scriptPath, JSON.stringify(script))
    const args = [SKEIN, "serve", "--home", home, "--script", scriptPath, ...(listen !== undefined ? ["--listen", listen] : []), ...extra]
    const child = spawn(NODE, args, { env: { ...process.env, SKEIN_PROVIDER: "", SKEIN_HOME: "", ...env }, stdio: ["ignore", "pipe", "pipe"] })
    const server: Server = { child, home, cwd, scriptPath, stderr: "" }
    servers.push(server)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`skein serve did not start: ${server.stderr}`)), 10_000)
      child.stderr!.on("data", (chunk: Buffer) => {
        server.stderr += chunk.toString()
        if (server.stderr.includes("listening on")) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.once("exit", (code) => {
        clearTimeout(timer)
        reject(new Error(`skein serve exited ${code}: ${server.stderr}`))
      })
    })
    return server
  }
  return { serve }
}

/** Ports something on this machine uses now (TCP, v4 and v6, any state), as /proc lists them. */
const usedPorts = (): Set<number> => {
  const used = new Set<number>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const local = line.trim().split(/\s+/)[1]
      if (local !== undefined) used.add(parseInt(local.split(":").at(-1)!, 16))
    }
  }
  return used
}

/** The first port of the kernel's range for outgoing connections (32768 where it cannot be read). */
const ephemeralStart = (): number => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32_768
  } catch {
    return 32_768
  }
}

/** Ports this process handed out: a test may pick several before the first of them listens. */
const handedOut = new Set<number>()

/**
 * A port to listen on that is free now: below the range the kernel gives outgoing connections
 * (which a port in it may be taken by at any moment, by another test file's connections), at
 * random, not in use, and never one this process handed out before.
 */
export const freePort = (random: () => number = Math.random): number => {
  const top = Math.min(ephemeralStart(), 65_536)
  const bottom = Math.max(1_024, top - 12_000)
  const used = usedPorts()
  for (;;) {
    const port = bottom + Math.floor(random() * (top - bottom))
    if (!used.has(port) && !handedOut.has(port)) {
      handedOut.add(port)
      return port
    }
  }
}
