/** A hook runs in the session's sandbox like every command: it writes in the workspace, not outside, and reads no secret place. */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Runner from "../../src/hooks/Runner.ts"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import * as Bwrap from "../support/Bwrap.ts"
import * as Visible from "../support/Visible.ts"

const dir = Visible.dir("skein-hook-it-")

Bwrap.describeWithBwrap("hooks in the sandbox", () => {
  it.live("a hook writes inside the workspace, and neither outside it nor reads Skein's home", () =>
    Effect.gen(function*() {
      const base = yield* dir
      const ws = join(base, "ws")
      const outside = join(base, "outside")
      const home = join(base, "home")
      for (const d of [ws, outside, home, join(home, ".skein")]) mkdirSync(d)
      writeFileSync(join(home, ".skein", "config.json"), "{\"secret\": 1}")
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(home, ".skein"), userHome: home })
      const sandbox = yield* manager.session({ cwd: ws, roots: [ws] })
      const command = `touch inside; touch ${outside}/escaped 2>/dev/null; cat ${home}/.skein/config.json 2>/dev/null | wc -c >&2; exit 2`
      const raw = yield* Runner.run({ command, timeoutMs: 20_000, input: {}, cwd: ws, sandbox })
      assert.strictEqual(raw._tag, "exited")
      assert.isTrue(existsSync(join(ws, "inside")))
      assert.isFalse(existsSync(join(outside, "escaped")))
      if (raw._tag === "exited") assert.strictEqual(raw.stderr.trim(), "0")
    }))
})
