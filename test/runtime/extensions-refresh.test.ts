/**
 * A session's skills and commands are read again when a turn ends (at most once a second, by
 * the Clock), never when a prompt comes: a skill the model wrote during a turn is in the next
 * prompt's catalog, and a prompt starts no read of its own. `Latest` is the cache that does it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import * as Exit from "effect/Exit"
import type { ModelRequest } from "../../src/providers/Provider.ts"
import * as Latest from "../../src/runtime/Latest.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { byPrompt, text, withPieces } from "../support/Sessions.ts"

const SKILL = "---\ndescription: Writes release notes from the changelog\n---\nRead CHANGELOG.md first.\n"

describe("skills and commands, read again between turns", () => {
  it.effect("a skill the model writes during a turn is in the next prompt's catalog", () => {
    const systems: Array<string> = []
    const provider = byPrompt({
      "write a skill": [[{ tool: "write", args: { path: ".claude/skills/release-notes/SKILL.md", content: SKILL }, id: "w1" }], [{ text: "Written." }]],
      "and now": [[{ text: "Ok." }]]
    }, (request: ModelRequest) => void systems.push(request.system))
    return withPieces({ provider, toolkit: Toolkit.builtin() }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, mode: "acceptEdits" })
        // The read the session started with is a while ago by the time the first turn ends.
        yield* TestClock.adjust(2_000)
        assert.deepStrictEqual(yield* session.prompt(text("write a skill")), { stopReason: "end_turn" })
        assert.notInclude(systems[0]!, "release-notes")
        assert.deepStrictEqual(yield* session.prompt(text("and now")), { stopReason: "end_turn" })
        assert.include(systems.at(-1)!, "release-notes")
      }))
  })

  it.effect("Latest: `known` starts no read and waits for one running; `refresh` reads at most once per interval", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      let reads = 0
      let value = "a"
      const latest = Latest.make(Effect.sync(() => (reads++, value)), { everyMs: 1_000, scope })
      assert.strictEqual(yield* latest.known, "a")
      assert.strictEqual(reads, 1)
      value = "b"
      assert.strictEqual(yield* latest.known, "a")
      yield* latest.refresh // too soon after the first read
      assert.strictEqual(yield* latest.known, "a")
      assert.strictEqual(reads, 1)
      yield* TestClock.adjust(1_000)
      yield* latest.refresh
      // Started in the background, and waited for by `known`.
      assert.strictEqual(yield* latest.known, "b")
      assert.strictEqual(reads, 2)
      value = "c"
      yield* latest.refresh // the last read is recent again
      assert.strictEqual(yield* latest.known, "b")
      assert.strictEqual(reads, 2)
      assert.strictEqual(yield* latest.fresh, "c")
      assert.strictEqual(reads, 3)
      yield* Scope.close(scope, Exit.void)
    }))
})
