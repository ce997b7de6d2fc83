/**
 * `skein serve` over tcp and ws, against peers on real sockets: a connection shows the token
 * first, within 8 KiB and 5 s (on the TestClock), or it is told why and closed; at most
 * `maxConnections` are open, and the next one is refused at once; a peer that has not shown
 * the token holds no more than its bound and holds up no one else; the first line's check,
 * and the same packet's request after it, on one connection.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import * as net from "node:net"
import * as Gate from "../../src/remote/Gate.ts"
import * as Remote from "../../src/remote/Remote.ts"
import * as Serve from "../../src/remote/Serve.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import * as SessionProtocol from "../../src/session/Protocol.ts"
import { freePort } from "../support/Serve.ts"
import { withSkein } from "../support/Sessions.ts"

const TOKEN = "a-test-token-that-is-long-enough"
const HOST = "127.0.0.1"
const script = { turns: [{ calls: [[{ text: "Hello from the server." }]] }] }

/** A peer speaking raw bytes: what it was sent, and whether the server closed it. */
interface Peer {
  readonly socket: net.Socket
  readonly received: () => string
  readonly isClosed: () => boolean
  readonly closed: Promise<void>
}

const connect = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Peer>((resolve, reject) => {
        const socket = net.connect({ host: HOST, port })
        let received = ""
        let isClosed = false
        socket.on("data", (chunk: Buffer) => {
          received += chunk.toString("latin1")
        })
        socket.on("error", () => undefined)
        const closed = new Promise<void>((done) =>
          socket.once("close", () => {
            isClosed = true
            done()
          })
        )
        socket.once("connect", () => resolve({ socket, received: () => received, isClosed: () => isClosed, closed }))
        socket.once("error", reject)
      })
    ),
    (peer) => Effect.sync(() => peer.socket.destroy())
  )

/** Real time passes (sockets talk) until `condition` holds; no clock is read. */
const until = (condition: () => boolean | Effect.Effect<boolean>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 3_000; i++) {
      const result = condition()
      if (typeof result === "boolean" ? result : yield* result) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.die(new Error(`waited in vain for ${what}`))
  })

/** A few turns of the event loop: what the server would do now, it has done. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))

const writeAll = (peer: Peer, text: string) => Effect.promise(() => new Promise<void>((resolve) => peer.socket.write(text, () => resolve())))

/** Every log line, to look at what a refusal says (and does not). */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make<unknown, void>(({ message }) => {
    lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
  })
  return { lines, layer: Logger.layer([logger]) }
}

/** `skein serve` at a free port for the test's scope, over the test's runtime, behind `gate`. */
const serve = (transport: "tcp" | "ws", gate: Gate.Gate) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const port = freePort()
    const address = transport === "tcp" ? { _tag: "tcp" as const, host: HOST, port } : { _tag: "ws" as const, host: HOST, port, path: "/skein" }
    yield* Layer.build(Serve.layer(address, TOKEN, { gate }).pipe(Layer.provide(Layer.succeed(Runtime, runtime))))
    return { port, url: transport === "tcp" ? `tcp://${HOST}:${port}` : `ws://${HOST}:${port}/skein` }
  }).pipe(
    // A port another process took meanwhile: another one.
    Effect.retry({ times: 5 })
  )

/** The Runtime of the server at `url` through `Skein.remote`, with the token, for the scope. */
const remote = (url: string) => Effect.map(Layer.build(Remote.layer({ url, token: TOKEN })), (context) => Context.get(context, Runtime))

/** A turn of a new session, through `runtime`: how it ended. */
const turn = (runtime: Runtime["Service"], cwd: string) =>
  Effect.gen(function*() {
    const session = yield* runtime.newSession({ cwd })
    const events = yield* Stream.runCollect(session.turn([{ type: "text", text: "hi" }]))
    return SessionProtocol.outcomeOf(events.at(-1)!)
  })

/** A turn through a connection of its own. */
const turnThrough = (url: string, cwd: string) => Effect.scoped(Effect.flatMap(remote(url), (runtime) => turn(runtime, cwd)))

