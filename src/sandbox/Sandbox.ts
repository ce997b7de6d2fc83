/**
 * The sandbox of a Skein process and of each of its sessions: the effectful half of
 * `Policy.ts`. The seam every command goes through: `SessionSandbox.prepare` turns a program
 * into the command line that runs it sandboxed (or says it runs outside, or why it cannot
 * run), and `ProcessGroup.spawnProgram` starts what it gives.
 *
 * - Whether the platform can sandbox is probed once, when a session first needs to know
 *   (never at start-up), by doing what a command does: make a session's namespaces and run
 *   `true` inside. The answer is kept for the life of the process.
 * - A session's namespaces (`Namespace.ts`) and its private /tmp are made when its first
 *   sandboxed command starts, and go with the session's scope.
 * - The egress proxy starts with the first session that needs it (`sandbox.network.allow`
 *   not empty), on a socket in Skein's runtime directory (mode 0700), and stops with the
 *   runtime.
 * - Commands never see the runtime directory (of any Skein of this user): a root that holds it
 *   (a workspace that is /tmp itself) would let a command rewrite the seccomp filter the next
 *   command is started with.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Containment from "../tools/process/Containment.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"
import { findTools } from "./Detect.ts"
import * as Env from "./Env.ts"
import * as Facts from "./Facts.ts"
import * as Namespace from "./Namespace.ts"
import * as Policy from "./Policy.ts"
import * as Proxy from "./Proxy.ts"
import * as Seccomp from "./Seccomp.ts"
import type { Placement, SessionSandbox } from "../tools/Sandboxed.ts"
import * as Blocked from "./Blocked.ts"
import type { Settings } from "./Settings.ts"

/** Whether commands can run sandboxed here. */
type Availability =
  | { readonly _tag: "available"; readonly tools: Policy.Tools; readonly seccomp: boolean }
  | { readonly _tag: "unavailable"; readonly reason: string }

interface Manager {
  readonly settings: Settings
  /** Probed on first use, then kept. */
  readonly availability: Effect.Effect<Availability>
  /** A session's sandbox; what it makes goes with the scope. */
  readonly session: (where: { readonly cwd: string; readonly roots: ReadonlyArray<string> }) => Effect.Effect<SessionSandbox, never, Scope.Scope>
}

/** Skein's own directory for sockets, filters and the sessions' /tmp: private to this user and this process. */
const runtimeDirectory = (): string => {
  const base = NodePath.join(NodeOs.tmpdir(), `skein-sandbox-${process.getuid?.() ?? "user"}`)
  NodeFs.mkdirSync(base, { recursive: true, mode: 0o700 })
  const stat = NodeFs.lstatSync(base)
  if (!stat.isDirectory() || (process.getuid !== undefined && stat.uid !== process.getuid()) || (stat.mode & 0o077) !== 0) {
    throw new Error(`${base} is not a private directory of this user`)
  }
  // What a Skein that was killed left behind (its sessions' /tmp, its proxy's socket): only in
  // this PID namespace, where a pid says whether its owner lives (another may share /tmp).
  const space = pidNamespace()
  for (const name of NodeFs.readdirSync(base)) {
    const match = /^(\d+)\.(\d+)-/.exec(name)
    const pid = Number(match?.[2])
    if (match !== null && match[1] === space && pid !== process.pid && !isAlive(pid)) removeQuietly(NodePath.join(base, name))
  }
  return NodeFs.mkdtempSync(NodePath.join(base, `${space}.${process.pid}-`))
}

