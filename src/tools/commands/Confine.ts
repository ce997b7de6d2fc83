/**
 * The file system half of "may this command run without asking": every word
 * a read-only command opens (operands, option values, `< file`, `git -C`
 * directories, each match of a glob) must resolve inside the session's roots
 * the way the kernel resolves it; the program PATH finds must not come from
 * the workspace; a git command must pass the repository guard; and bash
 * must be there to run it (the words were read as bash reads them).
 *
 * A handful of file system calls per command, and two short git processes
 * for a git command.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import { analyze } from "../ReadOnlyCommands.ts"
import { BUILTINS } from "./Allowlist.ts"
import * as GitGuard from "./GitGuard.ts"
import { expand, inside, locate, resolvePhysical } from "./Paths.ts"
import { BASH } from "./Shell.ts"

interface Context {
  /** The shell's working directory. */
  readonly cwd: string
  /** Every directory the session may touch: the cwd and its additional directories. */
  readonly roots: ReadonlyArray<string>
  /** The environment the command will run with (its PATH finds the programs). */
  readonly env: Readonly<Record<string, string | undefined>>
}

type Verdict = GitGuard.Verdict

const refuse = (reason: string): Verdict => ({ ok: false, reason })
const OK: Verdict = { ok: true }

/** Whether `command` may run without asking in a session with these roots. */
export const check = Effect.fnUntraced(function*(command: string, context: Context) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const stages = analyze(command)
  if (stages === undefined) return refuse("not on the list of read-only commands")
  // The command is read as bash reads it; another shell reads some of it otherwise (`&>`, `[^…]`).
  if (!(yield* fs.exists(BASH).pipe(Effect.orElseSucceed(() => false)))) return refuse(`${BASH} is missing: another shell would run it`)
  const real = (p: string) => fs.realPath(p).pipe(Effect.orElseSucceed(() => p))
  const roots = yield* Effect.forEach(context.roots, real)
  const cwd = yield* real(context.cwd)
  const within = (p: string) => roots.some((root) => inside(path, root, p))

  /** Where a word lands from `base`, if inside. */
  const confined = Effect.fnUntraced(function*(base: string, text: string) {
    const landed = yield* resolvePhysical(base, text)
    return landed !== undefined && within(landed) ? landed : undefined
  })

  for (const stage of stages) {
    if (!BUILTINS.has(stage.program)) {
      const program = yield* locate(stage.program, context.env["PATH"] ?? "", cwd)
      if (program !== undefined && within(program)) return refuse(`${stage.program} would run from the workspace`)
    }
    for (const input of stage.inputs) {
      if (input.text !== "/dev/null" && (yield* confined(cwd, input.text)) === undefined) return refuse(`${input.text} is outside the workspace`)
    }
    let base = cwd
    for (const dir of stage.check.chdir) {
      const landed = yield* confined(base, dir.text)
      if (landed === undefined) return refuse(`${dir.text} is outside the workspace`)
      base = landed
    }
    for (const { word, file } of stage.check.paths) {
      if (!word.glob && (word.text === "-" || word.text === "/dev/null")) continue
      const words = word.glob ? yield* expand(base, word.pattern, word.text) : [word.text]
      if (words === undefined) return refuse(`cannot tell what ${word.text} expands to`)
      for (const text of words) {
        // A name the shell puts where an operand stood must not read as an option.
        if (word.glob && text.startsWith("-")) return refuse(`${word.text} expands to an option (${text})`)
        const landed = yield* confined(base, text)
        if (landed === undefined) return refuse(`${text} is outside the workspace`)
        if (file === true) {
          const info = yield* fs.stat(landed).pipe(Effect.option)
          if (info._tag === "Some" && info.value.type === "Directory") return refuse(`${text} is a directory`)
        }
      }
    }
    if (stage.check.git) {
      const verdict = yield* GitGuard.inspect(base, roots, context.env)
      if (!verdict.ok) return verdict
    }
  }
  return OK
})
