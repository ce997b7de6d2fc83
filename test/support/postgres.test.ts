/**
 * The PostgreSQL harness itself (`Postgres.ts`): a server that `@effect/sql-pg` talks to, run
 * as a non-root user, listening only on 127.0.0.1; a fresh database per test; and nothing left
 * behind (port, directory, processes) by `stop()`, by the exit handler when a test process
 * exits without stopping it, or by the watchdog when the process is killed with SIGKILL.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as SqlClient from "effect/sql/SqlClient"
import { spawn } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import * as net from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { NODE } from "./AgentProcess.ts"
import * as Postgres from "./Postgres.ts"

/** Runs `use` against the database at `url`, through a pool that closes when it ends. */
const withSql = <A>(url: string, use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* use(sql)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })))

/** Whether something accepts TCP connections at 127.0.0.1:port. */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** `/proc/<pid>/stat` fields after the command name: [state, ppid, …]; undefined if gone. */
const stat = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  } catch {
    return undefined
  }
}

/** Alive and not a zombie (a zombie has exited; only its parent's wait is missing). */
const live = (pid: number) => {
  const fields = stat(pid)
  return fields !== undefined && fields[0] !== "Z"
}

/** The postmaster and its children (checkpointer, walwriter, backends, …). */
const processTree = (pid: number) => [
  pid,
  ...readdirSync("/proc").filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => stat(p)?.[1] === String(pid))
]

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])

/** What a dead server leaves: the port still accepting, its directory, live processes. */
const leftovers = async (server: { port: number; dir: string }, processes: ReadonlyArray<number>) => ({
  accepts: await accepts(server.port),
  dir: existsSync(server.dir),
  live: processes.filter(live)
})

const nothingLeft = { accepts: false, dir: false, live: [] }

describe.skipIf(Postgres.available() === undefined)(`Postgres.start${Postgres.available() === undefined ? ` (skipped: ${Postgres.skipReason})` : ""}`, () => {
  it.live("starts a server @effect/sql-pg uses, on 127.0.0.1 only, not as root; stop() leaves nothing behind", () =>
    Effect.gen(function*() {
      const server = yield* Effect.promise(() => Postgres.start())
      const processes = processTree(server.pid)
      const uid = uidOf(server.pid)
      const result = yield* withSql(server.url, (sql) =>
        Effect.gen(function*() {
          const one = yield* sql<{ one: number }>`select 1 as one`
          const listen = yield* sql<{ listen_addresses: string }>`show listen_addresses`
          const fsync = yield* sql<{ fsync: string }>`show fsync`
          yield* sql`create table notes (id serial primary key, body text not null)`
          yield* sql`insert into notes ${sql.insert([{ body: "hello" }, { body: "wörld" }])}`
          const notes = yield* sql<{ id: number; body: string }>`select id, body from notes order by id`
          return { one, listen, fsync, notes }
        })).pipe(Effect.ensuring(Effect.promise(() => server.stop())))
      assert.deepStrictEqual(result, {
        one: [{ one: 1 }],
        listen: [{ listen_addresses: "127.0.0.1" }],
        fsync: [{ fsync: "off" }],
        notes: [{ id: 1, body: "hello" }, { id: 2, body: "wörld" }]
      })
      assert.match(server.url, /^postgres:\/\/skein@127\.0\.0\.1:\d+\/skein$/)
      assert.strictEqual(server.database, "skein")
      assert.isAbove(processes.length, 1, "the postmaster has children")
      if (process.getuid?.() === 0) assert.notStrictEqual(uid, 0, "postgres refuses root: it runs as another user")
      else assert.strictEqual(uid, process.getuid?.())
      const after = yield* Effect.promise(() => leftovers(server, processes))
      assert.deepStrictEqual(after, nothingLeft)
    }))

  for (const ending of ["exit", "SIGKILL"] as const) {
    it(`a test process that ends (${ending}) without stop() leaves nothing behind`, async () => {
      const script = `
        import * as Postgres from ${JSON.stringify(new URL("./Postgres.ts", import.meta.url).pathname)}
        const server = await Postgres.start()
        console.log(JSON.stringify({ port: server.port, dir: server.dir, pid: server.pid }))
        // Exits (the server still running) when told, or when the test's end of the pipe closes.
        process.stdin.once("data", () => process.exit(0)).once("end", () => process.exit(0))
      `
      const child = spawn(NODE, ["--input-type=module", "-e", script], { stdio: ["pipe", "pipe", "pipe"] })
      try {
        let out = ""
        let err = ""
        child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
        const started = await new Promise<{ port: number; dir: string; pid: number }>((resolve, reject) => {
          child.stdout.on("data", (chunk: Buffer) => {
            out += chunk.toString()
            if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]!))
          })
          child.once("exit", (code) => reject(new Error(`the child exited ${code} before starting a server: ${err}`)))
        })
        const processes = processTree(started.pid)
        // (`processes` may hold a backend of a probe: gone by the time the test looks again.)
        expect(await leftovers(started, processes)).toMatchObject({ accepts: true, dir: true, live: expect.arrayContaining([started.pid]) })
        assert.isAbove(processes.length, 1, "the postmaster has children")
        if (ending === "SIGKILL") child.kill("SIGKILL")
        else child.stdin.write("exit\n")
        let after = await leftovers(started, processes)
        for (let i = 0; i < 100 && JSON.stringify(after) !== JSON.stringify(nothingLeft); i++) {
          await sleep(50)
          after = await leftovers(started, processes)
        }
        expect(after).toEqual(nothingLeft)
      } finally {
        child.kill("SIGKILL") // a failed assertion must not leave it (the watchdog then cleans up)
      }
    })
  }
})

Postgres.describeWithPostgres("Postgres.describeWithPostgres", (server) => {
  it.live("gives each test a database of its own", () =>
    Effect.gen(function*() {
      const a = yield* Effect.promise(() => server().createDatabase())
      const b = yield* Effect.promise(() => server().createDatabase("harness_b"))
      assert.notStrictEqual(a.database, b.database)
      assert.strictEqual(b.url, `postgres://skein@127.0.0.1:${server().port}/harness_b`)
      yield* withSql(a.url, (sql) => sql`create table only_in_a (x int)`)
      const seen = yield* withSql(b.url, (sql) => sql<{ t: string | null }>`select to_regclass('only_in_a')::text as t`)
      assert.deepStrictEqual(seen, [{ t: null }])
    }))

  it("refuses a database name that is not a plain identifier, and a name taken", async () => {
    await expect(server().createDatabase("x\"; drop")).rejects.toThrow(/not a plain lowercase identifier/)
    await expect(server().createDatabase("skein")).rejects.toThrow(/already exists/)
  })
})
