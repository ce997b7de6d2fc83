/**
 * The shape of the option tables, on every run: each long name written as getopt spells it, each
 * option listed once. Whether each name is a real option of the installed program is the audit
 * in command-options.check.ts (`npm run check:commands`).
 */
import { describe, expect, it } from "vitest"
import { SED, SPECS, STRINGS } from "../../src/tools/commands/Allowlist.ts"
import { SUBCOMMANDS } from "../../src/tools/commands/Git.ts"
import type { Spec } from "../../src/tools/commands/Options.ts"

const tables: Array<[string, Spec]> = [
  ...Object.entries(SPECS),
  ["strings", STRINGS],
  ["sed", SED],
  ...Object.entries(SUBCOMMANDS).map(([sub, spec]): [string, Spec] => [`git ${sub}`, spec])
]

/** A full name without dashes (`lines`, `no-color`), and what it takes: `=` text, `=@` a path, `?` an optional value. */
const LONG = /^[a-z0-9][a-z0-9-]*[a-z0-9](=@|=|\?)?$/
/** getopt's option string: each letter or digit, with `:`, `@` or `?` after it when it takes a value. */
const SHORT = /^([A-Za-z0-9][:@?]?)*$/

const repeated = (names: ReadonlyArray<string>) => names.filter((name, i) => names.indexOf(name) !== i)

describe("the option tables", () => {
  it("list every table this check reads", () => {
    expect(tables.length).toBeGreaterThan(40)
    expect(tables.map(([name]) => name)).toEqual(expect.arrayContaining(["grep", "sed", "strings", "git log", "git show"]))
  })

  for (const [name, spec] of tables) {
    it(name, () => {
      const long = spec.long ?? []
      expect(long.filter((l) => !LONG.test(l)), "long names as getopt spells them").toEqual([])
      expect(repeated(long.map((l) => l.replace(/(=@|=|\?)$/, ""))), "long names listed twice").toEqual([])
      const short = spec.short ?? ""
      expect(SHORT.test(short), `option string ${JSON.stringify(short)}`).toBe(true)
      expect(repeated([...short.replace(/[:@?]/g, "")]), "short options listed twice").toEqual([])
    })
  }
})
