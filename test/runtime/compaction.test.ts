/**
 * Long sessions in process: compaction (threshold, overflow, `/compact [focus]`, a failed
 * summary), a compacted session re-run and loaded again (history and ACP replay), and what the
 * model is sent of skills (the catalog) and of steering. A real runtime over a temp home (the
 * file store) and workspace, the scripted provider wrapped to record every request it gets.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Canonical, SessionEvent } from "../../src/log/Event.ts"
import { promptText } from "../../src/Vocabulary.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import type { ModelRequest, Provider } from "../../src/providers/Provider.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import { Bus } from "../../src/runtime/Bus.ts"
import * as Compaction from "../../src/runtime/Compaction.ts"
import { Config } from "../../src/runtime/Config.ts"
import * as Rerun from "../../src/runtime/Rerun.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { layer as RuntimeLayer } from "../../src/runtime/Runtime.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import * as Replay from "../../src/translate/Replay.ts"
import { COMPACTED_TITLE } from "../../src/translate/Translate.ts"
import type { Message } from "../../src/Vocabulary.ts"
import { historyOf, makeDirs, record, text } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

// ---------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------

/** The scripted provider, recording every request it receives (compaction calls included). */
const recording = (script: unknown) =>
  Effect.gen(function*() {
    const parsed = yield* Scripted.parse(JSON.stringify(script))
    const inner = Scripted.make(parsed)
    const seen: Array<ModelRequest> = []
    const provider: Provider = {
      ...inner,
      stream: (request) => {
        seen.push(request)
        return inner.stream(request)
      }
    }
    return { provider, seen }
  })

/** The runtime from its pieces: sessions in files under `home`, the built-in tools, user skills under `userHome`. */
const runtimeLayer = (home: string, provider: Provider, userHome: string) =>
  RuntimeLayer.pipe(
    Layer.provideMerge(Bus.layer),
    Layer.provide(SessionLog.layer({ home })),
    Layer.provide(Config.layer({
      home,
      provider,
      model: undefined,
      maxTurnRequests: 20,
      permissionTimeoutMs: 60_000,
      defaultMode: "default",
      toolkit: Toolkit.builtin(),
      version: "test",
      userHome
    })),
    Layer.provideMerge(TempDir.platform)
  )

/** A temp home and workspace (`notes.txt` in it), a user home with no skills, and the recording provider. */
const setup = (script: unknown) =>
  Effect.gen(function*() {
    const { base, home, cwd } = yield* makeDirs
    const userHome = join(base, "user")
    mkdirSync(userHome)
    const { provider, seen } = yield* recording(script)
    return { base, home, cwd, userHome, provider, seen, layer: runtimeLayer(home, provider, userHome) }
  })

/** One line per message, for comparing a conversation. */
const line = (m: Message): string =>
  m.role === "user"
    ? `user: ${promptText(m.content)}`
    : m.role === "assistant"
    ? `assistant: ${m.parts.map((p) => (p.type === "text" ? p.text : p.type === "tool_call" ? `[${p.name}]` : "")).join("")}`
    : `tool: ${m.name}`
const conversation = (request: ModelRequest) => request.messages.map(line)

const isCompaction = (r: ModelRequest) => r.purpose === "compaction"
const lastUser = (request: ModelRequest): string => {
  const users = request.messages.filter((m) => m.role === "user")
  const last = users[users.length - 1]
  return last === undefined || last.role !== "user" ? "" : promptText(last.content)
}

const ofType = <T extends Canonical["type"]>(events: ReadonlyArray<Canonical>, type: T) =>
  events.filter((e): e is Extract<Canonical, { type: T }> => e.type === type)

const SUMMARY = "SUMMARY: the user asked about notes.txt; it says hello."

