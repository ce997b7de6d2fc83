/**
 * Who may hold a connection to a port Skein opens to the network (`skein serve` over tcp, and
 * a cluster runner's port; ws uses the same `Gate` at the HTTP upgrade, in `Serve.ts`), and for
 * how long before it has shown the token.
 *
 * - At most `maxConnections` connections at once, whether they have shown the token or not;
 *   one more is told so in one line and closed.
 * - A connection shows the token in its first line, within `helloMs` of connecting and
 *   `helloBytes` bytes. Until then it holds at most those bytes (a copy of what it sent so
 *   far, nothing of what comes after) and nothing is decoded for it; a wrong token, a longer
 *   line or a late one closes it, and the refusal is logged without what was sent.
 * - Once shown, the connection is the protocol's, with the protocol's own bound on a message.
 *
 * `serve` wraps a `SocketServer`; `client` is the other end: a socket whose every connection
 * (the RPC client connects again after a drop) starts with the line, before anything else the
 * client writes, and, when the server answers, waits for its `ok`.
 */
import * as Crypto from "node:crypto"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Socket from "effect/socket/Socket"
import type * as SocketServer from "effect/socket/SocketServer"
import { NetSocket } from "@effect/platform-node/NodeSocket"

export interface Limits {
  /** Connections open at once (default 128). */
  readonly maxConnections: number
  /** How long a new connection has to show the token (default 5 s). */
  readonly helloMs: number
  /** The longest first line (or, over ws, HTTP request head) before the token is shown (default 8 KiB). */
  readonly helloBytes: number
}

const DEFAULT_LIMITS: Limits = { maxConnections: 128, helloMs: 5_000, helloBytes: 8_192 }

/** One admitted connection: `shown` once it has shown the token (the place it holds is kept until its scope closes). */
export interface Ticket {
  readonly shown: Effect.Effect<void>
  readonly awaitShown: Effect.Effect<void>
}

export interface Gate {
  readonly limits: Limits
  /** Connections open now, and how many of them have not shown the token yet. */
  readonly count: Effect.Effect<{ readonly open: number; readonly waiting: number }>
  /** A place for one connection, until the scope closes; none when all are taken. */
  readonly enter: Effect.Effect<Ticket | undefined, never, Scope.Scope>
}

type Count = { readonly open: number; readonly waiting: number }

/** A connection's place: waiting for the token, shown it, or given back. */
type Place = "waiting" | "shown" | "gone"

export const make = (limits: Partial<Limits> = {}): Gate => {
  const all: Limits = { ...DEFAULT_LIMITS, ...limits }
  const count = Ref.makeUnsafe<Count>({ open: 0, waiting: 0 })
  const take = (c: Count): readonly [boolean, Count] =>
    c.open >= all.maxConnections ? [false, c] : [true, { open: c.open + 1, waiting: c.waiting + 1 }]
  /** Moves a place to `to`, and the count with it (a place that is gone stays gone). */
  const move = (place: Ref.Ref<Place>, to: "shown" | "gone") =>
    Effect.flatMap(Ref.getAndUpdate(place, (from) => (from === "gone" ? from : to)), (from) =>
      from === "gone" || from === to
        ? Effect.succeed(false)
        : Effect.as(Ref.update(count, (c) => ({ open: c.open - (to === "gone" ? 1 : 0), waiting: c.waiting - (from === "waiting" ? 1 : 0) })), true))
  const enter = Effect.acquireRelease(
    Effect.map(Ref.modify(count, take), (admitted) => (admitted ? { place: Ref.makeUnsafe<Place>("waiting"), shown: Deferred.makeUnsafe<void>() } : undefined)),
    (ticket) => (ticket === undefined ? Effect.void : Effect.asVoid(move(ticket.place, "gone")))
  )
  return {
    limits: all,
    count: Ref.get(count),
    enter: Effect.map(enter, (ticket): Ticket | undefined =>
      ticket === undefined ? undefined : {
        shown: Effect.flatMap(move(ticket.place, "shown"), (moved) => (moved ? Effect.asVoid(Deferred.succeed(ticket.shown, undefined)) : Effect.void)),
        awaitShown: Deferred.await(ticket.shown)
      })
  }
}

// ---------------------------------------------------------------------------
// The first line
// ---------------------------------------------------------------------------

const encoder = new TextEncoder()
const LF = 10

type FirstLine =
  | { readonly _tag: "Line"; readonly line: Uint8Array; readonly rest: ReadonlyArray<Uint8Array> }
  | { readonly _tag: "TooLong" }
  | { readonly _tag: "Closed" }

