/**
 * A throwaway PostgreSQL server for tests: its own cluster in a temp directory, listening only
 * on 127.0.0.1 at a free port, trusted without a password, tuned for speed (no fsync).
 *
 *   Postgres.describeWithPostgres("SqlStore", (server) => {     // one server for the file
 *     it("…", async () => {
 *       const db = await server().createDatabase()              // a fresh database per test
 *       … PgClient.layer({ url: Redacted.make(db.url) }) …
 *     })
 *   })
 *
 * Debian's `postgresql` package is found in /usr/lib/postgresql/<newest>/bin, else on PATH. A
 * suite is skipped only when those binaries are absent (`skipReason`); any other failure fails
 * it, with the tail of the server's log in the error.
 *
 * PostgreSQL refuses to run as root: as root (tests and CI are), initdb and postgres run as
 * the `postgres` system user that the package creates (`nobody` when there is none), in a
 * temp directory given to that user. Node's `spawn({ uid, gid })` changes user without a
 * `runuser` in between, so the pid we hold is the postmaster's own.
 *
 * No server outlives the test process: `stop()` shuts it down (fast) and removes its
 * directory; a process `exit` handler sends an immediate shutdown to any still running; and a
 * watchdog `sh` in its own session, which waits for the end of a pipe from this process, shuts
 * the server down and removes its directory when the process dies any other way (a signal,
 * SIGKILL).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process"
import { accessSync, chownSync, closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe } from "vitest"

/** Why a PostgreSQL suite is skipped: the only reason it may be. */
export const skipReason =
  "PostgreSQL binaries not found (install Debian's postgresql): looked for initdb, postgres and psql in /usr/lib/postgresql/*/bin and on PATH"

/** Where to reach one database of a server. `url` is `postgres://user@host:port/database`. */
export interface Database {
  readonly url: string
  readonly host: string
  readonly port: number
  readonly database: string
  readonly user: string
}

/** A running server, connected to as `user` (its superuser) with no password; `database` exists. */
export interface Server extends Database {
  /** The temp directory holding the cluster (`data/`), its log and its unix socket. */
  readonly dir: string
  /** The postmaster's pid. */
  readonly pid: number
  /** Creates an empty database (default name: unique); its name must be a plain lowercase identifier. */
  readonly createDatabase: (name?: string) => Promise<Database>
  /** The last lines of the server's log. */
  readonly logTail: (lines?: number) => string
  /** Fast shutdown, then removes `dir`. Idempotent. */
  readonly stop: () => Promise<void>
}

const HOST = "127.0.0.1"
const USER = "skein"
const NEEDED = ["initdb", "postgres", "psql"]
const READY_TIMEOUT_MS = 30_000
const STOP_TIMEOUT_MS = 10_000

const run = promisify(execFile)

const hasAll = (dir: string) =>
  NEEDED.every((name) => {
    try {
      accessSync(path.join(dir, name), constants.X_OK)
      return true
    } catch {
      return false
    }
  })

const findBin = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v)).sort((a, b) => Number(b) - Number(a))
    : []
  for (const version of versions) {
    const bin = path.join(root, version, "bin")
    if (hasAll(bin)) return bin
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter).filter(Boolean)) {
    const initdb = path.join(dir, "initdb")
    if (!existsSync(initdb)) continue
    // A symlink (Debian's /usr/local/bin/initdb) points at the directory that has the rest.
    const real = path.dirname(realpathSync(initdb))
    if (hasAll(real)) return real
    if (hasAll(dir)) return dir
  }
  return undefined
}

let found: { readonly bin: string | undefined } | undefined

/** The directory holding initdb, postgres and psql, or undefined when PostgreSQL is not installed. */
export const available = (): string | undefined => (found ??= { bin: findBin() }).bin

/**
 * `describe` with one server for the suite (started before its tests, stopped after them),
 * or `describe.skip` with `skipReason` in its name when the binaries are absent.
 */
export const describeWithPostgres = (name: string, body: (server: () => Server) => void): void => {
  if (available() === undefined) {
    describe.skip(`${name} (skipped: ${skipReason})`, () => body(() => {
      throw new Error(skipReason)
    }))
    return
  }
  describe(name, () => {
    let server: Server | undefined
    beforeAll(async () => {
      server = await start()
    }, READY_TIMEOUT_MS + 10_000)
    afterAll(async () => {
      await server?.stop()
    }, 2 * STOP_TIMEOUT_MS + 10_000)
    body(() => {
      if (server === undefined) throw new Error("the PostgreSQL server is not started (used outside a test?)")
      return server
    })
  })
}

/** Who runs initdb and postgres: ourselves, or as root a system user (PostgreSQL refuses root). */
interface RunAs {
  readonly uid?: number
  readonly gid?: number
  readonly name: string
}

