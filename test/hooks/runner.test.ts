import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/testing/TestClock"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as Runner from "../../src/hooks/Runner.ts"
import * as Decision from "../../src/hooks/Decision.ts"
import * as TempDir from "../support/TempDir.ts"

/** Whether `pid` can still run (a zombie waiting to be reaped cannot). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

/** Waits (real time, no budget) until `file` exists. */
const appears = (file: string) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const look = () => (existsSync(file) && readFileSync(file, "utf8").trim().length > 0 ? resolve() : setTimeout(look, 10))
      look()
    })
  )

describe("hook runner", () => {
  it.live("gives the event as JSON on stdin, and exit 2's stderr becomes the denial's reason", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      const command = "jq -r .tool_input.command | grep -q 'rm -rf' && { echo \"refused: $(pwd)\" >&2; exit 2; }; exit 0"
      const input = { hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "rm -rf /" } }
      const raw = yield* Runner.run({ command, timeoutMs: 10_000, input, cwd })
      assert.deepStrictEqual(raw, { _tag: "exited", code: 2, stdout: "", stderr: `refused: ${cwd}\n` })
      assert.deepStrictEqual(Decision.decide("PreToolUse", command, raw), { decision: "deny", reason: `refused: ${cwd}` })
      const harmless = yield* Runner.run({ command, timeoutMs: 10_000, input: { ...input, tool_input: { command: "ls" } }, cwd })
      assert.strictEqual(harmless._tag === "exited" && harmless.code, 0)
    }))

  it.live("JSON output decides, and the project's folder is in the environment", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      const command = "printf '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"%s\"}}' \"$CLAUDE_PROJECT_DIR\""
      const raw = yield* Runner.run({ command, timeoutMs: 10_000, input: {}, cwd })
      assert.deepStrictEqual(Decision.decide("PreToolUse", command, raw), { decision: "allow", message: cwd })
    }))

  it.live("a hook that does not read stdin, or prints a lot, is bounded and does not block", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      const raw = yield* Runner.run({ command: "head -c 1000000 /dev/zero | tr '\\0' x; exit 0", timeoutMs: 10_000, input: { big: "y".repeat(500_000) }, cwd })
      assert.strictEqual(raw._tag, "exited")
      if (raw._tag === "exited") assert.isBelow(raw.stdout.length, 2 * Runner.HALF_BYTES + 200)
    }))

  it.effect("its timeout kills it and everything it started", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      const pids = join(cwd, "pids")
      const fiber = yield* Effect.forkChild(
        Runner.run({ command: `sleep 600 & echo "$$ $!" > ${pids}; wait`, timeoutMs: 5_000, input: {}, cwd })
      )
      yield* appears(pids)
      const [shell, child] = readFileSync(pids, "utf8").trim().split(" ").map(Number)
      assert.isTrue(alive(shell!) && alive(child!))
      yield* TestClock.adjust(5_000)
      const raw = yield* Fiber.join(fiber)
      assert.strictEqual(raw._tag, "timedOut")
      assert.isFalse(alive(shell!))
      assert.isFalse(alive(child!))
      assert.strictEqual(Decision.decide("Stop", "x", raw).decision, "none")
    }))

  it.live("a command that cannot start is a failure, not a crash", () =>
    Effect.gen(function*() {
      const raw = yield* Runner.run({ command: "true", timeoutMs: 1_000, input: {}, cwd: "/no/such/folder" })
      assert.strictEqual(raw._tag, "failed")
    }))
})
