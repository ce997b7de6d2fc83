/**
 * `skein serve` end to end: the built binary serves the runtime on a unix socket and on a
 * WebSocket with a token, and an Effect program uses it through `Skein.remote` exactly as it
 * would use `Skein.layer`: a scripted session with a tool call that asks permission (answered
 * from here), a second turn cancelled, a disconnect mid-turn and a `subscribe` from the last
 * seen seq that loses and duplicates nothing; a wrong token is refused at the connection and
 * logged without its value.
 */
import { readFileSync, statSync } from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "vitest"
import { Runtime, SessionProtocol, Skein, type SessionEvent } from "../../src/index.ts"
import { waitUntil } from "../support/AgentProcess.ts"
import { freePort, useServers } from "../support/Serve.ts"

const TOKEN = "a-test-token-that-is-long-enough"

const script = {
  turns: [
    // Asks permission (write in default mode), then answers.
    { calls: [[{ text: "Writing it." }, { tool: "write", args: { path: "out.txt", content: "from afar\n" }, id: "w1" }], [{ text: "Written." }]] },
    // A long turn, cancelled from the program.
    { calls: [[{ text: "thinking" }, { sleep_ms: 30_000 }, { text: "never" }]] },
    // Streams slowly, so the client can go away in the middle and come back.
    { calls: [[...Array.from({ length: 20 }, (_, i) => [{ text: `part${i} ` }, { sleep_ms: 25 }]).flat(), { text: "end" }]] }
  ]
}

const { serve: start } = useServers()
const serve = (listen: string | undefined, env: Record<string, string> = {}) => start(script, listen, env)


/** The program of the README's embedding example, shape for shape: only the layer differs. */
const program = (cwd: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const session = yield* runtime.newSession({ cwd })
    // Turn 1: presented here; its permission question is answered from this process.
    const first = yield* session.turn([{ type: "text", text: "write it" }]).pipe(
      Stream.tap((e) => (e.type === "permission_asked" ? session.answer(e.data.requestId, { outcome: "selected", optionId: "allow_once" }) : Effect.void)),
      Stream.runCollect
    )
    // Turn 2: cancelled once it streams.
    const second = yield* session.turn([{ type: "text", text: "wait" }]).pipe(
      Stream.tap((e) => (e.type === "text_delta" ? session.cancel : Effect.void)),
      Stream.runCollect
    )
    return { id: session.id, first, second }
  })

const types = (events: ReadonlyArray<SessionEvent>) => events.map((e) => e.type)