const join = (parts: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const out = new Uint8Array(size)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/**
 * Reads up to the first `\n` (without it, nor a `\r` before it), holding at most `max` bytes;
 * what came after it is `rest`. Each byte is looked at once.
 */
export const firstLine = (pull: Socket.Reader["pull"], max: number): Effect.Effect<FirstLine> =>
  Effect.gen(function*() {
    const parts: Array<Uint8Array> = []
    let size = 0
    while (true) {
      const chunks = yield* Effect.option(pull)
      if (Option.isNone(chunks)) return { _tag: "Closed" } as const
      for (let i = 0; i < chunks.value.length; i++) {
        const item = chunks.value[i]!
        const bytes = typeof item === "string" ? encoder.encode(item) : item
        const lf = bytes.indexOf(LF)
        if (size + (lf < 0 ? bytes.length : lf) > max) return { _tag: "TooLong" } as const
        if (lf < 0) {
          // A copy (a Node Buffer's `slice` would be a view): the chunk itself is not kept.
          parts.push(new Uint8Array(bytes))
          size += bytes.length
          continue
        }
        parts.push(bytes.subarray(0, lf))
        const line = join(parts, size + lf)
        const rest: Array<Uint8Array> = lf + 1 < bytes.length ? [bytes.subarray(lf + 1)] : []
        for (const later of chunks.value.slice(i + 1)) rest.push(typeof later === "string" ? encoder.encode(later) : later)
        return { _tag: "Line", line: line.length > 0 && line[line.length - 1] === 13 ? line.subarray(0, -1) : line, rest } as const
      }
    }
  })

/** A reader that gives `rest` first, then what `reader` reads. */
const withRest = (reader: Socket.Reader, rest: ReadonlyArray<Uint8Array>): Socket.Reader => {
  let first: ReadonlyArray<Uint8Array> | undefined = rest.length > 0 ? rest : undefined
  return {
    upgrade: reader.upgrade,
    pull: Effect.suspend(() => {
      if (first === undefined) return reader.pull
      const chunks = first as readonly [Uint8Array, ...Array<Uint8Array>]
      first = undefined
      return Effect.succeed(chunks)
    })
  }
}

// ---------------------------------------------------------------------------
// The server side
// ---------------------------------------------------------------------------

/** What a server expects first, and what it answers. */
interface Hello {
  /** How the log names a connection ("a connection", "a runner connection"). */
  readonly name: string
  /** Why the first line (its bytes, without `\n`) is refused; undefined when it shows the token. */
  readonly check: (line: Uint8Array) => string | undefined
  /** The line sent once it is shown (none: the protocol starts at once). */
  readonly accepted?: string | undefined
  /** The line a refused connection is sent before it is closed (none: it is closed without a word). */
  readonly refused?: ((why: string) => string) | undefined
}

/** Where a connection comes from, for the log (when the transport is a Node socket). */
const peerOf = Effect.map(Effect.serviceOption(NetSocket), (socket) =>
  Option.isSome(socket) && socket.value.remoteAddress !== undefined ? ` from ${socket.value.remoteAddress}:${socket.value.remotePort}` : "")

/** The socket a connection becomes once it showed the token; undefined when it was refused (or went away). */
const handshake = (socket: Socket.Socket, gate: Gate, hello: Hello): Effect.Effect<Socket.Socket | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const reader = yield* socket.reader
    const writer = yield* socket.writer
    const refuse = (why: string) =>
      Effect.gen(function*() {
        yield* Effect.logWarning(`skein serve: refused ${hello.name}${yield* peerOf}: ${why}`)
        if (hello.refused !== undefined) yield* Effect.ignore(writer.write(hello.refused(why)))
        return undefined
      })
    const ticket = yield* gate.enter
    if (ticket === undefined) return yield* refuse(`too many connections (at most ${gate.limits.maxConnections})`)
    const first = yield* Effect.timeoutOption(firstLine(reader.pull, gate.limits.helloBytes), gate.limits.helloMs)
    if (Option.isNone(first)) return yield* refuse(`no token within ${gate.limits.helloMs / 1000} s`)
    if (first.value._tag === "Closed") return undefined
    if (first.value._tag === "TooLong") return yield* refuse(`a first line longer than ${gate.limits.helloBytes} bytes`)
    const why = hello.check(first.value.line)
    if (why !== undefined) return yield* refuse(why)
    yield* ticket.shown
    if (hello.accepted !== undefined) yield* writer.write(hello.accepted)
    return Socket.make({ reader: Effect.succeed(withRest(reader, first.value.rest)), writer: Effect.succeed(writer) })
  }).pipe(
    // It went away before it was handed over (its reader could not start, a write failed).
    Effect.catchTag("SocketError", () => Effect.succeed(undefined))
  )

/** Admits one connection: a place, then the token, then `handler`; the connection closes with it. */
const admit = <A, E, R>(socket: Socket.Socket, gate: Gate, hello: Hello, handler: (socket: Socket.Socket) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(handshake(socket, gate, hello), (admitted) => (admitted === undefined ? Effect.void : Effect.asVoid(handler(admitted)))))

