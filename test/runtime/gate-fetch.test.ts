/**
 * The gate on `web_fetch`: the question names the URL and its host (and says when it is this
 * machine), an "always" answer is logged as a rule for that host and covers it alone, and
 * with the sandbox on the hosts its network admits are not asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as Gate from "../../src/runtime/Gate.ts"
import * as TurnContract from "../../src/session/TurnContract.ts"
import type { Placement, SessionSandbox } from "../../src/tools/Sandboxed.ts"
import { web_fetch } from "../../src/tools/web_fetch.ts"
import type { ModeId } from "../../src/Vocabulary.ts"
import * as TempDir from "../support/TempDir.ts"

/** What the gate reads of a sandbox: whether commands would run inside, and the hosts its network admits. */
const sandbox = (placement: Placement, allow: ReadonlyArray<string>): SessionSandbox => ({
  setting: "auto",
  allow,
  placement: () => Effect.succeed(placement),
  prepare: () => Effect.fail("not used here"),
  firstFallback: () => false,
  explain: () => undefined
})

const setup = (mode: ModeId, answer: string, session?: SessionSandbox) => {
  const history = History.make()
  const asked: Array<TurnContract.Question> = []
  const logged: Array<CanonicalBody> = []
  // Whoever presents the turn: records the question, answers `answer`.
  const questions: TurnContract.Questions["Service"] = {
    ask: (request) => Effect.sync(() => (asked.push(request), { outcome: "selected" as const, optionId: answer })),
    canAsk: () => true
  }
  const gate = Gate.make({
    cwd: "/ws",
    mode: () => mode,
    history,
    timeoutMs: 60_000,
    record: (body) =>
      Effect.sync(() => {
        logged.push(body)
        if (body.type === "permission" && body.data.rule !== undefined) history.rules.push(body.data.rule)
      }),
    sandbox: session
  })
  const fetch = (url: string) =>
    Effect.flatMap(gate, ({ permit }) =>
      permit({ id: `c${asked.length}`, name: "web_fetch", args: { url }, title: web_fetch.title({ url }), kind: "fetch" }, web_fetch, { url })).pipe(
        Effect.provideService(TurnContract.Questions, questions),
        Effect.provide(TempDir.platform)
      )
  return { fetch, asked, logged }
}

describe("the gate on web_fetch", () => {
  it.effect("asks with the URL and the host named; \"always\" is remembered for that host alone", () =>
    Effect.gen(function*() {
      const { fetch, asked, logged } = setup("default", "allow_always")
      assert.deepStrictEqual(yield* fetch("http://127.0.0.1:8080/docs"), { _tag: "allow" })
      assert.strictEqual(asked.length, 1)
      assert.strictEqual(asked[0]!.toolCall.title, "Fetch http://127.0.0.1:8080/docs (127.0.0.1:8080 (this machine))")
      assert.strictEqual(asked[0]!.toolCall.kind, "fetch")
      assert.deepStrictEqual(asked[0]!.options.map((o) => o.name), [
        "Allow once",
        "Always allow fetches from 127.0.0.1:8080 (this machine)",
        "Reject",
        "Always reject fetches from 127.0.0.1:8080 (this machine)"
      ])
      assert.deepStrictEqual(logged, [{
        type: "permission",
        data: {
          toolCallId: "c0",
          outcome: "allow_always",
          rule: { decision: "allow", kind: "host", value: "127.0.0.1:8080", label: "fetches from 127.0.0.1:8080 (this machine)" }
        }
      }])
      // The same host again: no question. The same machine by another name or port: asked.
      assert.deepStrictEqual(yield* fetch("http://127.0.0.1:8080/other"), { _tag: "allow" })
      assert.strictEqual(asked.length, 1)
      yield* fetch("http://localhost:8080/docs")
      yield* fetch("http://127.0.0.1:9090/docs")
      assert.deepStrictEqual(asked.slice(1).map((a) => a.toolCall.title), [
        "Fetch http://localhost:8080/docs (localhost:8080 (this machine))",
        "Fetch http://127.0.0.1:9090/docs (127.0.0.1:9090 (this machine))"
      ])
    }))

  it.effect("a rejection is a denial the model reads; bypassPermissions asks nothing", () =>
    Effect.gen(function*() {
      const rejected = setup("plan", "reject_once")
      const verdict = yield* rejected.fetch("https://example.com/")
      assert.deepStrictEqual(verdict, { _tag: "deny", reason: "The user denied permission for Fetch https://example.com/ (example.com). It was not run." })
      const bypass = setup("bypassPermissions", "reject_once")
      assert.deepStrictEqual(yield* bypass.fetch("http://10.0.0.1/"), { _tag: "allow" })
      assert.strictEqual(bypass.asked.length, 0)
    }))

  it.effect("with the sandbox on, a host its network admits is not asked for; without it, it is", () =>
    Effect.gen(function*() {
      const on = setup("default", "reject_once", sandbox({ _tag: "inside" }, ["*.example.com"]))
      assert.deepStrictEqual(yield* on.fetch("https://docs.example.com/guide"), { _tag: "allow" })
      assert.strictEqual(on.asked.length, 0)
      assert.strictEqual((yield* on.fetch("https://example.org/"))._tag, "deny")
      assert.strictEqual(on.asked.length, 1)
      const unavailable = setup("default", "reject_once", sandbox({ _tag: "outside", why: "unavailable" }, ["*.example.com"]))
      assert.strictEqual((yield* unavailable.fetch("https://docs.example.com/guide"))._tag, "deny")
      assert.strictEqual(unavailable.asked.length, 1)
    }))
})