describe("skein serve and Skein.remote", () => {
  it("on a unix socket (mode 0600): a turn that asks, a cancelled turn, a disconnect and a resubscribe without loss or duplicate", async () => {
    const server = await serve(undefined)
    const socket = path.join(server.home, "skein.sock")
    expect(statSync(socket).mode & 0o777).toBe(0o600)
    const url = `unix:${socket}`

    const { id, first, second } = await Effect.runPromise(Effect.scoped(program(server.cwd)).pipe(Effect.provide(Skein.remote({ url }))))
    expect(types(first)).toContain("permission_asked")
    expect(SessionProtocol.outcomeOf(first.at(-1)!)).toEqual({ stopReason: "end_turn" })
    expect(readFileSync(path.join(server.cwd, "out.txt"), "utf8")).toBe("from afar\n")
    expect(SessionProtocol.outcomeOf(second.at(-1)!)).toEqual({ stopReason: "cancelled" })

    // Turn 3: this client goes away in the middle of it (its connection closes with its scope).
    const seenBefore = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const session = yield* (yield* Runtime).getSession(id)
      return yield* session.turn([{ type: "text", text: "stream" }]).pipe(
        Stream.takeUntil((e) => e.type === "text_delta" && e.data.text.includes("part3")),
        Stream.runCollect
      )
    })).pipe(Effect.provide(Skein.remote({ url }))))
    const lastSeq = seenBefore.at(-1)!.seq

    // A new client: the turn went on without it; from the last seq it saw, it gets the rest once.
    const after = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const session = yield* (yield* Runtime).getSession(id)
      return yield* session.subscribe(lastSeq).pipe(Stream.takeUntil((e) => e.type === "turn_end"), Stream.runCollect)
    })).pipe(Effect.provide(Skein.remote({ url }))))
    expect(SessionProtocol.outcomeOf(after.at(-1)!)).toEqual({ stopReason: "end_turn" })
    const canonical = (events: ReadonlyArray<SessionEvent>) => events.filter((e) => !e.type.endsWith("_delta") && e.type !== "usage")
    const seqs = canonical([...seenBefore, ...after]).map((e) => e.seq)
    expect(new Set(seqs).size).toBe(seqs.length)
    // Every logged event of the turn is in what the two clients saw, in order.
    const log = readFileSync(path.join(server.home, "sessions", `${id}.ndjson`), "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l))
    const logged = log.filter((e) => e.turn === 3).map((e) => e.seq)
    expect(seqs.filter((s) => logged.includes(s))).toEqual(logged)
    // The text the model wrote reached the user whole: deltas before, the response's text after.
    const streamed = seenBefore.flatMap((e) => (e.type === "text_delta" ? [e.data.text] : [])).join("")
    const response = log.find((e) => e.turn === 3 && e.type === "model_response")
    expect(response.data.parts[0].text.startsWith(streamed)).toBe(true)
  })

  it("on a WebSocket with a token; a wrong or missing token is refused and logged without its value", async () => {
    const port = freePort()
    const server = await serve(`ws://127.0.0.1:${port}/skein`, { SKEIN_SERVE_TOKEN: TOKEN })
    const url = `ws://127.0.0.1:${port}/skein`

    const { first } = await Effect.runPromise(Effect.scoped(program(server.cwd)).pipe(Effect.provide(Skein.remote({ url, token: TOKEN }))))
    expect(SessionProtocol.outcomeOf(first.at(-1)!)).toEqual({ stopReason: "end_turn" })

    const wrong = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(Runtime, (r) => r.listSessions())).pipe(Effect.provide(Skein.remote({ url, token: "not-the-token-at-all" })), Effect.flip, Effect.timeout("10 seconds"))
    )
    expect(wrong.reason).toBe("unavailable")
    expect(wrong.message).toBe(`The Skein server at ${url} refused the token: give the token it was started with (SKEIN_SERVE_TOKEN or --token-file).`)
    // Without a token, the client does not even try: a ws server always needs one.
    const missing = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(Runtime, (r) => r.listSessions())).pipe(Effect.provide(Skein.remote({ url })), Effect.flip, Effect.timeout("10 seconds"))
    )
    expect(missing.reason).toBe("invalid_request")
    expect(missing.message).toMatch(/needs the server's token/)
    await waitUntil(() => /refused a WebSocket connection from 127\.0\.0\.1:\d+: a wrong token/.test(server.stderr), "the refusal in the server's log")
    expect(server.stderr).not.toContain("not-the-token-at-all")
    expect(server.stderr).not.toContain(TOKEN)
  })

  it("tcp and ws refuse to start without a token, or with a short one, in words left whole", async () => {
    for (const [listen, env, said] of [
      [`tcp://127.0.0.1:${freePort()}`, {}, "skein: tcp needs a token: set SKEIN_SERVE_TOKEN or pass --token-file FILE\n"],
      [`ws://127.0.0.1:${freePort()}/x`, { SKEIN_SERVE_TOKEN: "short" }, "skein: The token is too short: use at least 16 characters\n"]
    ] as const) {
      const failed = await serve(listen, env).then(() => undefined, (error: Error) => error.message)
      expect(failed).toBe(`skein serve exited 2: ${said}`)
    }
  })

  it("--max-connections caps the connections open at once", async () => {
    const port = freePort()
    const url = `tcp://127.0.0.1:${port}`
    await serve(url, { SKEIN_SERVE_TOKEN: TOKEN, SKEIN_SERVE_MAX_CONNECTIONS: "1" })
    // One connection holds the only place (it has 5 s to show the token).
    const holder = net.connect({ host: "127.0.0.1", port })
    holder.on("error", () => undefined)
    await new Promise((resolve) => holder.once("connect", resolve))
    try {
      const refused = await Effect.runPromise(
        Effect.scoped(Effect.flatMap(Runtime, (r) => r.listSessions())).pipe(Effect.provide(Skein.remote({ url, token: TOKEN })), Effect.flip)
      )
      expect(refused.message).toBe(`The Skein server at ${url} refused the connection: too many connections (at most 1). Close some, or start it with a higher --max-connections.`)
    } finally {
      holder.destroy()
    }
  })

  it("--max-connections takes a whole number above 0", async () => {
    const failed = await serve(`tcp://127.0.0.1:${freePort()}`, { SKEIN_SERVE_TOKEN: TOKEN, SKEIN_SERVE_MAX_CONNECTIONS: "0" }).then(() => undefined, (error: Error) => error.message)
    expect(failed).toBe("skein serve exited 2: skein: --max-connections takes a whole number above 0, not \"0\"\n")
  })
})

