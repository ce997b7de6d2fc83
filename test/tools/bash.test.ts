import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as fc from "fast-check"
import { execFile } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { bash, DEFAULT_TIMEOUT_MS } from "../../src/tools/bash.ts"
import * as OutputBuffer from "../../src/tools/process/OutputBuffer.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import type { ClientTerminal } from "../../src/tools/Terminals.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const fixtures = join(import.meta.dirname, "..", "fixtures", "bash")
const TREE = `sh ${JSON.stringify(join(fixtures, "tree.sh"))}`
const TREE_PIDS = ["leader", "grandchild", "subshell", "nohup"]

const context = (cwd: string, overrides: Partial<Tool.ToolContext> = {}): Tool.ToolContext => ({
  sessionId: "s1",
  toolCallId: "t1",
  cwd,
  roots: [cwd],
  ...overrides
})

const run = (raw: unknown, ctx: Tool.ToolContext, services: ToolServices.Parts = {}) =>
  Tool.run(bash, raw, ctx).pipe(ToolServices.provide(services), Effect.provide(TempDir.platform))

/**
 * Whether a process can still run. ESRCH means gone; a zombie is dead too:
 * PID 1 in some containers never reaps orphans, so `kill(pid, 0)` keeps
 * succeeding for a process that has exited. Linux reports it as state Z.
 */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    assert.strictEqual((error as NodeJS.ErrnoException).code, "ESRCH")
    return false
  }
  if (process.platform !== "linux" || !existsSync(`/proc/${pid}/stat`)) return true
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
}

const readPids = (dir: string): Array<number> =>
  TREE_PIDS.map((name) => {
    const pid = Number(readFileSync(join(dir, `${name}.pid`), "utf8").trim())
    // An empty file would read as pid 0, which `kill` takes as the test's own group.
    assert.isAbove(pid, 1, `${name}.pid holds a pid`)
    return pid
  })

/** Waits (real time) until `done` holds, failing the test after `ms`. */
const waitUntil = (done: () => boolean, ms: number, what: string) =>
  Effect.gen(function*() {
    const start = performance.now()
    while (!done()) {
      if (performance.now() - start > ms) return assert.fail(`timed out waiting for ${what}`)
      yield* Effect.sleep(10)
    }
  })

const treeReady = (dir: string) => () => TREE_PIDS.every((name) => existsSync(join(dir, `${name}.pid`)) && readFileSync(join(dir, `${name}.pid`), "utf8").trim() !== "")