const withServer = <A, E>(body: (env: { readonly cwd: string }) => Effect.Effect<A, E, Runtime | Scope.Scope>) =>
  withSkein({ script }, ({ cwd, runtime }) => body({ cwd }).pipe(Effect.provideService(Runtime, runtime)))

describe("skein serve over tcp: the token first, within bounds", () => {
  it.effect("a peer that trickles bytes without a line end is cut off at 8 KiB, told why, and leaves no place held", () =>
    withServer(() =>
      Effect.gen(function*() {
        const gate = Gate.make()
        const { port } = yield* serve("tcp", gate)
        const peer = yield* connect(port)
        let sent = 0
        while (!peer.isClosed() && sent < 64 * 1024) {
          yield* writeAll(peer, "A".repeat(100))
          sent += 100
          // A peer that waits between its bytes: the server reads each piece as it comes.
          if (sent % 1_000 === 0) yield* settle
        }
        yield* Effect.promise(() => peer.closed)
        assert.strictEqual(peer.received(), "refused: a first line longer than 8192 bytes\n")
        assert.isAtMost(sent, 8_192 + 64 * 1024)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 0 && c.waiting === 0), "the place to be given back")
      })))

  it.effect("a peer that does not show the token is closed at 5 s, and not before", () =>
    withServer(() =>
      Effect.gen(function*() {
        const gate = Gate.make()
        const { port } = yield* serve("tcp", gate)
        const peer = yield* connect(port)
        yield* writeAll(peer, "Authorization: Bearer a-test")
        yield* until(() => Effect.map(gate.count, (c) => c.waiting === 1), "the connection to wait for its token")
        yield* TestClock.adjust(4_999)
        yield* settle
        assert.isFalse(peer.isClosed())
        assert.strictEqual(peer.received(), "")
        yield* TestClock.adjust(1)
        yield* Effect.promise(() => peer.closed)
        assert.strictEqual(peer.received(), "refused: no token within 5 s\n")
        yield* until(() => Effect.map(gate.count, (c) => c.open === 0), "the place to be given back")
      })))

  it.effect("past maxConnections the next connection is refused at once; a place comes back when one closes", () =>
    withServer(() =>
      Effect.gen(function*() {
        const gate = Gate.make({ maxConnections: 2 })
        const { port } = yield* serve("tcp", gate)
        const first = yield* connect(port)
        yield* connect(port)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 2), "two connections to hold their places")
        const third = yield* connect(port)
        yield* Effect.promise(() => third.closed)
        assert.strictEqual(third.received(), "refused: too many connections (at most 2)\n")

        first.socket.destroy()
        yield* until(() => Effect.map(gate.count, (c) => c.open === 1), "the first one's place to come back")
        const fourth = yield* connect(port)
        yield* writeAll(fourth, `Authorization: Bearer ${TOKEN}\n`)
        yield* until(() => fourth.received() === "ok\n", "the fourth one to be let in")
        assert.deepStrictEqual(yield* gate.count, { open: 2, waiting: 1 })
      })))

  it.effect("a wrong token is refused and logged without it; the right one is answered `ok`, and a request in the same packet is served", () => {
    const logs = captureLogs()
    return withServer(() =>
      Effect.gen(function*() {
        const gate = Gate.make()
        const { port } = yield* serve("tcp", gate)
        const wrong = yield* connect(port)
        yield* writeAll(wrong, "Authorization: Bearer wrong-token-0123456789\n")
        yield* Effect.promise(() => wrong.closed)
        assert.strictEqual(wrong.received(), "refused: a wrong token\n")
        const none = yield* connect(port)
        yield* writeAll(none, "{\"_tag\":\"Request\",\"id\":\"1\",\"tag\":\"LiveSessions\",\"payload\":{},\"headers\":[]}\n")
        yield* Effect.promise(() => none.closed)
        assert.strictEqual(none.received(), "refused: no token (the first line must be `Authorization: Bearer <token>`)\n")

        const right = yield* connect(port)
        yield* writeAll(right, `Authorization: Bearer ${TOKEN}\n{"_tag":"Request","id":"7","tag":"LiveSessions","payload":{},"headers":[]}\n`)
        yield* until(() => right.received().split("\n").length >= 3, "the answer to the request")
        const [ok, answer] = right.received().split("\n")
        assert.strictEqual(ok, "ok")
        assert.deepInclude(JSON.parse(answer!), { _tag: "Exit", requestId: "7" })

        const refusals = logs.lines.filter((l) => l.includes("refused"))
        assert.strictEqual(refusals.length, 2)
        assert.match(refusals[0]!, /^skein serve: refused a connection from 127\.0\.0\.1:\d+: a wrong token$/)
        assert.isFalse(logs.lines.some((l) => l.includes("wrong-token-0123456789") || l.includes(TOKEN)))
      })).pipe(Effect.provide(logs.layer))
  })

  it.effect("a slow peer that has not shown the token holds up no client that has; one that has is not cut at 5 s", () =>
    withServer(({ cwd }) =>
      Effect.gen(function*() {
        const gate = Gate.make()
        const { port, url } = yield* serve("tcp", gate)
        const slow = yield* connect(port)
        yield* writeAll(slow, "Authori")
        yield* until(() => Effect.map(gate.count, (c) => c.waiting === 1), "the slow one to wait")
        // The slow one goes on trickling while a client that showed the token runs turns.
        const trickle = yield* Effect.forkScoped(Effect.forever(Effect.andThen(writeAll(slow, "z"), settle)))
        const runtime = yield* remote(url)
        assert.deepStrictEqual(yield* turn(runtime, cwd), { stopReason: "end_turn" })
        assert.deepStrictEqual(yield* turnThrough(url, cwd), { stopReason: "end_turn" })
        assert.isFalse(slow.isClosed())
        yield* until(() => Effect.map(gate.count, (c) => c.open === 2 && c.waiting === 1), "the slow one and the held client to be all that is open")
        yield* Fiber.interrupt(trickle)
        // At 5 s the slow one is closed; the client that showed the token goes on.
        yield* TestClock.adjust(5_000)
        yield* Effect.promise(() => slow.closed)
        assert.deepStrictEqual(yield* turn(runtime, cwd), { stopReason: "end_turn" })
        yield* until(() => Effect.map(gate.count, (c) => c.open === 1 && c.waiting === 0), "the held client to be all that is open")
      })))
})

