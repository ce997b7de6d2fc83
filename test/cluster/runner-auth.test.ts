/**
 * The token on a runner's port, over real sockets: a runner that connects again (its RPC client
 * does after a drop) says the token again on the new connection; a connection that does not say
 * it within 5 s (on the TestClock), or past the cap, is dropped.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Queue from "effect/Queue"
import type * as Socket from "effect/socket/Socket"
import * as TestClock from "effect/testing/TestClock"
import * as net from "node:net"
import * as RunnerAuth from "../../src/cluster/RunnerAuth.ts"
import * as Gate from "../../src/remote/Gate.ts"
import { freePort } from "../support/Serve.ts"

const TOKEN = "a-cluster-token-that-is-long-enough"
const HOST = "127.0.0.1"

/** A runner's port whose connections, once they said the token, report their first bytes. */
const runnerPort = (gate: Gate.Gate) =>
  Effect.gen(function*() {
    const port = freePort()
    const inner = yield* NodeSocketServer.make({ host: HOST, port })
    const received = yield* Queue.unbounded<string>()
    const server = RunnerAuth.server(inner, TOKEN, gate)
    yield* Effect.forkScoped(server.run((socket: Socket.Socket) =>
      Effect.scoped(Effect.gen(function*() {
        const reader = yield* socket.reader
        const chunks = yield* reader.pull
        yield* Queue.offer(received, chunks.map((c) => (typeof c === "string" ? c : new TextDecoder().decode(c))).join(""))
      }))
    ))
    return { port, received }
  }).pipe(Effect.retry({ times: 5 }))

const logged = () => {
  const lines: Array<string> = []
  return { lines, layer: Logger.layer([Logger.make<unknown, void>(({ message }) => void lines.push((Array.isArray(message) ? message : [message]).join(" ")))]) }
}

/** Real time passes (sockets talk) until `condition` holds; no clock is read. */
const until = (condition: () => Effect.Effect<boolean>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 3_000; i++) {
      if (yield* condition()) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.die(new Error(`waited in vain for ${what}`))
  })

const rawConnection = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly socket: net.Socket; readonly closed: Promise<void> }>((resolve) => {
        const socket = net.connect({ host: HOST, port }, () => resolve({ socket, closed }))
        socket.on("error", () => undefined)
        const closed = new Promise<void>((done) => socket.once("close", () => done()))
      })
    ),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

describe("RunnerAuth", () => {
  it.effect("a runner that connects again says the token again: both connections are let in", () => {
    const logs = logged()
    return Effect.gen(function*() {
      const { port, received } = yield* runnerPort(Gate.make(RunnerAuth.LIMITS))
      const socket = RunnerAuth.client(yield* NodeSocket.makeNet({ host: HOST, port }), TOKEN)
      // As the RPC client does: one writer, a reader (a connection) after another.
      const writer = yield* socket.writer
      for (const [i, message] of ["first connection\n", "second connection\n"].entries()) {
        yield* Effect.scoped(Effect.gen(function*() {
          yield* socket.reader
          yield* writer.write(message)
          yield* until(() => Effect.map(Queue.size(received), (n) => n > i || logs.lines.some((l) => l.includes("refused"))), "the message or its refusal")
        }))
      }
      assert.deepStrictEqual(logs.lines.filter((l) => l.includes("refused")), [])
      assert.deepStrictEqual(yield* Queue.takeAll(received), ["first connection\n", "second connection\n"])
    }).pipe(Effect.provide(logs.layer))
  })

  it.effect("a connection that does not say the token within 5 s is dropped, and so is one past the cap", () => {
    const logs = logged()
    return Effect.gen(function*() {
      const gate = Gate.make({ ...RunnerAuth.LIMITS, maxConnections: 1 })
      const { port } = yield* runnerPort(gate)
      const silent = yield* rawConnection(port)
      yield* until(() => Effect.map(gate.count, (c) => c.waiting === 1), "the silent one to wait")
      const extra = yield* rawConnection(port)
      yield* Effect.promise(() => extra.closed)
      yield* TestClock.adjust(5_000)
      yield* Effect.promise(() => silent.closed)
      assert.deepStrictEqual(logs.lines.filter((l) => l.includes("refused")).map((l) => l.replace(/:\d+:/, ":PORT:")), [
        "skein serve: refused a runner connection from 127.0.0.1:PORT: too many connections (at most 1)",
        "skein serve: refused a runner connection from 127.0.0.1:PORT: no token within 5 s"
      ])
    }).pipe(Effect.provide(logs.layer))
  })
})
