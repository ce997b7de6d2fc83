/**
 * A session's network namespace: its own loopback, no route out, shared by every command of
 * the session (a server one command starts is reached by the next), reachable from nothing
 * else; and its mount namespace, where `/dev` is prepared once (`SESSION_DEV`). Commands enter
 * both with `nsenter` before their own bubblewrap (`Policy.commandLine`).
 *
 * Unprivileged, entering a network namespace needs the rights of the user namespace that owns
 * it, and bubblewrap hides the one that owns the namespaces it makes. So it is made in two
 * steps, each a bwrap that prints the pid of its program and waits on its stdin:
 * 1. `bwrap --unshare-user`: a user namespace of ours (we hold it by a descriptor);
 * 2. `bwrap --userns FD --unshare-net`: a network namespace owned by it, with loopback up
 *    (bubblewrap brings it up), and the mount namespace bwrap makes with it; we hold both by
 *    descriptors too.
 * The descriptors keep them alive, so the processes can go at once, unless the session
 * reaches hosts through the egress proxy: then the second one is the forwarder from
 * 127.0.0.1:PORT inside to the proxy's unix socket outside, for as long as the session lasts.
 * Every holder runs under `--die-with-parent` and the usual containment (its tree dies with
 * Skein, even with `kill -9`); the descriptors close with the scope, and with Skein.
 */
import * as NodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"

export interface Namespace {
  /** Descriptors (in this process) of the session's user, network and mount namespaces. */
  readonly userFd: number
  readonly netFd: number
  readonly mntFd: number
  /** Where the forwarder to the egress proxy listens inside (127.0.0.1), when there is one. */
  readonly proxyPort: number | undefined
}

/** How long a holder may take to say its pid (bwrap and, for the forwarder, Node starting on a busy machine). */
const START_MS = 15_000

/** What runs in the network namespace when commands reach the proxy through it. */
const FORWARDER = `const net = require("node:net")
const target = process.env.SKEIN_PROXY_SOCKET
const server = net.createServer((c) => {
  const u = net.connect(target)
  c.on("error", () => u.destroy()); u.on("error", () => c.destroy())
  c.pipe(u); u.pipe(c)
})
server.on("error", (e) => { process.stderr.write(String(e) + "\\n"); process.exit(1) })
server.listen(0, "127.0.0.1", () => process.stdout.write(process.pid + " " + server.address().port + "\\n"))
process.stdin.on("end", () => process.exit(0)).on("error", () => process.exit(0)).resume()`

const WAIT = ["/bin/sh", "-c", "echo $$; exec cat"]

/**
 * The session's mount namespace: the machine's file system as it is (`--bind`, not read-only:
 * bubblewrap's binds never lift a read-only flag they find, and each command binds its roots
 * and its /tmp writable from here), over which a `/dev` is prepared once, as bubblewrap's
 * `--dev` makes it (a tmpfs, the six devices, a devpts instance, the usual links), then made
 * read-only (its entries cannot be replaced for the session's later commands) but for a
 * `/dev/shm` of its own. Each command takes it with one recursive `--dev-bind /dev /dev`
 * instead of making its own (`Policy.bwrapOptions`). The machine's `/dev` lies below it, never
 * seen. bubblewrap makes every mount a slave: what is mounted or unmounted on the machine later
 * reaches the session where the machine's mounts are shared (systemd's default).
 */
const SESSION_DEV: ReadonlyArray<string> = ["--bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]

/** The first line a holder prints, or why there is none (its stderr, when it said something). */
const firstLine = (group: ProcessGroup.Group, stderr: () => string): Effect.Effect<string, string> =>
  Effect.callback<string, string>((resume) => {
    let text = ""
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8")
      const end = text.indexOf("\n")
      if (end >= 0) done(Effect.succeed(text.slice(0, end).trim()))
    }
    const fail = () => done(Effect.fail(stderr().trim().split("\n").slice(-3).join(" / ") || "it exited without a word"))
    const timer = setTimeout(() => done(Effect.fail(`no answer within ${START_MS / 1000} s`)), START_MS)
    let finished = false
    function done(effect: Effect.Effect<string, string>) {
      if (finished) return
      finished = true
      clearTimeout(timer)
      group.stdout.off("data", onData)
      group.stdout.off("close", fail)
      resume(effect)
    }
    group.stdout.on("data", onData)
    group.stdout.once("close", fail)
    return Effect.sync(() => done(Effect.fail("interrupted")))
  })