describe("skein serve over ws: the token at the upgrade, within bounds", () => {
  it.effect("a peer that sends a request head slowly is closed at 5 s; one too big is refused by its size", () =>
    withServer(() =>
      Effect.gen(function*() {
        const gate = Gate.make()
        const { port } = yield* serve("ws", gate)
        const slow = yield* connect(port)
        yield* writeAll(slow, "GET /skein HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")
        yield* until(() => Effect.map(gate.count, (c) => c.waiting === 1), "the connection to wait for its token")
        yield* TestClock.adjust(4_999)
        yield* settle
        assert.isFalse(slow.isClosed())
        yield* TestClock.adjust(1)
        yield* Effect.promise(() => slow.closed)

        const big = yield* connect(port)
        yield* writeAll(big, `GET /skein HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ${"f".repeat(9_000)}\r\n\r\n`)
        yield* Effect.promise(() => big.closed)
        assert.match(big.received(), /^HTTP\/1\.1 431 /)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 0), "the places to be given back")
      })))

  it.effect("past maxConnections the next connection is answered 503; a wrong token 401; the right one serves a turn", () =>
    withServer(({ cwd }) =>
      Effect.gen(function*() {
        const gate = Gate.make({ maxConnections: 2 })
        const { port, url } = yield* serve("ws", gate)
        const first = yield* connect(port)
        yield* connect(port)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 2), "two connections to hold their places")
        const third = yield* connect(port)
        yield* Effect.promise(() => third.closed)
        assert.match(third.received(), /^HTTP\/1\.1 503 Service Unavailable\r\n[\s\S]*too many connections \(at most 2\)\n$/)

        const full = yield* Effect.flip(Effect.scoped(Layer.build(Remote.layer({ url, token: TOKEN }))))
        assert.strictEqual(full.message, `The Skein server at ${url} refused the connection: too many connections. Close some, or start it with a higher --max-connections.`)
        first.socket.destroy()
        yield* until(() => Effect.map(gate.count, (c) => c.open === 1), "a place to come back")

        const wrong = yield* Effect.flip(Effect.scoped(Layer.build(Remote.layer({ url, token: "not-the-token-at-all" }))))
        assert.strictEqual(wrong.message, `The Skein server at ${url} refused the token: give the token it was started with (SKEIN_SERVE_TOKEN or --token-file).`)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 1), "the refused one's place to come back")
        const runtime = yield* remote(url)
        assert.deepStrictEqual(yield* turn(runtime, cwd), { stopReason: "end_turn" })
        yield* until(() => Effect.map(gate.count, (c) => c.open === 2 && c.waiting === 1), "the idle peer and the client to be all that is open")
        // At 5 s the idle peer is closed; the upgraded connection goes on.
        yield* TestClock.adjust(5_000)
        yield* until(() => Effect.map(gate.count, (c) => c.open === 1), "the idle one to be closed")
        assert.deepStrictEqual(yield* turn(runtime, cwd), { stopReason: "end_turn" })
      })))
})