describe("bash: results", () => {
  it.live("exit 0 is ok with the output and the exit code", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "echo hello" }, context(dir))
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "hello\n[exit code 0]")
      assert.deepStrictEqual(out.details, { output: "hello\n", exitCode: 0, truncated: false })
    }).pipe(Effect.scoped))

  it.live("a non-zero exit is ok: false with the code, stderr captured in order", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "echo out; sleep 0.05; echo oops >&2; exit 3" }, context(dir))
      assert.isFalse(out.ok)
      assert.strictEqual(out.content, "out\noops\n[exit code 3]")
      assert.strictEqual(out.details?.exitCode, 3)
    }).pipe(Effect.scoped))

  it.live("runs in the session cwd, with stdin closed", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "pwd; cat; echo \"stdin:$?\"" }, context(dir))
      assert.strictEqual(out.content, `${dir}\nstdin:0\n[exit code 0]`)
    }).pipe(Effect.scoped))

  it.live("the child does not see secrets from the environment", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      process.env["FOO_API_KEY"] = "sk-fake"
      process.env["SKEIN_PROVIDER_KEY"] = "sk-fake"
      process.env["SKEIN_TEST_VISIBLE"] = "yes"
      const out = yield* run({ command: "echo \"key=${FOO_API_KEY:-none} skein=${SKEIN_PROVIDER_KEY:-none} visible=$SKEIN_TEST_VISIBLE path=${PATH:+set}\"" }, context(dir)).pipe(
        Effect.ensuring(Effect.sync(() => {
          delete process.env["FOO_API_KEY"]
          delete process.env["SKEIN_PROVIDER_KEY"]
          delete process.env["SKEIN_TEST_VISIBLE"]
        }))
      )
      assert.strictEqual(out.content, "key=none skein=none visible=yes path=set\n[exit code 0]")
    }).pipe(Effect.scoped))

  it.live("a command killed by a signal has no exit code", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "echo before; kill -9 $$" }, context(dir))
      assert.isFalse(out.ok)
      assert.strictEqual(out.content, "before\n[killed by SIGKILL]")
      assert.strictEqual(out.details?.exitCode, null)
    }).pipe(Effect.scoped))

  it.live("decodes a UTF-8 character split across writes", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "printf '\\344\\270'; sleep 0.05; printf '\\255\\n'" }, context(dir))
      assert.strictEqual(out.content, "中\n[exit code 0]")
    }).pipe(Effect.scoped))

  it.live("empty output says so", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "true" }, context(dir))
      assert.strictEqual(out.content, "(no output)\n[exit code 0]")
    }).pipe(Effect.scoped))

  it.live("bad arguments and a missing cwd are tool errors", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      for (const raw of [{ command: "true", timeout_ms: 600_001 }, { command: "true", timeout_ms: 0 }, { command: "true", timeout_ms: 1.5 }, {}]) {
        const out = yield* run(raw, context(dir))
        assert.isFalse(out.ok)
        assert.match(out.content, /^Invalid arguments for bash/)
      }
      assert.isTrue((yield* run({ command: "true", timeout_ms: 600_000 }, context(dir))).ok)
      const missing = yield* run({ command: "true" }, context(join(dir, "nope")))
      assert.isFalse(missing.ok)
      assert.match(missing.content, /working directory does not exist/)
      assert.isFalse((yield* run({ command: "  " }, context(dir))).ok)
    }).pipe(Effect.scoped))

  it("title, scope and defaults", () => {
    assert.strictEqual(bash.title({ command: "npm test -- --watch" }), "`npm test -- --watch`")
    assert.strictEqual(bash.title({ command: `echo ${"x".repeat(100)}` }).length, 82)
    assert.strictEqual(bash.title({ command: "make\nmake install" }), "`make …`")
    assert.deepStrictEqual(bash.scope?.({ command: "npm test -- --watch" }, "/w"), { kind: "command", value: "npm test", label: "`npm test`" })
    assert.deepStrictEqual(bash.scope?.({ command: "ls -la" }, "/w"), { kind: "command", value: "ls", label: "`ls`" })
    assert.deepStrictEqual(bash.locations({ command: "ls" }, "/w"), [])
    assert.strictEqual(bash.kind, "execute")
    assert.isTrue(bash.mutating)
    assert.strictEqual(DEFAULT_TIMEOUT_MS, 120_000)
  })
})

describe("bash: read-only calls", () => {
  it.live("a call the gate allowed as read-only runs git with its code-running configuration off; others do not", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const show = "git config --get core.hooksPath; git config --get core.fsmonitor; printenv GIT_OPTIONAL_LOCKS"
      const confined = yield* run({ command: show }, context(dir, { readOnly: true }))
      assert.strictEqual(confined.details?.output, "/dev/null\nfalse\n0\n")
      const plain = yield* run({ command: "printenv GIT_OPTIONAL_LOCKS GIT_CONFIG_COUNT" }, context(dir))
      assert.strictEqual(plain.details?.output, "")
    }))
})

