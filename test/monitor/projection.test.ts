/**
 * The monitor's pure parts: the overview folded from events and listings (rows, the approvals
 * inbox and what closes a question), the coalescing and cutting of what a browser gets, and the
 * guard every request passes (host, origin, token).
 */
import { describe, expect, it } from "vitest"
import type { SessionEvent } from "../../src/log/Event.ts"
import * as Coalesce from "../../src/monitor/Coalesce.ts"
import * as Guard from "../../src/monitor/Guard.ts"
import * as Projection from "../../src/monitor/Projection.ts"

let seq = 0
const ev = (sessionId: string, turn: number | null, body: { type: string; data: unknown }): SessionEvent =>
  ({ ...body, sessionId, seq: ++seq, ts: 1_000 + seq, turn }) as SessionEvent

const asked = (sessionId: string, turn: number, requestId: string, toolCallId: string) =>
  ev(sessionId, turn, {
    type: "permission_asked",
    data: {
      requestId,
      toolCall: { toolCallId, title: "Write a.txt", kind: "edit", status: "pending", rawInput: { path: "a.txt" } },
      options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }]
    }
  })

const fold = (events: ReadonlyArray<SessionEvent>) => {
  const state = Projection.empty()
  const changes = Projection.noChanges()
  for (const e of events) Projection.applyEvent(state, changes, e)
  return { state, changes }
}

describe("Projection: the approvals inbox", () => {
  it("opens a question on permission_asked and closes it on its withdrawal, its answer's permission, or its turn's end", () => {
    const { state, changes } = fold([
      asked("s1", 1, "1.1", "t1"),
      asked("s1", 1, "1.2", "t2"),
      asked("s1", 1, "1.3", "t3"),
      asked("s2", 4, "4.1", "t9")
    ])
    expect([...state.inbox.keys()]).toEqual(["s1 1.1", "s1 1.2", "s1 1.3", "s2 4.1"])
    expect([...changes.opened]).toEqual(["s1 1.1", "s1 1.2", "s1 1.3", "s2 4.1"])

    const after = Projection.noChanges()
    Projection.applyEvent(state, after, ev("s1", 1, { type: "question_withdrawn", data: { requestId: "1.1", answered: true } }))
    Projection.applyEvent(state, after, ev("s1", 1, { type: "permission", data: { toolCallId: "t2", outcome: "allow_once" } }))
    expect([...state.inbox.keys()]).toEqual(["s1 1.3", "s2 4.1"])
    Projection.applyEvent(state, after, ev("s1", 1, { type: "turn_end", data: { stopReason: "cancelled" } }))
    expect([...state.inbox.keys()]).toEqual(["s2 4.1"])
    expect([...after.closed].sort()).toEqual(["s1 1.1", "s1 1.2", "s1 1.3"])
  })

  it("ends a turn whose end the log refused (turn_aborted): the row stops running, failed, and its questions close", () => {
    const { state } = fold([
      ev("s1", 3, { type: "turn_start", data: { content: [{ type: "text", text: "hi" }] } }),
      asked("s1", 3, "3.1", "t1")
    ])
    expect(state.rows.get("s1")?.running).toBe(true)
    const after = Projection.noChanges()
    Projection.applyEvent(state, after, ev("s1", 3, { type: "turn_aborted", data: { stopReason: "end_turn", error: "This turn's end could not be saved" } }))
    expect(state.rows.get("s1")).toMatchObject({ running: false, failed: true, stopReason: "end_turn" })
    expect([...after.closed]).toEqual(["s1 3.1"])
  })

  it("counts a child's question once (its own event, not its parent's copy), and a question opened and closed in one batch not at all", () => {
    const child = asked("child", 1, "1.1", "c1")
    const { state, changes } = fold([
      ev("parent", 2, { type: "child_event", data: { event: child } }),
      child,
      asked("s1", 1, "1.9", "t1"),
      ev("s1", 1, { type: "question_withdrawn", data: { requestId: "1.9" } })
    ])
    expect([...state.inbox.keys()]).toEqual(["child 1.1"])
    expect([...changes.opened]).toEqual(["child 1.1"])
    expect([...changes.closed]).toEqual([])
    expect(state.rows.has("parent")).toBe(false)
  })

  it("closes the questions of a session that is no longer live", () => {
    const { state } = fold([asked("s1", 1, "1.1", "t1")])
    const changes = Projection.noChanges()
    Projection.applyCatalog(state, changes, { logged: [], complete: false, live: [] })
    expect(state.inbox.size).toBe(0)
    expect(state.rows.get("s1")).toMatchObject({ live: false, running: false })
  })
})