/** A holder: bwrap with `args`, stdin open (closing it ends the holder), released with the scope. */
const holder = (bwrap: string, args: ReadonlyArray<string>, env: Record<string, string>, fds: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const group = yield* Effect.acquireRelease(
      ProcessGroup.spawnProgram({ file: bwrap, args, cwd: "/", env, stdin: "pipe", fds }).pipe(
        Effect.mapError(({ code }) => `bwrap could not start (${code ?? "unknown error"})`)
      ),
      (group) =>
        Effect.gen(function*() {
          group.stdin?.end()
          yield* ProcessGroup.awaitFor(group.exited, 100)
          yield* ProcessGroup.release(group)
        })
    )
    let stderr = ""
    group.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString("utf8")
    })
    const line = yield* firstLine(group, () => stderr)
    return line
  })

/** Opens `/proc/<pid>/ns/<kind>` for the scope's lifetime. */
const openNamespace = (pid: number, kind: "user" | "net" | "mnt") =>
  Effect.acquireRelease(
    Effect.try({
      try: () => NodeFs.openSync(`/proc/${pid}/ns/${kind}`, "r"),
      catch: (error) => `cannot open the ${kind} namespace of ${pid}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`
    }),
    (fd) => Effect.sync(() => NodeFs.closeSync(fd))
  )

const pidOf = (line: string): number | undefined => {
  const pid = Number(line.split(" ")[0])
  return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined
}

/**
 * Makes a session's namespaces in the scope (closed with it). `proxySocket`: the egress
 * proxy's socket, when the session may reach hosts through it.
 */
export const make = (bwrap: string, options: { readonly proxySocket?: string | undefined }): Effect.Effect<Namespace, string, Scope.Scope> =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const env = { PATH: process.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin" }
    const held = (line: string, kind: "user" | "net" | "mnt") => {
      const pid = pidOf(line)
      return pid === undefined
        ? Effect.fail(`bwrap said ${JSON.stringify(line.slice(0, 80))} instead of a pid`)
        : openNamespace(pid, kind).pipe(Scope.provide(outer))
    }
    // 1. A user namespace of ours; its holder goes once we hold it.
    const userFd = yield* Effect.scoped(
      Effect.flatMap(holder(bwrap, ["--unshare-user", "--die-with-parent", "--ro-bind", "/", "/", "--", ...WAIT], env, []), (line) => held(line, "user"))
    ).pipe(Effect.mapError((why) => `the session's user namespace could not be made: ${why}`))
    // 2. A network namespace it owns, and the mount namespace with the session's /dev. The
    // forwarder stays for the session; a plain holder goes.
    const args = ["--userns", "3", "--unshare-net", "--die-with-parent", ...SESSION_DEV, "--"]
    const both = (line: string) => Effect.all([held(line, "net"), held(line, "mnt")])
    const second: Effect.Effect<readonly [number, number, number | undefined], string, Scope.Scope> = options.proxySocket === undefined
      ? Effect.scoped(Effect.flatMap(holder(bwrap, [...args, ...WAIT], env, [userFd]), (line) => Effect.map(both(line), ([net, mnt]) => [net, mnt, undefined] as const)))
      : Effect.flatMap(
        holder(bwrap, [...args, process.execPath, "-e", FORWARDER], { ...env, SKEIN_PROXY_SOCKET: options.proxySocket }, [userFd]),
        (line) => {
          const port = Number(line.split(" ")[1])
          return Number.isInteger(port) && port > 0 && port < 65536
            ? Effect.map(both(line), ([net, mnt]) => [net, mnt, port] as const)
            : Effect.fail(`the proxy's forwarder said ${JSON.stringify(line.slice(0, 80))} instead of its port`)
        }
      )
    const [netFd, mntFd, proxyPort] = yield* second.pipe(Effect.mapError((why) => `the session's network and mount namespaces could not be made: ${why}`))
    return { userFd, netFd, mntFd, proxyPort }
  })