/** Turn 1 reads a file and ends at 86% of a 1,000-token window; turn 2 answers after the compaction. */
const thresholdScript = {
  contextWindow: 1000,
  turns: [
    {
      expect: "^first question$",
      calls: [
        [{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }],
        [{ text: "It says hello." }, { usage: { input: 850, output: 10 } }]
      ]
    },
    { expect: "^second question$", calls: [[{ text: "Second answer." }, { usage: { input: 120, output: 5 } }]] }
  ],
  compaction: [[{ text: SUMMARY }, { usage: { input: 700, output: 40 } }]]
}

// ---------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------

describe("compaction", () => {
  it.live("threshold: the call after a turn that used 80% of the window is preceded by a compaction; the model then sees the summary and the kept tail", () =>
    Effect.gen(function*() {
      const { cwd, seen, layer } = yield* setup(thresholdScript)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual(yield* session.prompt(text("first question")), { stopReason: "end_turn" })
        assert.isFalse(seen.some(isCompaction), "no compaction before the threshold was reached")
        const events = yield* record(session)
        assert.deepStrictEqual(yield* session.prompt(text("second question")), { stopReason: "end_turn" })

        // Turn 2: a compaction call first, then the conversation's call.
        const turn2 = seen.filter((r) => r.turn === 2)
        assert.deepStrictEqual(turn2.map((r) => r.purpose ?? "conversation"), ["compaction", "conversation"])
        const [summaryCall, next] = turn2 as [ModelRequest, ModelRequest]
        assert.deepStrictEqual(summaryCall.tools, [])
        assert.strictEqual(summaryCall.system, Compaction.SYSTEM)
        // What is summarised is turn 1, followed by the instruction; the new prompt is kept verbatim instead.
        assert.deepStrictEqual(conversation(summaryCall), [
          "user: first question",
          "assistant: Reading.[read]",
          "tool: read",
          "assistant: It says hello.",
          `user: ${Compaction.instruction(undefined)}`
        ])
        // The next call: the summary, then the kept tail, which ends with the new prompt.
        const first = next.messages[0]!
        assert.strictEqual(first.role, "user")
        assert.include(first.role === "user" ? promptText(first.content) : "", SUMMARY)
        assert.strictEqual(line(next.messages[next.messages.length - 1]!), "user: second question")
        const shown = conversation(next).join("\n")
        assert.notInclude(shown, "first question")
        assert.notInclude(shown, "It says hello.")
        assert.isFalse(next.messages.some((m) => m.role === "tool"), "the summarised tool result is gone")

        // The log: the summary call marked with the compaction's id, then the compaction.
        const log = (yield* runtime.readSession(session.id)).events
        const compactions = ofType(log, "compaction")
        assert.strictEqual(compactions.length, 1)
        const compaction = compactions[0]!
        const summaryResponse = ofType(log, "model_response").find((e) => e.data.compaction !== undefined)!
        assert.strictEqual(summaryResponse.data.compaction, compaction.data.id)
        assert.strictEqual(summaryResponse.turn, 2)
        assert.isBelow(summaryResponse.seq, compaction.seq)
        const turnStart2 = ofType(log, "turn_start").find((e) => e.turn === 2)!
        assert.strictEqual(compaction.turn, 2)
        assert.strictEqual(compaction.data.trigger, "threshold")
        assert.strictEqual(compaction.data.keepFromSeq, turnStart2.seq, "kept from the new prompt on")
        assert.strictEqual(compaction.data.fromSeq, ofType(log, "turn_start")[0]!.seq)
        assert.strictEqual(compaction.data.toSeq, turnStart2.seq - 1)
        assert.strictEqual(compaction.data.promptHash, Compaction.PROMPT_HASH)
        assert.match(compaction.data.promptHash, /^[0-9a-f]{64}$/)
        assert.strictEqual(compaction.data.summaryForModel, SUMMARY)
        // Before and after are estimated alike: the conversation the turn's call would have sent, then the compacted one.
        const uncompacted = [...summaryCall.messages.slice(0, -1), { role: "user" as const, content: text("second question") }]
        assert.strictEqual(compaction.data.usageBefore, Compaction.estimate(uncompacted, next.system))
        assert.isBelow(compaction.data.usageAfter, compaction.data.usageBefore)

        // The usage reported after the compaction is the conversation's after it.
        const live = yield* events.drain
        const at = live.findIndex((e) => e.type === "compaction")
        assert.isAbove(at, -1)
        const usage = live.slice(at + 1).find((e): e is SessionEvent & { type: "usage" } => e.type === "usage")
        assert.isDefined(usage)
        assert.deepStrictEqual({ used: usage!.data.used, size: usage!.data.size }, { used: compaction.data.usageAfter, size: 1000 })
        // And a `compacting` event announced it, before the compaction.
        const compacting = live.findIndex((e) => e.type === "compacting")
        assert.isTrue(compacting > -1 && compacting < at)
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("overflow: a call the context overflowed is retried once after a compaction; a second overflow in the turn is not compacted again", () =>
    Effect.gen(function*() {
      const overflow = { fail: "context too long", overflow: true }
      const { cwd, seen, layer } = yield* setup({
        turns: [
          { calls: [[{ text: "One." }]] },
          { calls: [[overflow], [{ text: "Two, after the compaction." }]] },
          { calls: [[overflow], [overflow], [{ text: "never" }]] }
        ],
        compaction: [[{ text: "First summary." }], [{ text: "Second summary." }], [{ text: "Third summary." }]]
      })
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("one"))
        assert.deepStrictEqual(yield* session.prompt(text("two")), { stopReason: "end_turn" })
        const turn2 = seen.filter((r) => r.turn === 2)
        assert.deepStrictEqual(turn2.map((r) => r.purpose ?? "conversation"), ["conversation", "compaction", "conversation"])
        assert.include(conversation(turn2[2]!)[0]!, "First summary.")
        assert.strictEqual(lastUser(turn2[2]!), "two")
        assert.notInclude(conversation(turn2[2]!), "user: one", "the summarised prompt is not sent again")

        const third = yield* session.prompt(text("three"))
        assert.strictEqual(third.stopReason, "end_turn")
        assert.include(third.error ?? "", "context too long")
        const turn3 = seen.filter((r) => r.turn === 3)
        assert.deepStrictEqual(turn3.map((r) => r.purpose ?? "conversation"), ["conversation", "compaction", "conversation"])

        const log = (yield* runtime.readSession(session.id)).events
        assert.deepStrictEqual(ofType(log, "compaction").map((e) => [e.turn, e.data.trigger]), [[2, "overflow"], [3, "overflow"]])
        const ends = ofType(log, "turn_end")
        assert.deepStrictEqual(ends.map((e) => [e.turn, e.data.error === undefined]), [[1, true], [2, true], [3, false]])
        // The failed calls are logged as failures, each before its compaction.
        const failed = ofType(log, "model_response").filter((e) => e.data.stop === "error").map((e) => [e.turn, e.data.call, e.data.error])
        assert.deepStrictEqual(failed, [[2, 1, "context too long"], [3, 1, "context too long"], [3, 3, "context too long"]])
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("/compact focus: a local command; the summary call is asked to focus; the model never sees \"/compact\"", () =>
    Effect.gen(function*() {
      const { cwd, seen, layer } = yield* setup({
        turns: [
          { calls: [[{ text: "One." }]] },
          { calls: [[{ text: "Two." }]] },
          { calls: [] },
          { expect: "^four$", calls: [[{ text: "Four." }]] }
        ],
        compaction: [[{ text: "Focused summary." }]]
      })
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("one"))
        yield* session.prompt(text("two"))
        assert.deepStrictEqual(yield* session.prompt(text("/compact focus on tests")), { stopReason: "end_turn" })
        const turn3 = seen.filter((r) => r.turn === 3)
        assert.deepStrictEqual(turn3.map((r) => r.purpose ?? "conversation"), ["compaction"])
        assert.include(lastUser(turn3[0]!), "focus on tests")
        assert.notInclude(conversation(turn3[0]!).join("\n"), "/compact")

        assert.deepStrictEqual(yield* session.prompt(text("four")), { stopReason: "end_turn" })
        const four = seen.filter((r) => r.turn === 4)
        assert.strictEqual(four.length, 1)
        assert.include(conversation(four[0]!)[0]!, "Focused summary.")
        assert.notInclude(conversation(four[0]!).join("\n"), "/compact")
        assert.notInclude(conversation(four[0]!), "user: one", "the summarised prompt is not sent again")
        assert.strictEqual(lastUser(four[0]!), "four")

        const log = (yield* runtime.readSession(session.id)).events
        const start = ofType(log, "turn_start").find((e) => e.turn === 3)!
        assert.deepStrictEqual(start.data.command, { name: "compact", arguments: "focus on tests", local: true })
        const [compaction] = ofType(log, "compaction")
        assert.strictEqual(compaction!.data.trigger, "manual")
        assert.strictEqual(compaction!.data.focus, "focus on tests")
        assert.strictEqual(compaction!.turn, 3)
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("a failed summary: no compaction, a notice says why, and the model gets the history unchanged; /compact that fails says so", () =>
    Effect.gen(function*() {
      const { cwd, seen, layer } = yield* setup({
        contextWindow: 1000,
        turns: [
          { calls: [[{ text: "One." }, { usage: { input: 850, output: 10 } }]] },
          { calls: [[{ text: "Two." }]] },
          { calls: [] }
        ],
        compaction: [[{ fail: "boom" }], [{ fail: "boom again" }]]
      })
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("one"))
        const before = [...historyOf(session).messages]
        assert.deepStrictEqual(yield* session.prompt(text("two")), { stopReason: "end_turn" })
        const turn2 = seen.filter((r) => r.turn === 2)
        assert.deepStrictEqual(turn2.map((r) => r.purpose ?? "conversation"), ["compaction", "conversation"])
        assert.deepStrictEqual(turn2[1]!.messages, [...before, { role: "user", content: text("two") }])

        let log = (yield* runtime.readSession(session.id)).events
        assert.deepStrictEqual(ofType(log, "compaction"), [])
        const notices = ofType(log, "notice").filter((e) => e.turn === 2)
        assert.strictEqual(notices.length, 1)
        assert.include(notices[0]!.data.text, "Could not compact the conversation")
        assert.include(notices[0]!.data.text, "boom")
        const failed = ofType(log, "model_response").find((e) => e.data.compaction !== undefined)!
        assert.strictEqual(failed.data.stop, "error")

        // `/compact` whose summary fails: the turn says why; still no compaction.
        const manual = yield* session.prompt(text("/compact"))
        assert.strictEqual(manual.stopReason, "end_turn")
        assert.include(manual.error ?? "", "boom again")
        log = (yield* runtime.readSession(session.id)).events
        assert.deepStrictEqual(ofType(log, "compaction"), [])
        assert.strictEqual(historyOf(session).compactions, 0)
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))
})

// ---------------------------------------------------------------------------
// A compacted session, re-run and loaded again
// ---------------------------------------------------------------------------

/** A session with a threshold, a manual and an overflow compaction (tool calls between them), in files under `home`. */
const compactedSession = Effect.gen(function*() {
  const setupped = yield* setup({
    contextWindow: 1000,
    turns: [
      thresholdScript.turns[0],
      { calls: [[{ text: "Reading again." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "Still hello." }, { usage: { input: 100, output: 5 } }]] },
      { calls: [] },
      { calls: [[{ fail: "context too long", overflow: true }], [{ text: "Reading once more." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "Done." }]] }
    ],
    compaction: [[{ text: SUMMARY }], [{ text: "Manual summary." }], [{ text: "Overflow summary." }]]
  })
  const id = yield* Effect.gen(function*() {
    const runtime = yield* Runtime
    const session = yield* runtime.newSession({ cwd: setupped.cwd })
    for (const prompt of ["first question", "second question", "/compact keep the file names", "fourth question"]) {
      assert.deepStrictEqual(yield* session.prompt(text(prompt)), { stopReason: "end_turn" }, prompt)
    }
    return session.id
  }).pipe(Effect.scoped, Effect.provide(setupped.layer))
  return { ...setupped, id }
})

describe("a compacted session", () => {
  it.live("re-runs without divergence, compacting at the same places", () =>
    Effect.gen(function*() {
      const { base, home, id } = yield* compactedSession
      const original = readLogFile(home, id)
      assert.deepStrictEqual(ofType(original.events, "compaction").map((e) => [e.turn, e.data.trigger]), [[2, "threshold"], [3, "manual"], [4, "overflow"]])
      const rerunHome = join(base, "rerun-home")
      const report = yield* Rerun.run({ header: original.header, events: original.events, home: rerunHome, toolkit: Toolkit.builtin() }).pipe(
        Effect.provide(TempDir.platform)
      )
      assert.isFalse(report.diverged, JSON.stringify(report.turns))
      const again = readLogFile(rerunHome, report.rerunSessionId)
      assert.deepStrictEqual(ofType(again.events, "compaction").map((e) => [e.turn, e.data.trigger, e.data.focus]), [
        [2, "threshold", undefined],
        [3, "manual", "keep the file names"],
        [4, "overflow", undefined]
      ])
      assert.deepStrictEqual(ofType(again.events, "turn_start").map((e) => e.data.command?.name), [undefined, undefined, "compact", undefined])
    }))

  it.live("a re-run's compaction keeps the same part of the conversation as the log's, whatever the replay knows of the window", () =>
    Effect.gen(function*() {
      // Turn 2's long answer does not fit the kept share of a 1,000-token window: the log's
      // compaction in turn 3 keeps only the new prompt. Without the window it would keep more.
      const { base, home, cwd, layer } = yield* setup({
        contextWindow: 1000,
        turns: [
          { calls: [[{ text: "One." }]] },
          { calls: [[{ text: `Two: ${"long answer ".repeat(200)}` }, { usage: { input: 850, output: 10 } }]] },
          { calls: [[{ text: "Three." }]] }
        ],
        compaction: [[{ text: "Summary of one and two." }]]
      })
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        for (const prompt of ["one", "two", "three"]) yield* session.prompt(text(prompt))
        return session.id
      }).pipe(Effect.scoped, Effect.provide(layer))
      const original = readLogFile(home, id)
      const rerunHome = join(base, "rerun-home")
      const report = yield* Rerun.run({ header: original.header, events: original.events, home: rerunHome, toolkit: Toolkit.builtin() }).pipe(
        Effect.provide(TempDir.platform)
      )
      assert.isFalse(report.diverged)
      const again = readLogFile(rerunHome, report.rerunSessionId)
      const fields = (events: ReadonlyArray<Canonical>) =>
        ofType(events, "compaction").map((e) => ({ turn: e.turn, fromSeq: e.data.fromSeq, toSeq: e.data.toSeq, keepFromSeq: e.data.keepFromSeq }))
      const logged = fields(original.events)
      assert.deepStrictEqual(logged.map((c) => c.turn), [3])
      assert.strictEqual(logged[0]!.keepFromSeq, ofType(original.events, "turn_start").find((e) => e.turn === 3)!.seq)
      assert.deepStrictEqual(fields(again.events), logged)
    }))

  it.live("loads with the summary in its history; ACP replay shows the whole transcript with the compaction at its place", () =>
    Effect.gen(function*() {
      const { home, cwd, userHome, id } = yield* compactedSession
      // A new runtime over the same home: the session is loaded from its log.
      const { provider } = yield* recording({ turns: [] })
      const loaded = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const { session, events } = yield* runtime.loadSession({ sessionId: id, cwd })
        return { history: historyOf(session), events }
      }).pipe(Effect.scoped, Effect.provide(runtimeLayer(home, provider, userHome)))
      const messages = loaded.history.messages.map(line)
      assert.include(messages[0]!, "Overflow summary.")
      assert.include(messages[0]!, "<summary>")
      assert.notInclude(messages.join("\n"), "first question")
      assert.strictEqual(messages[messages.length - 1], "assistant: Done.")
      assert.strictEqual(loaded.history.compactions, 3)

      const compactions = ofType(loaded.events, "compaction")
      const [threshold, manual, overflow] = compactions as [typeof compactions[0], typeof compactions[0], typeof compactions[0]]

      // Native: compaction_updates at each compaction's place (started, then done: as it was
      // seen live), the transcript before it whole.
      const native = Replay.updates(loaded.events, { compaction: true })
      const shown = native.map((u) => {
        switch (u.sessionUpdate) {
          case "user_message_chunk":
          case "agent_message_chunk":
            return `${u.sessionUpdate}: ${(u.content as { text?: string }).text}`
          case "compaction_update":
            return `compaction_update: ${u.compactionId} ${u.status} ${JSON.stringify(u.summary)}`
          case "tool_call":
            return `tool_call: ${u.title}`
          default:
            return u.sessionUpdate
        }
      })
      const summaryOf = (s: string) => JSON.stringify([{ type: "text", text: s }])
      assert.deepStrictEqual(shown, [
        "session_info_update",
        "user_message_chunk: first question",
        "agent_message_chunk: Reading.",
        "tool_call: Read notes.txt",
        "tool_call_update",
        "agent_message_chunk: It says hello.",
        "user_message_chunk: second question",
        `compaction_update: ${threshold.data.id} in_progress undefined`,
        `compaction_update: ${threshold.data.id} completed ${summaryOf(SUMMARY)}`,
        "agent_message_chunk: Reading again.",
        "tool_call: Read notes.txt",
        "tool_call_update",
        "agent_message_chunk: Still hello.",
        "user_message_chunk: /compact keep the file names",
        `compaction_update: ${manual.data.id} in_progress undefined`,
        `compaction_update: ${manual.data.id} completed ${summaryOf("Manual summary.")}`,
        "user_message_chunk: fourth question",
        `compaction_update: ${overflow.data.id} in_progress undefined`,
        `compaction_update: ${overflow.data.id} completed ${summaryOf("Overflow summary.")}`,
        "agent_message_chunk: Reading once more.",
        "tool_call: Read notes.txt",
        "tool_call_update",
        "agent_message_chunk: Done."
      ])

      // Without the capability: the same places hold a `think` tool call, started then finished
      // with the summary, as it was seen live.
      const plain = Replay.updates(loaded.events)
      assert.isFalse(plain.some((u) => u.sessionUpdate === "compaction_update"))
      const cards = plain.filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId.startsWith("compaction-"))
      assert.deepStrictEqual(cards, [threshold, manual, overflow].flatMap((c) => [
        { sessionUpdate: "tool_call", kind: "think", toolCallId: `compaction-${c.data.id}`, title: "Compacting the conversation", status: "in_progress" },
        {
          sessionUpdate: "tool_call_update",
          toolCallId: `compaction-${c.data.id}`,
          title: COMPACTED_TITLE,
          kind: "think",
          status: "completed",
          content: [{ type: "content", content: { type: "text", text: c.data.summaryForUser } }]
        }
      ]))
      const at = plain.findIndex((u) => u.sessionUpdate === "tool_call" && u.kind === "think")
      assert.deepStrictEqual(plain[at - 1], { sessionUpdate: "user_message_chunk", content: { type: "text", text: "second question" }, messageId: "u2" })
    }))
})

/** A log file read back as the header and its events. */
const readLogFile = (home: string, id: string) => {
  const [header, ...events] = readFileSync(join(home, "sessions", `${id}.ndjson`), "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))
  return { header, events: events.map((e: Canonical) => ({ ...e, sessionId: id })) as Array<Canonical> }
}

// ---------------------------------------------------------------------------
// What the model is sent of skills and steering
// ---------------------------------------------------------------------------

const skillFile = (dir: string, description: string, body: string) => {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), `---\ndescription: ${description}\n---\n${body}\n`)
  return join(dir, "SKILL.md")
}

describe("skills and steering, as the model gets them", () => {
  it.live("the first request's system prompt lists the skills, the project's over the user's of the same name", () =>
    Effect.gen(function*() {
      const { cwd, userHome, seen, layer } = yield* setup({ turns: [{ calls: [[{ text: "ok" }]] }] })
      mkdirSync(join(cwd, ".git"))
      const project = skillFile(join(cwd, ".agents", "skills", "x"), "Project x: formats the changelog", "Project instructions.")
      skillFile(join(userHome, ".agents", "skills", "x"), "User x: should be shadowed", "User instructions.")
      const y = skillFile(join(userHome, ".agents", "skills", "y"), "User y: only the user has it", "Y instructions.")
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("hello"))
        const [first] = seen
        assert.include(first!.system, `- x: Project x: formats the changelog (${project})`)
        assert.include(first!.system, `- y: User y: only the user has it (${y})`)
        assert.notInclude(first!.system, "User x: should be shadowed")
        assert.isTrue(first!.tools.some((t) => t.name === "skill"))
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("steering sent while a tool runs is logged after its result and is the next request's last user message", () =>
    Effect.gen(function*() {
      const { cwd, seen, layer } = yield* setup({
        turns: [
          { calls: [[{ text: "Working." }, { sleep_ms: 300 }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "Done, and noted." }]] }
        ]
      })
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const events = yield* record(session)
        const { turn } = yield* session.send({ _tag: "Prompt", content: text("go") })
        yield* events.until((e) => e.type === "text_delta")
        const steered = yield* session.send({ _tag: "Steer", content: text("Also check the README.") })
        assert.deepStrictEqual(steered, { turn, steering: "injected" })
        yield* events.until((e) => e.type === "turn_end", 10_000)

        const calls = seen.filter((r) => r.turn === turn)
        assert.strictEqual(calls.length, 2)
        const last = calls[1]!.messages[calls[1]!.messages.length - 1]!
        assert.deepStrictEqual(last, { role: "user", content: text("Also check the README.") })
        assert.strictEqual(lastUser(calls[0]!), "go")

        const log = (yield* runtime.readSession(session.id)).events
        const types = log.filter((e) => e.turn === turn).map((e) => (e.type === "model_response" ? `model_response ${e.data.call}` : e.type))
        assert.deepStrictEqual(types.filter((t) => t !== "model_partial"), [
          "turn_start",
          "model_response 1",
          "tool_call",
          "tool_result",
          "turn_input",
          "model_response 2",
          "turn_end"
        ])
        assert.deepStrictEqual(ofType(log, "turn_input")[0]!.data.content, text("Also check the README."))
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))
})

describe("a steered session", () => {
  it.live("re-runs with the steering fed at the same place (its turn_input after the same tool result)", () =>
    Effect.gen(function*() {
      const { base, home, cwd, seen, layer } = yield* setup({
        turns: [{ calls: [[{ text: "Working." }, { sleep_ms: 300 }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "Done, and noted." }]] }]
      })
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const events = yield* record(session)
        yield* session.send({ _tag: "Prompt", content: text("go") })
        yield* events.until((e) => e.type === "text_delta")
        yield* session.send({ _tag: "Steer", content: text("Also check the README.") })
        yield* events.until((e) => e.type === "turn_end", 10_000)
        return session.id
      }).pipe(Effect.scoped, Effect.provide(layer))
      assert.strictEqual(seen.length, 2)
      const original = readLogFile(home, id)
      const rerunHome = join(base, "rerun-home")
      const report = yield* Rerun.run({ header: original.header, events: original.events, home: rerunHome, toolkit: Toolkit.builtin() }).pipe(
        Effect.provide(TempDir.platform)
      )
      assert.isFalse(report.diverged)
      const shape = (events: ReadonlyArray<Canonical>) =>
        events.filter((e) => e.type !== "model_partial").map((e) => (e.type === "turn_input" ? `turn_input ${JSON.stringify(e.data.content)}` : e.type))
      assert.deepStrictEqual(shape(readLogFile(rerunHome, report.rerunSessionId).events), shape(original.events))
    }))
})