describe("Projection: rows", () => {
  it("follows a session's turns, title and cost from its events, and its place from the listing", () => {
    const { state } = fold([
      ev("s1", 1, { type: "turn_start", data: { content: [{ type: "text", text: "Fix   the\nbuild" }] } }),
      ev("s1", 1, { type: "usage", data: { used: 10, size: 100, cost: 0.25 } })
    ])
    expect(state.rows.get("s1")).toMatchObject({ live: true, running: true, turn: 1, title: "Fix the build", cost: 0.25 })
    const changes = Projection.noChanges()
    Projection.applyCatalog(state, changes, {
      logged: [
        { id: "s1", cwd: "/w", additionalDirectories: [], title: "Fix the build", created: 5, updatedAt: 9, version: 4 },
        { id: "c1", cwd: "/w", additionalDirectories: [], title: "child task", created: 6, updatedAt: 8, version: 4, parent: "s1" },
        { id: "old", cwd: "/x", additionalDirectories: [], title: undefined, created: 1, updatedAt: 2, version: 4 }
      ],
      complete: true,
      live: [{ id: "s1", cwd: "/w", additionalDirectories: [], created: 5 }, { id: "c1", cwd: "/w", additionalDirectories: [], created: 6, parent: { sessionId: "s1", toolCallId: "t", depth: 1 }, agent: "explorer" }],
      runner: "10.0.0.2:7001"
    })
    expect(state.rows.get("s1")).toMatchObject({ cwd: "/w", live: true, running: true, runner: "10.0.0.2:7001" })
    expect(state.rows.get("c1")).toMatchObject({ parent: "s1", agent: "explorer", live: true, runner: "10.0.0.2:7001" })
    expect(state.rows.get("old")).toMatchObject({ live: false, running: false })
    expect(state.rows.get("old")?.runner).toBeUndefined()

    // A whole listing without a session: it was deleted.
    const later = Projection.noChanges()
    Projection.applyCatalog(state, later, { logged: [], complete: true, live: [] })
    expect([...later.removedRows].sort()).toEqual(["c1", "old", "s1"])
    expect(state.rows.size).toBe(0)
  })

  it("keeps the live sessions and the most recent others, up to MAX_ROWS", () => {
    const state = Projection.empty()
    const logged = Array.from({ length: Projection.MAX_ROWS + 50 }, (_, i) => ({
      id: `s${i}`, cwd: "/w", additionalDirectories: [], title: undefined, created: i, updatedAt: i, version: 4
    }))
    Projection.applyCatalog(state, Projection.noChanges(), { logged, complete: false, live: [{ id: "s0", cwd: "/w", additionalDirectories: [], created: 0 }] })
    expect(state.rows.size).toBe(Projection.MAX_ROWS + 1)
    expect(state.rows.has("s0")).toBe(true)
    expect(state.rows.has("s1")).toBe(false)
    expect(state.rows.has(`s${Projection.MAX_ROWS + 49}`)).toBe(true)
  })
})

