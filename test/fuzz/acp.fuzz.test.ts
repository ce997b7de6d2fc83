/**
 * Fuzzing the ACP agent: random sequences of valid ACP requests (prompts, mode changes,
 * loads, closes…) and notifications, mixed with responses to ids nobody asked, truncated and
 * mutated lines, random unicode (U+2028 included) and whitespace, cut into random chunks.
 *
 * Twice: in process (AcpServer over a memory transport, the real runtime behind it, many runs)
 * and against the built binary (`dist/skein.mjs acp`, fewer runs). Each time: no crash (the
 * server ends cleanly, the process exits 0), every stdout line one JSON-RPC 2.0 message that
 * validates against the ACP schema, every request with a readable id answered exactly once, and
 * a final `initialize` still answered.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Logger } from "effect"
import * as fc from "fast-check"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect } from "vitest"
import { Scripted, Skein } from "../../src/index.ts"
import { serve } from "../../src/server/AcpServer.ts"
import { makeOutboundChecker } from "../support/AcpSchema.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"
import {
  type AcpContext,
  acpVocabulary,
  chunked,
  compareAnswers,
  cutsArb,
  expectedAnswers,
  type Flip,
  flipBytes,
  flipsArb,
  isClientIdProblem,
  type Op,
  opArb,
  render
} from "../fixtures/faults/fuzz.ts"
import { checkJsonRpcLine, idKey, quickTurns, RawAgent, sleep, until } from "../fixtures/faults/harness.ts"

const FINAL_ID = "final-9d2e"
const initializeParams = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } }
const finalLine = `\n${JSON.stringify({ jsonrpc: "2.0", id: FINAL_ID, method: "initialize", params: initializeParams })}\n`
const script = quickTurns(400)
/** Parsed once: a script is data the provider only reads (each run's position is its own). */
const parsedScript = Effect.runSync(Scripted.parse(JSON.stringify(script)))

const opsArb = fc.array(opArb<AcpContext>(), { minLength: 1, maxLength: 50 })

/** Id keys the client used more than once: the schema checker cannot tell their answers apart. */
const ambiguousIds = (clientText: string): Set<string> => {
  const seen = new Set<string>()
  const twice = new Set<string>()
  for (const line of clientText.split("\n")) {
    let m: unknown
    try {
      m = JSON.parse(line)
    } catch {
      continue
    }
    if (typeof m !== "object" || m === null || Array.isArray(m) || !("id" in m)) continue
    const key = idKey((m as { id: unknown }).id)
    if (seen.has(key)) twice.add(key)
    seen.add(key)
  }
  return twice
}

/** Checks the agent's output lines; returns problems and the responses counted by id. */
const audit = (clientText: string, output: ReadonlyArray<string>) => {
  const checker = makeOutboundChecker()
  for (const line of clientText.split("\n")) checker.sawRequest(line)
  const ambiguous = ambiguousIds(clientText)
  const problems: Array<string> = []
  const responses = new Map<string, number>()
  let nulls = 0
  let final: unknown
  output.forEach((line, i) => {
    const shape = checkJsonRpcLine(line)
    if (shape.length > 0) {
      problems.push(...shape.map((p) => `line ${i + 1}: ${p}`))
      return
    }
    const m = JSON.parse(line) as { id?: unknown; method?: unknown; result?: any }
    const schema = checker.check(line).filter((p) => !isClientIdProblem(p))
    // A response to an id the client used twice may be checked against the other request's method.
    if (!(m.method === undefined && ambiguous.has(idKey(m.id)))) problems.push(...schema.map((p) => `line ${i + 1}: ${p}`))
    if (m.method !== undefined) return
    if (m.id === null) nulls++
    else responses.set(idKey(m.id), (responses.get(idKey(m.id)) ?? 0) + 1)
    if (m.id === FINAL_ID) final = m.result
  })
  if ((final as { protocolVersion?: unknown } | undefined)?.protocolVersion !== 1) problems.push(`the final initialize got ${JSON.stringify(final)}`)
  return { problems, responses, nulls }
}

// ---------------------------------------------------------------------------
// In process
// ---------------------------------------------------------------------------

