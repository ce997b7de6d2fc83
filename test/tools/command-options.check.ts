/**
 * The option tables against the programs installed here. getopt and git take any unambiguous
 * prefix of a long option, so a listed name that is not a real option's full name could be a
 * prefix of one we never audited (`--out` of `--output`): every listed name must be, exactly, an
 * option the installed program documents in its `--help` or manual page.
 *
 * An explicit check, not part of `npm test` (it runs `man` for every program and git
 * subcommand): `npm run check:commands`, after changing a table or upgrading the programs.
 * The shape of the tables is checked on every run by command-options.test.ts.
 */
import { describe, expect, it } from "vitest"
import { spawnSync } from "node:child_process"
import { SED, SPECS, STRINGS } from "../../src/tools/commands/Allowlist.ts"
import { SUBCOMMANDS } from "../../src/tools/commands/Git.ts"
import type { Spec } from "../../src/tools/commands/Options.ts"

const text = (command: string, ...args: Array<string>) => {
  const run = spawnSync(command, args, { encoding: "utf8", env: { ...process.env, MANPAGER: "cat", MANWIDTH: "200", GIT_PAGER: "cat" } })
  return `${run.stdout ?? ""}${run.stderr ?? ""}`
}
const installed = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0
const hasMan = installed("man")

const longNames = (spec: Spec) => (spec.long ?? []).map((l) => l.replace(/(=@|=|\?)$/, ""))
/** `--name`, or `--[no-]name` for both it and `--no-name`. */
const documented = (doc: string, name: string) => {
  const exact = (n: string) => new RegExp(`--${n}(?![a-z0-9-])`).test(doc)
  const bare = name.startsWith("no-") ? name.slice(3) : name
  return exact(name) || new RegExp(`--\\[no-\\]${bare}(?![a-z0-9-])`).test(doc)
}

/** Not GNU: Debian's which, and bash's builtins (no `--help`). */
const SHELL_OWN = new Set(["which", "pwd", "type"])

describe("the option tables name real, full options", () => {
  const programs: Array<[string, Spec]> = [...Object.entries(SPECS).filter(([name]) => !SHELL_OWN.has(name)), ["strings", STRINGS], ["sed", SED]]
  for (const [name, spec] of programs) {
    it.skipIf(!installed(name))(name, () => {
      const doc = text(name, "--help") + (hasMan ? text("man", name) : "")
      expect(longNames(spec).filter((l) => !documented(doc, l))).toEqual([])
    })
  }
  for (const [sub, spec] of Object.entries(SUBCOMMANDS)) {
    it.skipIf(!installed("git"))(`git ${sub}`, () => {
      // `git show` takes `git log`'s options, documented there.
      const pages = sub === "show" ? ["git-show", "git-log"] : [`git-${sub}`]
      const doc = text("git", sub, "-h") + (hasMan ? pages.map((page) => text("man", page)).join("") : "")
      expect(longNames(spec).filter((l) => l !== "help" && !documented(doc, l))).toEqual([])
    })
  }
})