/** This process's PID namespace, as the number of its inode ("0" where it cannot be read). */
const pidNamespace = (): string => {
  try {
    return /\[(\d+)\]/.exec(NodeFs.readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0"
  } catch {
    return "0"
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const removeQuietly = (path: string) => {
  try {
    NodeFs.rmSync(path, { recursive: true, force: true })
  } catch {
    // Something in it another user made (a root command in a sandbox of root's): left behind.
  }
}

/** Runs `true` the way a command runs, in a throwaway session: whether it works, and why not. */
const probe = (tools: Policy.Tools, dir: string, seccomp: string | undefined): Effect.Effect<Availability> =>
  Effect.scoped(Effect.gen(function*() {
    const ns = yield* Namespace.make(tools.bwrap, {})
    const tmp = NodePath.join(dir, "probe")
    NodeFs.mkdirSync(tmp, { recursive: true, mode: 0o700 })
    yield* Effect.addFinalizer(() => Effect.sync(() => removeQuietly(tmp)))
    const layout = Facts.layout({ roots: [tmp], allowWrite: [], denyRead: [], cwd: tmp, home: NodeOs.homedir(), skeinHome: tmp, runtime: NodePath.dirname(dir), tmp }, false)
    const line = Policy.commandLine(tools, layout, { file: "/bin/sh", args: ["-c", "true"] }, { seccomp: seccomp !== undefined, namespaces: held(ns) })
    const seccompFd = seccomp === undefined ? [] : [yield* openFile(seccomp)]
    let stderr = ""
    const group = yield* Effect.acquireRelease(
      ProcessGroup.spawnProgram({ file: line.file, args: line.args, cwd: tmp, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, fds: seccompFd }),
      ProcessGroup.release
    ).pipe(Effect.mapError(({ code }) => `nsenter could not start (${code ?? "unknown error"})`))
    group.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString("utf8")
    })
    const finished = yield* ProcessGroup.awaitFor(group.exited, 15_000)
    yield* ProcessGroup.awaitFor(group.drained, 100)
    const status = group.exitStatus()
    if (!finished || status?.code !== 0) {
      return yield* Effect.fail(`a sandboxed \`true\` failed (${finished ? `exit ${status?.code ?? status?.signal}` : "no exit within 15 s"})${stderr.trim() === "" ? "" : `: ${stderr.trim().split("\n").slice(-2).join(" / ")}`}`)
    }
    return { _tag: "available", tools, seccomp: seccomp !== undefined } as const
  })).pipe(Effect.catch((reason: string) => Effect.succeed({ _tag: "unavailable", reason } as const)))

/** Where a command's `nsenter` finds the session's namespaces: this process's descriptors. */
const held = (ns: Namespace.Namespace): Policy.Held => ({ pid: process.pid, userFd: ns.userFd, netFd: ns.netFd, mntFd: ns.mntFd })

/** Opens a file for reading for the scope's lifetime (bwrap reads the seccomp filter from it). */
const openFile = (path: string) =>
  Effect.acquireRelease(
    Effect.try({ try: () => NodeFs.openSync(path, "r"), catch: (error) => `cannot open ${path}: ${String(error)}` }),
    (fd) => Effect.sync(() => NodeFs.closeSync(fd))
  )

/**
 * The sandbox of this process (`settings`), in the scope (the runtime's): its runtime
 * directory and proxy go with it. `skeinHome`: Skein's home, hidden from commands.
 */
export const make = (settings: Settings, options: { readonly skeinHome: string; readonly userHome?: string | undefined }): Effect.Effect<Manager, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const home = options.userHome ?? NodeOs.homedir()
    let dir: string | undefined
    yield* Effect.addFinalizer(() => Effect.sync(() => dir !== undefined && removeQuietly(dir)))
    /** The runtime directory, made on first use. */
    const runtimeDir = Effect.try({ try: () => (dir ??= runtimeDirectory()), catch: (error) => `no runtime directory for the sandbox: ${error instanceof Error ? error.message : String(error)}` })
    /** The seccomp filter's file, written once (undefined where there is no filter for this machine). */
    const seccompFile = Effect.flatMap(runtimeDir, (base) =>
      Effect.try({
        try: () => {
          const bytes = Seccomp.program(process.arch)
          if (bytes === undefined) return undefined
          const path = NodePath.join(base, "seccomp.bpf")
          if (!NodeFs.existsSync(path)) NodeFs.writeFileSync(path, bytes, { mode: 0o600 })
          return path
        },
        catch: (error) => `cannot write the seccomp filter: ${String(error)}`
      }))

    const availability = yield* Effect.cached(
      settings.mode === "off"
        ? Effect.succeed<Availability>({ _tag: "unavailable", reason: "the sandbox is off" })
        : Effect.gen(function*() {
          const tools = findTools()
          if ("missing" in tools) return { _tag: "unavailable", reason: tools.missing } as const
          const prepared = yield* Effect.result(Effect.all([runtimeDir, seccompFile]))
          if (prepared._tag === "Failure") return { _tag: "unavailable", reason: prepared.failure } as const
          return yield* probe(tools, prepared.success[0], prepared.success[1])
        })
    )

    const proxySocket = yield* Effect.cached(
      settings.allow.length === 0
        ? Effect.succeed<string | undefined>(undefined)
        : Effect.flatMap(runtimeDir, (base) => Proxy.start(NodePath.join(base, "proxy.sock"), settings.allow).pipe(Scope.provide(scope), Effect.map((proxy) => proxy.socket)))
    )

    let sessions = 0
    const session = (where: { readonly cwd: string; readonly roots: ReadonlyArray<string> }) =>
      Effect.gen(function*() {
        const sessionScope = yield* Effect.scope
        const n = ++sessions
        let fellBack = false
        let tmp: string | undefined
        yield* Effect.addFinalizer(() => Effect.sync(() => tmp !== undefined && removeQuietly(NodePath.dirname(tmp))))
        const lock = yield* Semaphore.make(1)
        let made: { readonly ns: Namespace.Namespace; readonly tmp: string } | { readonly error: string } | undefined
        /** The session's namespaces and /tmp, made once (a failure is kept too: it is not retried for each command). */
        const namespaces = lock.withPermits(1)(Effect.suspend(() => {
          if (made !== undefined) return Effect.succeed(made)
          return Effect.gen(function*() {
            const available = yield* availability
            if (available._tag === "unavailable") return { error: available.reason }
            const base = yield* runtimeDir
            const socket = yield* proxySocket
            const child = yield* Scope.fork(sessionScope)
            const ns = yield* Namespace.make(available.tools.bwrap, { proxySocket: socket }).pipe(
              Scope.provide(child),
              Effect.onError(() => Scope.close(child, Exit.void))
            )
            const dir = NodePath.join(base, `s${n}`, "tmp")
            NodeFs.mkdirSync(dir, { recursive: true, mode: 0o700 })
            tmp = dir
            return { ns, tmp: dir }
          }).pipe(
            Effect.catch((error: string) => Effect.succeed({ error })),
            Effect.tap((result) => Effect.sync(() => void (made = result)))
          )
        }))

        const placement = (outsideRequested: boolean): Effect.Effect<Placement> =>
          Effect.gen(function*() {
            if (settings.mode === "off") return { _tag: "outside", why: "off" } as const
            const available = yield* availability
            const ready = available._tag === "available" && !outsideRequested ? yield* namespaces : undefined
            const reason = available._tag === "unavailable" ? available.reason : ready !== undefined && "error" in ready ? ready.error : undefined
            if (reason !== undefined) {
              return settings.mode === "required"
                ? { _tag: "refused", reason: `The sandbox is required, and it cannot run commands here: ${reason}.` } as const
                : { _tag: "outside", why: "unavailable", reason } as const
            }
            if (outsideRequested) {
              return settings.mode === "required"
                ? { _tag: "refused", reason: "The sandbox is required here: no command runs outside it." } as const
                : { _tag: "outside", why: "requested" } as const
            }
            return { _tag: "inside" } as const
          })

        const prepare: SessionSandbox["prepare"] = (program, how, use) =>
          Effect.scoped(Effect.gen(function*() {
            const placed = yield* placement(how.outside)
            if (placed._tag === "refused") return yield* Effect.fail(placed.reason)
            if (placed._tag === "outside") {
              if (!how.required) return yield* use(undefined)
              return yield* Effect.fail(
                placed.why === "off"
                  ? "it asks for the sandbox, and the sandbox is off (sandbox: \"off\")"
                  : `it asks for the sandbox, which cannot run it here: ${placed.reason ?? "unavailable"}`
              )
            }
            const available = yield* availability
            const ready = yield* namespaces
            if (available._tag !== "available" || "error" in ready) return yield* Effect.fail("the sandbox is not available")
            const runtime = yield* Effect.orElseSucceed(runtimeDir, () => undefined)
            const file = program.file.includes("/") ? program.file : (() => {
              const found = Containment.resolveProgram(program.file, program.env, program.cwd)
              return "path" in found ? found.path : undefined
            })()
            if (file === undefined) return yield* Effect.fail(`\`${program.file}\` was not found on the PATH`)
            const layout = Facts.layout({
              roots: where.roots,
              allowWrite: settings.allowWrite,
              denyRead: settings.denyRead,
              cwd: program.cwd,
              home,
              skeinHome: options.skeinHome,
              // Every Skein's of this user, not only this one's: no command rewrites a filter.
              runtime: runtime === undefined ? undefined : NodePath.dirname(runtime),
              tmp: ready.tmp
            }, how.readOnly)
            const line = Policy.commandLine(available.tools, layout, { file, args: program.args }, { seccomp: available.seccomp, namespaces: held(ready.ns) })
            const seccomp = available.seccomp ? yield* seccompFile : undefined
            const filterFd = seccomp === undefined ? [] : [yield* openFile(seccomp)]
            return yield* use({
              file: line.file,
              args: line.args,
              env: Env.environment(program.env, ready.ns.proxyPort),
              fds: filterFd,
              endsWithLeader: true,
              confined: true
            })
          }))

        return {
          setting: settings.mode,
          allow: settings.allow,
          placement,
          prepare,
          explain: (output) => Blocked.hint(output, { outsideAllowed: settings.mode !== "required", networkAllowed: settings.allow }),
          firstFallback: () => {
            if (fellBack) return false
            fellBack = true
            return true
          }
        } satisfies SessionSandbox
      })

    return { settings, availability, session } satisfies Manager
  })