describe("bash: process group", () => {
  it.live("interrupting the call kills the whole group before it completes", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const fiber = yield* Effect.forkChild(run({ command: TREE }, context(dir)))
      yield* waitUntil(treeReady(dir), 5_000, "the process tree")
      const pids = readPids(dir)
      assert.isTrue(pids.every(alive))
      // The tree would sleep for minutes: an interruption that waited for it would not end the test.
      yield* Fiber.interrupt(fiber)
      // Interruption waited for the kill: nothing may be left even now.
      assert.deepStrictEqual(pids.filter(alive), [])
      assert.isFalse(ProcessGroup.liveGroups().has(pids[0]!))
    }).pipe(Effect.scoped))

  it.live("a timeout kills the whole group and says so", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: TREE, timeout_ms: 300 }, context(dir))
      assert.isFalse(out.ok)
      assert.strictEqual(out.content, "started\n[killed by SIGTERM after timeout of 300 ms]")
      assert.strictEqual(out.details?.exitCode, null)
      assert.deepStrictEqual(readPids(dir).filter(alive), [])
    }).pipe(Effect.scoped))

  it.live("a group that ignores SIGTERM gets SIGKILL after a short grace", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* run({ command: "trap '' TERM; sleep 600 & echo $! > grandchild.pid; sleep 600", timeout_ms: 200 }, context(dir))
      assert.strictEqual(out.content, "(no output)\n[killed by SIGKILL after timeout of 200 ms]")
      assert.isFalse(alive(Number(readFileSync(join(dir, "grandchild.pid"), "utf8"))))
    }).pipe(Effect.scoped))

  it.live("processes a finished command left in the background are killed", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      // The call ends when the command does, not when what it left running would (in ten minutes).
      const out = yield* run({ command: "sleep 600 & echo $! > grandchild.pid; echo done" }, context(dir))
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "done\n[exit code 0]\n[background processes still running at exit were killed (SIGTERM)]")
      assert.isFalse(alive(Number(readFileSync(join(dir, "grandchild.pid"), "utf8"))))
    }).pipe(Effect.scoped))

  // A pid namespace's init with no child left is let exit on its own for a moment (a sandbox's
  // does, just after the command): one that stays is still something the command left running.
  it.live("a pid namespace's init left running on its own is still killed and reported", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const arg = uniqueArg()
      const command = [
        `unshare -Urpf sh -c 'echo $$ > ns.txt; exec sleep ${arg}' &`,
        "while [ ! -s ns.txt ]; do sleep 0.01; done",
        // The unshare that waits for it goes: the init (sleep, pid 1 of its namespace) is alone.
        "kill -9 $!; wait $! 2>/dev/null",
        "echo done"
      ].join("\n")
      const out = yield* run({ command }, context(dir))
      assert.strictEqual(readFileSync(join(dir, "ns.txt"), "utf8"), "1\n", "the sleep was pid 1 of its namespace")
      // An init ignores SIGTERM it has no handler for: SIGKILL ends it.
      assert.strictEqual(out.content, "done\n[exit code 0]\n[background processes still running at exit were killed (SIGKILL)]")
      assert.deepStrictEqual(survivors(arg), [])
    }).pipe(Effect.scoped))

  // The note comes from finding a live process after the command exited. Anything of Skein's own
  // in the command's group (once, a watchdog forked by the command's shell, whose command line was
  // still the shell's until it exec'd) made about one `true` in seven report it.
  it.live("200 quick commands: none falsely reports background processes", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const notes: Array<string> = []
      for (let i = 0; i < 200; i++) {
        const out = yield* run({ command: "true" }, context(dir))
        if (out.content !== "(no output)\n[exit code 0]") notes.push(out.content)
      }
      assert.deepStrictEqual(notes, [])
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }).pipe(Effect.scoped), 60_000)

  it.live("when Skein exits, the exit hook kills every live group", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const node = process.execPath
      const stdout = yield* Effect.callback<string>((resume) => {
        execFile(node, [join(fixtures, "exit-hook.ts"), dir], { timeout: 10_000 }, (error, out, err) =>
          resume(error ? Effect.die(new Error(`${error.message}\n${err}`)) : Effect.succeed(out)))
      })
      assert.strictEqual(stdout, "ready\n")
      const pids = readPids(dir)
      // The tree would live for minutes on its own.
      yield* waitUntil(() => pids.every((pid) => !alive(pid)), 20_000, "the group to die")
    }).pipe(Effect.scoped))
})