const runAs = (): RunAs => {
  if (process.getuid?.() !== 0) return { name: process.env.USER ?? `uid ${process.getuid?.()}` }
  for (const name of ["postgres", "nobody"]) {
    try {
      const fields = execFileSync("getent", ["passwd", name], { encoding: "utf8" }).split(":")
      const uid = Number(fields[2])
      const gid = Number(fields[3])
      if (Number.isInteger(uid) && uid !== 0 && Number.isInteger(gid)) return { uid, gid, name }
    } catch {
      // no such user: try the next
    }
  }
  throw new Error("running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as (create one: useradd --system --no-create-home postgres)")
}

/** The environment without PG* variables (PGHOST, PGSSLMODE, … would redirect our clients). */
const cleanEnv = (home: string): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("PG"))),
  HOME: home,
  LC_ALL: "C"
})

/** A port that was free a moment ago on 127.0.0.1 (the kernel's pick for port 0). */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, HOST, () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })

const tail = (file: string, lines: number) => {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n")
  } catch {
    return "(no log)"
  }
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

const waitExit = (child: ChildProcess, ms: number) =>
  exited(child)
    ? Promise.resolve(true)
    : new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve(true)
      })
    })

// Servers still running, for the `exit` handler.
const running = new Set<ChildProcess>()
let exitHandler = false
const onExit = () => {
  for (const child of running) {
    try {
      child.kill("SIGQUIT") // immediate shutdown; the watchdog removes the directory once it is gone
    } catch {
      // already gone
    }
  }
}

/**
 * Waits for the end of its stdin (this process's end of the pipe closes when it dies), then
 * shuts postgres ($1) down, kills it if it lingers, and removes its directory ($2). `stop()`
 * kills the watchdog first, so it does nothing on an orderly stop. A zombie counts as gone:
 * postgres's parent (us) is dead, and a container's pid 1 may never reap it.
 */
const WATCHDOG = `read -r _ || :
alive() { kill -0 "$1" 2>/dev/null && ! grep -q ') Z ' "/proc/$1/stat" 2>/dev/null; }
kill -QUIT "$1" 2>/dev/null
i=0
while [ $i -lt 100 ] && alive "$1"; do sleep 0.05; i=$((i + 1)); done
alive "$1" && kill -KILL "$1" 2>/dev/null
rm -rf "$2"`

const startWatchdog = (pid: number, dir: string) => {
  const watchdog = spawn("sh", ["-c", WATCHDOG, "skein-postgres-watchdog", String(pid), dir], {
    detached: true, // its own session: a terminal's Ctrl-C does not take it down before it acts
    stdio: ["pipe", "ignore", "ignore"]
  })
  watchdog.on("error", () => {}) // no sh: the exit handler still stops the server
  watchdog.unref()
  ;(watchdog.stdin as net.Socket | null)?.unref()
  return watchdog
}

/**
 * Stops a server: its watchdog first (so it does not act), then `signal` (SIGINT is a fast
 * shutdown, SIGQUIT an immediate one), escalating to SIGQUIT and SIGKILL if postgres lingers.
 */
const shutdown = async (child: ChildProcess, watchdog: ChildProcess | undefined, signal: "SIGINT" | "SIGQUIT") => {
  watchdog?.kill("SIGKILL")
  running.delete(child)
  if (exited(child)) return
  child.kill(signal)
  if (await waitExit(child, STOP_TIMEOUT_MS)) return
  child.kill("SIGQUIT")
  if (await waitExit(child, 5_000)) return
  child.kill("SIGKILL")
  await waitExit(child, 5_000)
}

let databases = 0
const uniqueName = () => `test_${process.pid}_${++databases}_${Math.random().toString(36).slice(2, 8)}`

/**
 * Starts a server: initdb in a fresh temp directory, postgres on a free port of 127.0.0.1,
 * waits until it accepts connections, creates `database` (default "skein"). Rejects with the
 * log's tail when any step fails, leaving nothing behind.
 */
