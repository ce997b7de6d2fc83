/**
 * Faults: a soak. Many sessions prompted over and over in one agent process, with stable
 * memory: nothing a prompt, a session or its closing leaves behind may accumulate.
 *
 * Two measures:
 * - resident memory (/proc/<pid>/status) right after warm-up and at the end, with generous
 *   slack (V8 grows its heap with the allocation rate and gives it back lazily);
 * - the heap after a full GC (a preloaded probe, test/fixtures/faults/heap-probe.mjs): after a
 *   warm-up round whose sessions are then closed, and after the main round whose sessions are
 *   closed too. Live histories are legitimately retained while their sessions are open; once
 *   closed, what is left must not depend on how many prompts ran.
 *
 * By default a short version runs (50 sessions × 100 prompts); `SKEIN_SOAK=1` runs the long one:
 * 1,000 sessions, 10,000 prompts.
 *
 * Nothing is timed: how long the prompts take depends on the machine (and on what else runs on
 * it), so the test has no time limit of its own. Each prompt must still be answered within
 * `PROMPT_HANG_MS`, far beyond any real answer (a few ms), which stops a soak that hangs.
 */
import { afterEach, describe, expect, it } from "vitest"
import { MB, quickTurns, type RawAgent, rawAgents } from "../fixtures/faults/harness.ts"

const agents = rawAgents()
afterEach(() => agents.disposeAll())

const LONG = process.env.SKEIN_SOAK === "1"
const SESSIONS = LONG ? 1_000 : 50
const PROMPTS_PER_SESSION = LONG ? 10 : 100
/** Prompts in flight at once (each session has at most one). */
const CONCURRENCY = 16
const WARMUP_PROMPTS = 2
/** Far beyond any real answer: only a prompt that hangs reaches it. */
const PROMPT_HANG_MS = 120_000

const newSessions = async (agent: RawAgent, n: number) => {
  const ids: Array<string> = []
  for (let i = 0; i < n; i += 50) {
    ids.push(...await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => agent.newSession())))
  }
  return ids
}

/** Runs `perSession` prompts in every session, one at a time per session, `CONCURRENCY` at once. */
const promptAll = async (agent: RawAgent, sessions: ReadonlyArray<string>, perSession: number, onProgress?: (done: number) => void) => {
  const queue: Array<string> = []
  for (let round = 0; round < perSession; round++) queue.push(...sessions)
  const busy = new Set<string>()
  let done = 0
  let failures = 0
  const worker = async () => {
    while (queue.length > 0) {
      const index = queue.findIndex((s) => !busy.has(s))
      if (index === -1) {
        await new Promise((resolve) => setTimeout(resolve, 1))
        continue
      }
      const [sessionId] = queue.splice(index, 1)
      busy.add(sessionId!)
      const response = await agent.prompt(sessionId!, "again", PROMPT_HANG_MS)
      busy.delete(sessionId!)
      if (response.result?.stopReason !== "end_turn") failures++
      done++
      onProgress?.(done)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return { done, failures }
}

const closeAll = async (agent: RawAgent, sessions: ReadonlyArray<string>) => {
  for (let i = 0; i < sessions.length; i += 50) {
    const responses = await Promise.all(sessions.slice(i, i + 50).map((sessionId) => agent.request("session/close", { sessionId })))
    for (const r of responses) expect(r.result).toEqual({})
  }
}

describe("faults: soak", () => {
  it(
    `${SESSIONS} sessions × ${PROMPTS_PER_SESSION} prompts (${SESSIONS * PROMPTS_PER_SESSION} in all) with stable memory`,
    async () => {
      // Every session stays live: the soak measures memory with all of them open.
      const agent = agents.start({
        script: quickTurns(Math.max(PROMPTS_PER_SESSION, WARMUP_PROMPTS)),
        heapProbe: true,
        args: ["--max-live-sessions", String(SESSIONS + 1)]
      })
      await agent.initialize()

      // Warm-up: every code path runs, the JIT settles; then its sessions are closed.
      const warm = await newSessions(agent, SESSIONS)
      expect((await promptAll(agent, warm, WARMUP_PROMPTS)).failures).toBe(0)
      await closeAll(agent, warm)
      const heapWarm = await agent.heap()

      // The main round.
      const sessions = await newSessions(agent, SESSIONS)
      const total = SESSIONS * PROMPTS_PER_SESSION
      let rssWarm = 0
      const result = await promptAll(agent, sessions, PROMPTS_PER_SESSION, (done) => {
        if (done === Math.ceil(total / 10)) rssWarm = agent.rss()
      })
      const rssEnd = agent.rss()
      expect(result).toEqual({ done: total, failures: 0 })

      // Each session consumed its script in order.
      const sample = agent.updates(sessions[SESSIONS - 1]!).map((u) => u.content?.text)
      expect(sample).toEqual(Array.from({ length: PROMPTS_PER_SESSION }, (_, i) => `answer ${i + 1}`))

      await closeAll(agent, sessions)
      const heapEnd = await agent.heap()

      // Resident memory: no runaway growth while thousands of prompts ran (generous slack).
      expect(rssWarm).toBeGreaterThan(0)
      expect(rssEnd).toBeLessThan(rssWarm * 1.5 + 100 * MB)
      // The heap after closing everything does not depend on how many prompts ran: a leak of a
      // few hundred bytes per prompt would show here (the main round ran ~20× the warm-up's).
      const growth = heapEnd.heapUsed - heapWarm.heapUsed
      if (process.env.SKEIN_SOAK_REPORT === "1") {
        console.log({ heapWarm: heapWarm.heapUsed / MB, heapEnd: heapEnd.heapUsed / MB, rssWarm: rssWarm / MB, rssEnd: rssEnd / MB })
      }
      expect(growth).toBeLessThan((LONG ? 16 : 6) * MB)

      expect(agent.answerProblems()).toEqual([])
      expect(agent.problems).toEqual([])
      expect(agent.nullIdErrors).toEqual([])
    },
    0
  )
})