describe("Coalesce", () => {
  it("merges adjacent deltas of a turn, never across a logged event or another session", () => {
    const batch = Coalesce.merge([
      ev("s1", 1, { type: "text_delta", data: { text: "a" } }),
      ev("s1", 1, { type: "text_delta", data: { text: "b" } }),
      ev("s2", 1, { type: "text_delta", data: { text: "x" } }),
      ev("s1", 1, { type: "text_delta", data: { text: "c" } }),
      ev("s1", 1, { type: "model_partial", data: { call: 1, parts: [{ type: "text", text: "abc" }] } }),
      ev("s1", 1, { type: "text_delta", data: { text: "d" } }),
      ev("s1", 1, { type: "tool_progress", data: { id: "t", output: "1" } }),
      ev("s1", 1, { type: "tool_progress", data: { id: "t", output: "12" } })
    ])
    expect(batch.map((e) => [e.sessionId, e.type, (e.data as { text?: string; output?: string }).text ?? (e.data as { output?: string }).output ?? ""])).toEqual([
      ["s1", "text_delta", "ab"],
      ["s2", "text_delta", "x"],
      ["s1", "text_delta", "c"],
      ["s1", "model_partial", ""],
      ["s1", "text_delta", "d"],
      ["s1", "tool_progress", "12"]
    ])
  })

  it("cuts every long string to its head and tail, saying how much was left out", () => {
    const long = "h".repeat(10_000) + "m".repeat(200_000) + "t".repeat(60_000)
    const cut = Coalesce.cut({ a: [{ text: long }], short: "ok", n: 3 })
    const text = cut.a[0]!.text
    expect(text.length).toBeLessThan(Coalesce.MAX_TEXT + 100)
    expect(text.startsWith("h".repeat(8_000))).toBe(true)
    expect(text.endsWith("t".repeat(56_000))).toBe(true)
    expect(text).toContain(`[${long.length - Coalesce.MAX_TEXT} characters not shown]`)
    expect(cut.short).toBe("ok")
    expect(cut.n).toBe(3)
  })
})

describe("Guard", () => {
  const guard = Guard.make("the-token", "127.0.0.1", 8123)
  const base = { method: "GET", path: "/api/overview", host: "127.0.0.1:8123", origin: undefined, cookie: undefined, authorization: undefined, queryToken: undefined }

  it("admits the token in the cookie or as a bearer, and the one-time URL only for a page", () => {
    expect(Guard.check(guard, { ...base, cookie: "a=b; skein_monitor_8123=the-token" })._tag).toBe("ok")
    expect(Guard.check(guard, { ...base, authorization: "Bearer the-token" })._tag).toBe("ok")
    expect(Guard.check(guard, { ...base, path: "/", queryToken: "the-token" })._tag).toBe("login")
    expect(Guard.check(guard, { ...base, path: "/sessions/abc", queryToken: "the-token" })._tag).toBe("login")
    expect(Guard.check(guard, { ...base, queryToken: "the-token" })).toMatchObject({ status: 401 })
    for (const wrong of [{}, { cookie: "skein_monitor_8123=the-tokeN" }, { cookie: "skein_monitor_9999=the-token" }, { authorization: "Bearer nope" }]) {
      expect(Guard.check(guard, { ...base, ...wrong })).toMatchObject({ _tag: "refused", status: 401 })
    }
  })

  it("refuses another host (DNS rebinding), another origin, a cross-site fetch, and a POST that does not say where it comes from", () => {
    const authed = { ...base, authorization: "Bearer the-token" }
    for (const host of ["localhost:8123", "[::1]:8123", "127.0.0.1:8123", "LOCALHOST:8123"]) expect(Guard.check(guard, { ...authed, host })._tag).toBe("ok")
    for (const host of [undefined, "evil.example:8123", "127.0.0.1:9999", "127.0.0.1"]) expect(Guard.check(guard, { ...authed, host })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, origin: "http://evil.example" })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, origin: "http://127.0.0.1:3000" })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, origin: "null" })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, origin: "http://localhost:8123" })._tag).toBe("ok")
    expect(Guard.check(guard, { ...authed, secFetchSite: "same-site" })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, secFetchSite: "same-origin" })._tag).toBe("ok")
    expect(Guard.check(guard, { ...authed, method: "POST" })).toMatchObject({ status: 403 })
    expect(Guard.check(guard, { ...authed, method: "POST", origin: "http://127.0.0.1:8123" })._tag).toBe("ok")
    // A monitor on another address answers only there; on every interface, at this machine's names.
    const wide = Guard.make("t", "10.1.2.3", 80)
    expect([...wide.hosts]).toEqual(["10.1.2.3:80"])
    const every = Guard.make("t", "0.0.0.0", 80, ["build-box", "10.1.2.3", "fe80::1"])
    expect([...every.hosts].sort()).toEqual(["10.1.2.3:80", "127.0.0.1:80", "[::1]:80", "[fe80::1]:80", "build-box:80", "localhost:80"])
  })
})