describe("bash: output", () => {
  it.live("200 MB of output stays bounded: head, tail, the middle counted, RSS flat", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const sizes: Array<number> = []
      global.gc?.()
      const before = process.memoryUsage().rss
      const out = yield* run(
        { command: "head -c 200000000 /dev/zero | tr '\\0' 'a'; echo; echo THE END" },
        context(dir), { progress: (_id, text) => Effect.sync(() => void sizes.push(text.length)) }
      )
      const growth = process.memoryUsage().rss - before
      assert.isTrue(out.ok)
      assert.isTrue(out.details?.truncated)
      const total = 200_000_000 + 1 + 8
      const kept = OutputBuffer.DEFAULT_HEAD_BYTES + OutputBuffer.DEFAULT_TAIL_BYTES
      assert.include(out.content, `… ${total - kept} bytes omitted …`)
      assert.isTrue(out.content.startsWith("a".repeat(1000)))
      assert.isTrue(out.content.endsWith("a\nTHE END\n[exit code 0]"))
      assert.isBelow(out.details!.output!.length, kept + 100)
      assert.isBelow(growth, 100 * 1024 * 1024)
      for (const size of sizes) assert.isBelow(size, kept + 100)
    }).pipe(Effect.scoped))

  it.live("progress streams partial output while the command runs", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const seen: Array<string> = []
      const out = yield* run(
        { command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done" },
        context(dir), { progress: (_id, text) => Effect.sync(() => void seen.push(text)) }
      )
      assert.isTrue(out.ok)
      assert.isAtLeast(seen.length, 2)
      assert.isAtMost(seen.length, 1_000 / 100)
      assert.isTrue(seen[0]!.startsWith("line1\n"))
      assert.notInclude(seen[0]!, "line5")
      // Each update is the whole view so far, growing.
      for (let i = 1; i < seen.length; i++) assert.isTrue(seen[i]!.startsWith(seen[i - 1]!))
    }).pipe(Effect.scoped))
})

describe("bash: OutputBuffer", () => {
  const encoder = new TextEncoder()

  it("keeps everything while it fits, whatever the chunking", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }), (text, cuts) => {
      const bytes = encoder.encode(text)
      const buffer = OutputBuffer.make(32, 32)
      const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
      let start = 0
      for (const p of [...points, bytes.length]) {
        buffer.push(bytes.subarray(start, p))
        start = p
      }
      const rendered = buffer.render()
      return bytes.length <= 64 ? rendered.text === text && !rendered.truncated : rendered.truncated
    }))
  })

  it("keeps a head and a tail, counts the middle, never splits a character", () => {
    // A split character would show as U+FFFD where the text has something else: the head is then
    // no prefix of the text (or the tail no suffix), or the bytes no longer add up. The text may
    // hold U+FFFD itself (the generator makes it too, and the examples below always do).
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 200 }), fc.integer({ min: 1, max: 9 }), (text, chunk) => {
        const bytes = encoder.encode(text)
        const buffer = OutputBuffer.make(16, 16)
        for (let i = 0; i < bytes.length; i += chunk) buffer.push(bytes.subarray(i, i + chunk))
        const r = buffer.render()
        if (bytes.length <= 32) return r.text === text
        const [head, tail] = r.text.split(OutputBuffer.omittedMarker(r.omitted))
        return text.startsWith(head!) && text.endsWith(tail!) &&
          encoder.encode(head!).length + encoder.encode(tail!).length + r.omitted === bytes.length
      }),
      { examples: [["\uFFFD".repeat(20), 2], [`a\uFFFD${"é".repeat(20)}\uFFFDz`, 5], [`${"\uFFFD".repeat(5)}${"🙂".repeat(10)}`, 1]] }
    )
  })
})

