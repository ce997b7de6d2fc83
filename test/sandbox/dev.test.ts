/**
 * The session's mount namespace and its `/dev` (ADR 54), on the real bubblewrap: prepared once
 * per session, taken by each command with one bind, never the machine's, held by a descriptor
 * of this process for as long as the session lasts and by nothing after it.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { mkdirSync, readdirSync, readlinkSync } from "node:fs"
import { join } from "node:path"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import * as Bwrap from "../support/Bwrap.ts"
import * as Visible from "../support/Visible.ts"

/** The mount namespaces this process holds descriptors of (`mnt:[inode]`). */
const heldMountNamespaces = (): Set<string> => {
  const found = new Set<string>()
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      if (target.startsWith("mnt:[")) found.add(target)
    } catch {
      // Closed since the listing (the listing's own descriptor among them).
    }
  }
  return found
}

/** The processes of the machine in mount namespace `ns` (`mnt:[inode]`). */
const processesIn = (ns: string): Array<number> =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/ns/mnt`) === ns ? [Number(pid)] : []
    } catch {
      return []
    }
  })

const world = Effect.gen(function*() {
  const base = yield* Visible.dir("skein-sandbox-dev-")
  const ws = join(base, "ws")
  const home = join(base, "home")
  mkdirSync(ws, { recursive: true })
  mkdirSync(join(home, ".skein"), { recursive: true })
  return { ws, home, skeinHome: join(home, ".skein") }
})

Bwrap.describeWithBwrap("sandbox: the session's /dev", () => {
  it.live("a command has the six devices, pseudo-terminals and a writable /dev/shm; no block device, no other device; /dev's entries cannot be replaced", () =>
    Effect.gen(function*() {
      const w = yield* world
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: w.skeinHome, userHome: w.home })
      const sandbox = yield* manager.session({ cwd: w.ws, roots: [w.ws] })
      const ran = yield* Bwrap.run(sandbox, [
        "echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c",
        // `test` looks at each entry itself (a bound device's directory entry says "file").
        "for f in $(find /dev); do [ -b \"$f\" ] && echo \"$f\"; done | wc -l",
        "for f in $(find /dev); do [ -c \"$f\" ] && [ ! -L \"$f\" ] && echo \"$f\"; done | sort | tr '\\n' ' '; echo",
        "script -qc tty /dev/null",
        "echo shared > /dev/shm/x && cat /dev/shm/x",
        "ln -sf /tmp/x /dev/stdout 2>/dev/null && echo replaced || echo kept",
        "touch /dev/sda 2>/dev/null && echo planted || echo refused"
      ].join("; "), { cwd: w.ws })
      assert.strictEqual(ran.code, 0, ran.output)
      const lines = ran.output.split("\n").map((line) => line.trim())
      assert.deepStrictEqual(lines.slice(0, 3), ["4", "4", "0"], ran.output)
      const devices = lines[3]!.split(" ").filter((d) => d !== "" && !d.startsWith("/dev/pts/"))
      assert.deepStrictEqual(devices, ["/dev/full", "/dev/null", "/dev/random", "/dev/tty", "/dev/urandom", "/dev/zero"], ran.output)
      assert.match(lines[4]!, /^\/dev\/pts\/\d+$/, ran.output)
      assert.deepStrictEqual(lines.slice(5, 8), ["shared", "kept", "refused"], ran.output)
    }))

  it.live("one /dev per session: the commands of a session share it, another session has its own", () =>
    Effect.gen(function*() {
      const w = yield* world
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: w.skeinHome, userHome: w.home })
      const one = yield* manager.session({ cwd: w.ws, roots: [w.ws] })
      const other = yield* manager.session({ cwd: w.ws, roots: [w.ws] })
      const where = "stat -c '%d %i' /dev /dev/pts | tr '\\n' ' '"
      const first = yield* Bwrap.run(one, where, { cwd: w.ws })
      const second = yield* Bwrap.run(one, where, { cwd: w.ws })
      const elsewhere = yield* Bwrap.run(other, where, { cwd: w.ws })
      assert.strictEqual(first.code, 0, first.output)
      assert.strictEqual(first.output, second.output)
      assert.notStrictEqual(first.output, elsewhere.output)
    }))

  for (const [what, allow] of [["a plain session", []], ["a session whose forwarder to the proxy lives in it", ["127.0.0.2"]]] as const) {
    it.live(`${what}: its mount namespace is held by a descriptor while it lasts; with it go the descriptor and every process in it`, () =>
      Effect.gen(function*() {
        const w = yield* world
        const manager = yield* Sandbox.make({ ...Settings.DEFAULT, allow }, { skeinHome: w.skeinHome, userHome: w.home })
        // The probe's throwaway session first, so that what is new below is this session's.
        yield* manager.availability
        const before = heldMountNamespaces()
        const scope = yield* Scope.make()
        const sandbox = yield* manager.session({ cwd: w.ws, roots: [w.ws] }).pipe(Scope.provide(scope))
        const ran = yield* Bwrap.run(sandbox, "true", { cwd: w.ws })
        assert.strictEqual(ran.code, 0, ran.output)
        const added = [...heldMountNamespaces()].filter((ns) => !before.has(ns))
        assert.strictEqual(added.length, 1, `mount namespaces held: ${added.join(", ")}`)
        assert.strictEqual(processesIn(added[0]!).length, allow.length === 0 ? 0 : 1)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(heldMountNamespaces().has(added[0]!))
        assert.deepStrictEqual(processesIn(added[0]!), [])
      }))
  }
})