describe("Gate.firstLine", () => {
  it.effect("holds at most the bound, whatever comes after: it stops pulling once past it", () =>
    Effect.gen(function*() {
      let pulled = 0
      const chunk = new Uint8Array(1_000).fill(65)
      const pull = Effect.sync(() => {
        pulled++
        return [chunk] as const
      })
      const result = yield* Gate.firstLine(pull, 8_192)
      assert.strictEqual(result._tag, "TooLong")
      assert.strictEqual(pulled, 9)
    }))

  it.effect("the line without its CR LF, and the rest for the protocol", () =>
    Effect.gen(function*() {
      const encoder = new TextEncoder()
      const chunks = [encoder.encode("Authorization: Bea"), encoder.encode("rer x\r\n{\"a\":1}\n"), encoder.encode("more")]
      let i = 0
      const pull = Effect.sync(() => [chunks[i++]!] as const)
      const result = yield* Gate.firstLine(pull, 8_192)
      assert.strictEqual(result._tag, "Line")
      if (result._tag !== "Line") return
      assert.strictEqual(new TextDecoder().decode(result.line), "Authorization: Bearer x")
      assert.deepStrictEqual(result.rest.map((r) => new TextDecoder().decode(r)), ["{\"a\":1}\n"])
    }))
})

describe("Gate.make", () => {
  it.effect("counts places: taken up to the cap, given back with their scope, shown once; a late `shown` changes nothing", () =>
    Effect.gen(function*() {
      const gate = Gate.make({ maxConnections: 2 })
      const scopeA = yield* Scope.make()
      const a = yield* Scope.provide(gate.enter, scopeA)
      const b = yield* gate.enter
      assert.isDefined(a)
      assert.isDefined(b)
      assert.isUndefined(yield* gate.enter)
      assert.deepStrictEqual(yield* gate.count, { open: 2, waiting: 2 })
      yield* a!.shown
      yield* a!.shown
      assert.deepStrictEqual(yield* gate.count, { open: 2, waiting: 1 })
      yield* Scope.close(scopeA, Exit.void)
      assert.deepStrictEqual(yield* gate.count, { open: 1, waiting: 1 })
      // `b` is let in after its connection went away: nothing is counted twice.
      const scopeB = yield* Scope.make()
      const c = yield* Scope.provide(gate.enter, scopeB)
      yield* Scope.close(scopeB, Exit.void)
      yield* c!.shown
      assert.deepStrictEqual(yield* gate.count, { open: 1, waiting: 1 })
    }).pipe(Effect.scoped))
})