/** A server whose connections reach `handler` only once they showed the token, within the gate's limits. */
export const serve = (inner: SocketServer.SocketServer["Service"], gate: Gate, hello: Hello): SocketServer.SocketServer["Service"] => ({
  address: inner.address,
  run: (handler) => inner.run((socket) => admit(socket, gate, hello, handler))
})

// ---------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------

/** A server that did not let this client in: it said why (`refused`), said something else, or nothing. */
class Refused extends Data.TaggedError("Refused")<{
  readonly reason: "refused" | "foreign" | "silent"
  /** The server's words, for `refused`. */
  readonly why: string
}> {
  override get message() {
    return this.reason === "refused" ? `refused: ${this.why}` : this.reason === "foreign" ? "not a Skein server" : "no answer"
  }
}

const refusedError = (error: Refused) => new Socket.SocketError({ reason: new Socket.SocketOpenError({ kind: "Unknown", cause: error }) })

/** Printable words of a server's answer, at most 200 characters. */
const words = (bytes: Uint8Array) => new TextDecoder().decode(bytes).replace(/[^\x20-\x7e]/g, "?").slice(0, 200)

interface ClientOptions {
  /** The server's answer: `ok`, or `refused: <why>`; undefined: the server does not answer (a runner). */
  readonly answer?: { readonly ok: string; readonly refused: string; readonly timeoutMs: number } | undefined
}

/**
 * `socket`, whose every connection first sends `line` and, with `answer`, waits for the
 * server's `ok` (a refusal fails the connection with `Refused`). What the client writes waits
 * until then, so nothing ever goes before the line.
 */
export const client = (socket: Socket.Socket, line: string, options: ClientOptions = {}): Socket.Socket => {
  const ready = Latch.makeUnsafe(false)
  const answer = options.answer
  return Socket.make({
    reader: Effect.gen(function*() {
      const reader = yield* socket.reader
      const writer = yield* socket.writer
      yield* writer.write(line)
      let rest: ReadonlyArray<Uint8Array> = []
      if (answer !== undefined) {
        const first = yield* Effect.timeoutOption(firstLine(reader.pull, 1024), answer.timeoutMs)
        if (Option.isNone(first) || first.value._tag === "Closed") {
          return yield* Effect.fail(refusedError(new Refused({ reason: "silent", why: "" })))
        }
        if (first.value._tag === "TooLong") return yield* Effect.fail(refusedError(new Refused({ reason: "foreign", why: "" })))
        const said = words(first.value.line)
        if (said.startsWith(answer.refused)) {
          return yield* Effect.fail(refusedError(new Refused({ reason: "refused", why: said.slice(answer.refused.length).trim() })))
        }
        if (said !== answer.ok) return yield* Effect.fail(refusedError(new Refused({ reason: "foreign", why: "" })))
        rest = first.value.rest
      }
      ready.openUnsafe()
      yield* Effect.addFinalizer(() => Effect.sync(() => ready.closeUnsafe()))
      return withRest(reader, rest)
    }),
    writer: Effect.map(socket.writer, (writer): Socket.Writer => ({
      write: (chunk) => ready.whenOpen(writer.write(chunk)),
      writeAll: (chunks) => ready.whenOpen(writer.writeAll(chunks))
    }))
  })
}

// ---------------------------------------------------------------------------
// `skein serve`'s first line
// ---------------------------------------------------------------------------

/** Compares in constant time (digests of equal length, whatever the lengths given). */
export const sameSecret = (given: string, expected: string): boolean =>
  Crypto.timingSafeEqual(Crypto.createHash("sha256").update(given).digest(), Crypto.createHash("sha256").update(expected).digest())

/** The token of an `Authorization` header's value (`Bearer <token>`), if it is one. */
export const bearerOf = (value: string | undefined): string | undefined => {
  const match = value === undefined ? null : /^\s*Bearer\s+(.+?)\s*$/is.exec(value)
  return match === null ? undefined : match[1]
}

/** The first line a client of `skein serve` sends over tcp. */
export const bearerLine = (token: string) => `Authorization: Bearer ${token}\n`

/** How `skein serve` answers it. */
export const bearerAnswer = { ok: "ok", refused: "refused:", timeoutMs: 10_000 } as const

/** `skein serve`'s check of the first line: `Authorization: Bearer <token>`, answered `ok` or `refused: <why>`. */
export const bearer = (token: string, name: string): Hello => ({
  name,
  check: (line) => {
    const header = /^authorization:(.*)$/is.exec(new TextDecoder().decode(line))
    const given = header === null ? undefined : bearerOf(header[1])
    if (given === undefined) return "no token (the first line must be `Authorization: Bearer <token>`)"
    return sameSecret(given, token) ? undefined : "a wrong token"
  },
  accepted: `${bearerAnswer.ok}\n`,
  refused: (why) => `${bearerAnswer.refused} ${why}\n`
})