const inProcess = (ops: ReadonlyArray<Op<AcpContext>>, flips: ReadonlyArray<Flip>, cuts: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-fuzz-")))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(root, { recursive: true, force: true })))
    const home = join(root, "home")
    const cwd = join(root, "workspace")
    mkdirSync(cwd, { recursive: true })
    const mt = yield* MemoryTransport.make
    const server = yield* Effect.forkChild(serve(mt.transport, { version: "fuzz" }).pipe(Effect.provide(Skein.layer({ home, script: parsedScript }))))

    // Prelude: initialize and two sessions (ids the fuzzed ops never use).
    const prelude = [
      { jsonrpc: "2.0", id: "pre-0", method: "initialize", params: initializeParams },
      { jsonrpc: "2.0", id: "pre-1", method: "session/new", params: { cwd, mcpServers: [] } },
      { jsonrpc: "2.0", id: "pre-2", method: "session/new", params: { cwd, mcpServers: [] } }
    ].map((m) => JSON.stringify(m)).join("\n") + "\n"
    yield* mt.sendRaw(prelude)
    const sessions: Array<string> = []
    while (sessions.length < 2) {
      const m = (yield* mt.next) as { id?: unknown; result?: { sessionId?: string } }
      if (typeof m.result?.sessionId === "string") sessions.push(m.result.sessionId)
    }

    const text = `${ops.map((op) => render(op, acpVocabulary, { sessions, cwd })).join("\n")}\n`
    const bytes = flipBytes(new TextEncoder().encode(text), flips)
    for (const piece of chunked(bytes, cuts)) {
      yield* mt.sendRaw(piece)
      yield* Effect.yieldNow
    }
    yield* mt.sendRaw(finalLine)
    yield* mt.end
    const exit = yield* Fiber.await(server)
    const encoder = new TextEncoder()
    const clientBytes = Buffer.concat([encoder.encode(prelude), bytes, encoder.encode(finalLine)])
    const clientText = clientBytes.toString("utf8")
    const output = (yield* mt.output).split("\n")
    const trailing = output.pop()
    const { problems, responses, nulls } = audit(clientText, output)
    if (!Exit.isSuccess(exit)) problems.push(`the server ended with ${String(exit.cause)}`)
    if (trailing !== "") problems.push("output does not end with a newline")
    problems.push(...compareAnswers(expectedAnswers(clientBytes), responses, nulls))
    return problems
  }).pipe(Effect.scoped, Effect.provide(Logger.layer([])))

// ---------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------

const spawned = async (ops: ReadonlyArray<Op<AcpContext>>, flips: ReadonlyArray<Flip>, cuts: ReadonlyArray<number>) => {
  const agent = new RawAgent({ script, acpSchema: false })
  try {
    await agent.initialize()
    const sessions = [await agent.newSession(), await agent.newSession()]
    const text = `${ops.map((op) => render(op, acpVocabulary, { sessions, cwd: agent.cwd })).join("\n")}\n`
    for (const piece of chunked(flipBytes(new TextEncoder().encode(text), flips), cuts)) {
      agent.write(piece)
      await new Promise((resolve) => setImmediate(resolve))
    }
    agent.write(finalLine)
    const expected = expectedAnswers(agent.stdinBytes())
    let total = expected.nulls
    for (const n of expected.ids.values()) total += n
    await until(() => agent.responseCount() + agent.nullIdErrors.length >= total, `${total} answers`, 15_000, 10)
    await sleep(50)
    agent.closeStdin()
    const exit = await agent.waitExit(5_000)
    const clientText = Buffer.from(agent.stdinBytes()).toString("utf8")
    const { problems, responses, nulls } = audit(clientText, agent.lines)
    problems.push(...agent.problems)
    if (exit.code !== 0) problems.push(`exit ${JSON.stringify(exit)}: ${agent.stderr.slice(-500)}`)
    problems.push(...compareAnswers(expected, responses, nulls))
    return problems
  } finally {
    await agent.dispose()
  }
}

// The bounds only turn a hang into a failure: under load (other files run alongside) the runs
// take minutes.
describe("fuzz: the ACP agent", () => {
  it("in process: never crashes, writes only valid ACP, answers each readable request exactly once", async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, flipsArb, cutsArb, async (ops, flips, cuts) => {
        expect(await Effect.runPromise(inProcess(ops, flips, cuts))).toEqual([])
      }),
      { numRuns: 300 }
    )
  }, 180_000)

  it("the built binary: the same, and it exits 0 when its stdin ends", async () => {
    await fc.assert(
      fc.asyncProperty(opsArb, flipsArb, cutsArb, async (ops, flips, cuts) => {
        expect(await spawned(ops, flips, cuts)).toEqual([])
      }),
      { numRuns: 20 }
    )
  }, 180_000)
})