describe("questions travel, and go unanswered when their presenter goes away", () => {
  it("a client that disconnects while its question is open: the question is denied on the server, the turn goes on", async () => {
    const server = await serve(undefined)
    const url = `unix:${path.join(server.home, "skein.sock")}`
    const asked = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const session = yield* (yield* Runtime).newSession({ cwd: server.cwd })
      // This presenter sees the question, then goes away without answering.
      const seen = yield* session.turn([{ type: "text", text: "write it" }]).pipe(
        Stream.takeUntil((e) => e.type === "permission_asked"),
        Stream.runCollect
      )
      return { id: session.id, last: seen.at(-1)!.seq }
    })).pipe(Effect.provide(Skein.remote({ url }))))
    const rest = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const session = yield* (yield* Runtime).getSession(asked.id)
      return yield* session.subscribe(asked.last).pipe(Stream.takeUntil((e) => e.type === "turn_end"), Stream.runCollect)
    })).pipe(Effect.provide(Skein.remote({ url })), Effect.timeout("10 seconds")))
    expect(rest.find((e) => e.type === "permission")?.data).toEqual({ toolCallId: "w1", outcome: "unanswerable" })
    expect(SessionProtocol.outcomeOf(rest.at(-1)!)).toEqual({ stopReason: "end_turn" })
    expect(() => readFileSync(path.join(server.cwd, "out.txt"))).toThrow()
  })

  it("over tcp with a token: the same program runs; a wrong token is refused at the connection, and logged without its value", async () => {
    const port = freePort()
    const server = await serve(`tcp://127.0.0.1:${port}`, { SKEIN_SERVE_TOKEN: TOKEN })
    const url = `tcp://127.0.0.1:${port}`
    const { first } = await Effect.runPromise(Effect.scoped(program(server.cwd)).pipe(Effect.provide(Skein.remote({ url, token: TOKEN }))))
    expect(SessionProtocol.outcomeOf(first.at(-1)!)).toEqual({ stopReason: "end_turn" })
    const refused = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(Runtime, (r) => r.listSessions())).pipe(
        Effect.provide(Skein.remote({ url, token: "not-the-token-at-all" })),
        Effect.flip,
        Effect.timeout("10 seconds")
      )
    )
    expect(refused.reason).toBe("unavailable")
    expect(refused.message).toBe(`The Skein server at ${url} refused the token: give the token it was started with (SKEIN_SERVE_TOKEN or --token-file).`)
    // The server's log comes through its stderr pipe, which may trail the refusal on the socket.
    await waitUntil(() => /refused a connection from 127\.0\.0\.1:\d+: a wrong token/.test(server.stderr), "the refusal in the server's log")
    expect(server.stderr).not.toContain("not-the-token-at-all")
    expect(server.stderr).not.toContain(TOKEN)
  })
})