export const start = async (options: { readonly database?: string } = {}): Promise<Server> => {
  const bin = available()
  if (bin === undefined) throw new Error(skipReason)
  const user = runAs()
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-pg-")))
  const data = path.join(dir, "data")
  const log = path.join(dir, "postgres.log")
  const env = cleanEnv(dir)
  const ids = user.uid === undefined ? {} : { uid: user.uid, gid: user.gid! }
  const fail = (step: string, detail: string) =>
    new Error(`PostgreSQL ${step} failed (bin ${bin}, as ${user.name}, dir ${dir}):\n${detail}`)
  let child: ChildProcess | undefined
  let watchdog: ChildProcess | undefined
  const abandon = async () => {
    if (child !== undefined) await shutdown(child, watchdog, "SIGQUIT")
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid)
    try {
      await run(path.join(bin, "initdb"), [
        "-D", data, "-U", USER, "-E", "UTF8", "--locale=C", "--auth=trust", "--no-sync", "--no-instructions"
      ], { ...ids, env, cwd: dir })
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string }
      const hint = ids.uid === undefined ? "" : `\n(as root, ${user.name} must be able to reach ${dir}: is ${os.tmpdir()} searchable by others? set TMPDIR)`
      throw fail("initdb", `${e.stderr || e.stdout || e.message}`.trim() + hint)
    }
    // Trust only the private unix socket and loopback IPv4 (the one address we listen on).
    const hba = path.join(data, "pg_hba.conf")
    writeFileSync(hba, "local all all trust\nhost all all 127.0.0.1/32 trust\n")
    if (ids.uid !== undefined) chownSync(hba, ids.uid, ids.gid)

    let port = 0
    // The port is free when probed; another process may take it before postgres binds: retry.
    for (let attempt = 1; ; attempt++) {
      port = await freePort()
      const fd = openSync(log, "w") // this attempt's log only
      if (ids.uid !== undefined) chownSync(log, ids.uid, ids.gid)
      child = spawn(path.join(bin, "postgres"), [
        "-D", data,
        "-p", String(port),
        "-c", `listen_addresses=${HOST}`,
        "-c", `unix_socket_directories=${dir}`,
        "-c", "unix_socket_permissions=0700",
        "-c", "fsync=off",
        "-c", "synchronous_commit=off",
        "-c", "full_page_writes=off",
        "-c", "logging_collector=off"
      ], { ...ids, env, cwd: dir, stdio: ["ignore", fd, fd] })
      closeSync(fd)
      const spawned = child
      const spawnError = new Promise<Error>((resolve) => spawned.once("error", resolve))
      if (spawned.pid === undefined) throw fail("spawn", String(await spawnError))
      running.add(spawned)
      if (!exitHandler) {
        exitHandler = true
        process.on("exit", onExit)
      }
      watchdog = startWatchdog(spawned.pid, dir)
      const ready = await waitReady(spawned, data, log)
      if (ready === "ready") break
      await shutdown(spawned, watchdog, "SIGQUIT")
      if (ready === "in use" && attempt < 3) continue
      const why = ready === "timeout" ? `not ready after ${READY_TIMEOUT_MS} ms` : `postgres exited (${spawned.exitCode ?? spawned.signalCode})`
      throw fail("start", `${why}; log:\n${tail(log, 30)}`)
    }
    const server = child
    const pid = server.pid!
    const dog = watchdog!

    const databaseAt = (database: string): Database => ({
      url: `postgres://${USER}@${HOST}:${port}/${database}`,
      host: HOST,
      port,
      database,
      user: USER
    })
    const createDatabase = async (name = uniqueName()): Promise<Database> => {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain lowercase identifier: ${JSON.stringify(name)}`)
      try {
        await run(path.join(bin, "psql"), [
          "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", String(port), "-U", USER, "-d", "postgres",
          "-c", `CREATE DATABASE "${name}"`
        ], { env })
      } catch (error) {
        const e = error as { stderr?: string; message: string }
        throw fail(`CREATE DATABASE ${name}`, `${(e.stderr || e.message).trim()}\n${tail(log, 10)}`)
      }
      return databaseAt(name)
    }
    await createDatabase(options.database ?? USER)

    let stopping: Promise<void> | undefined
    const stop = () =>
      (stopping ??= (async () => {
        await shutdown(server, dog, "SIGINT") // fast: disconnect clients, checkpoint, exit
        rmSync(dir, { recursive: true, force: true })
      })())

    return { ...databaseAt(options.database ?? USER), dir, pid, createDatabase, logTail: (lines = 30) => tail(log, lines), stop }
  } catch (error) {
    await abandon()
    throw error
  }
}

/**
 * Polls `postmaster.pid` until its status line says "ready" (what `pg_ctl start -w` reads):
 * "in use" when postgres exited because its port was taken, "exited" for any other exit.
 */
const waitReady = async (child: ChildProcess, data: string, log: string): Promise<"ready" | "in use" | "exited" | "timeout"> => {
  const pidfile = path.join(data, "postmaster.pid")
  const deadline = performance.now() + READY_TIMEOUT_MS
  while (performance.now() < deadline) {
    if (exited(child)) return /could not (bind|create listen)|already in use/i.test(tail(log, 20)) ? "in use" : "exited"
    try {
      const lines = readFileSync(pidfile, "utf8").split("\n")
      if (Number(lines[0]) === child.pid && lines[7]?.trim() === "ready") return "ready"
    } catch {
      // not written yet
    }
    await sleep(10)
  }
  return "timeout"
}