describe("bash: client terminal", () => {
  type RunOptions = Parameters<ClientTerminal["run"]>[0]
  type TerminalResult = { terminalId: string; output: string; truncated: boolean; exitCode: number | null; signal: string | null; timedOut: boolean }
  const fake = (result: Effect.Effect<TerminalResult, string>) => {
    const calls: Array<RunOptions> = []
    const terminal: ClientTerminal = { run: (options) => Effect.sync(() => void calls.push(options)).pipe(Effect.andThen(result)) }
    return { calls, terminal }
  }

  it.live("runs through the client's terminal and shapes the same result", () =>
    Effect.gen(function*() {
      const { calls, terminal } = fake(Effect.succeed({ terminalId: "term-1", output: "from the editor\n", truncated: false, exitCode: 0, signal: null, timedOut: false }))
      const out = yield* run({ command: "exit 7", timeout_ms: 5_000 }, context("/nowhere"), { client: { terminal } })
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "from the editor\n[exit code 0]")
      assert.deepStrictEqual(out.details, { output: "from the editor\n", exitCode: 0, truncated: false, terminalId: "term-1" })
      assert.deepStrictEqual(calls, [{ toolCallId: "t1", command: "exit 7", cwd: "/nowhere", timeoutMs: 5_000, outputByteLimit: 64 * 1024 }])
    }))

  it.live("a command the gate allowed as read-only gets git's code-running configuration off, there too", () =>
    Effect.gen(function*() {
      const { calls, terminal } = fake(Effect.succeed({ terminalId: "term-1", output: "", truncated: false, exitCode: 0, signal: null, timedOut: false }))
      yield* run({ command: "git status" }, context("/w", { readOnly: true }), { client: { terminal } })
      yield* run({ command: "git status" }, context("/w"), { client: { terminal } })
      const env = calls[0]!.env ?? {}
      assert.strictEqual(env["GIT_OPTIONAL_LOCKS"], "0")
      const keys = Object.entries(env).filter(([name]) => name.startsWith("GIT_CONFIG_KEY_")).map(([, key]) => key)
      assert.includeMembers(keys, ["core.fsmonitor", "core.hooksPath", "safe.bareRepository"])
      assert.isUndefined(calls[1]!.env)
    }))

  it.live("a timeout, a non-zero exit and a failure of the terminal", () =>
    Effect.gen(function*() {
      const timedOut = fake(Effect.succeed({ terminalId: "term-1", output: "partial", truncated: true, exitCode: null, signal: "SIGKILL", timedOut: true }))
      const a = yield* run({ command: "sleep 9" }, context("/w"), { client: { terminal: timedOut.terminal } })
      assert.isFalse(a.ok)
      assert.strictEqual(a.content, `[output truncated by the terminal]\npartial\n[killed by SIGKILL after timeout of ${DEFAULT_TIMEOUT_MS} ms]`)
      assert.deepStrictEqual(a.details, { output: "partial", exitCode: null, truncated: true, terminalId: "term-1" })

      const failed = fake(Effect.succeed({ terminalId: "term-1", output: "", truncated: false, exitCode: 2, signal: null, timedOut: false }))
      const b = yield* run({ command: "false" }, context("/w"), { client: { terminal: failed.terminal } })
      assert.isFalse(b.ok)
      assert.strictEqual(b.content, "(no output)\n[exit code 2]")

      const broken = fake(Effect.fail("terminal/create is not supported"))
      const c = yield* run({ command: "ls" }, context("/w"), { client: { terminal: broken.terminal } })
      assert.isFalse(c.ok)
      assert.strictEqual(c.content, "The client's terminal could not run the command: terminal/create is not supported")
    }))

  it.live("output a client did not bound is bounded here", () =>
    Effect.gen(function*() {
      const { terminal } = fake(Effect.succeed({ terminalId: "term-1", output: "x".repeat(1_000_000), truncated: false, exitCode: 0, signal: null, timedOut: false }))
      const out = yield* run({ command: "yes" }, context("/w"), { client: { terminal } })
      assert.isTrue(out.details?.truncated)
      assert.isBelow(out.content.length, 64 * 1024 + 200)
    }))
})
