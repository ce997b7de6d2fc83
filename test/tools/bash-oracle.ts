/**
 * Bash itself as the oracle for the shell lexer (src/tools/commands/Shell.ts).
 *
 * Many command lines run in one bash process, each in its own subshell, in a sandbox (bwrap:
 * read-only root, private /tmp, no network, its own PID namespace) when bwrap works here,
 * with `PATH` pointing nowhere, so every command is "not found" and bash's
 * `command_not_found_handle` prints what bash read: the argument vector, and which of the
 * descriptors 0–40 point to /dev/null after the command's redirections. Nothing a line names
 * runs, and without bwrap (no user namespaces) `noclobber` keeps a redirection the lexer
 * missed from overwriting a file.
 *
 * `transform` turns a line the lexer accepted into one bash can run harmlessly and whose
 * output shows every token: each redirection operator becomes a redirection of the same
 * descriptor to /dev/null followed by a marker word (`R%<op>%`), so the target stays in place
 * and bash reads it as the word after the marker; each pipe becomes the word `P%%`, so one
 * handler call prints the whole line. The descriptor digits stay where they were: whether
 * bash takes them as a descriptor or a word shows in the output. Only operator characters
 * are replaced, at the positions the lexer found them: a position it got wrong shows as a
 * difference, never hides one.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Operator, Token } from "../../src/tools/commands/Shell.ts"

export interface Invocation {
  /** Descriptors pointing to /dev/null, ascending. */
  readonly fds: ReadonlyArray<number>
  readonly argv: ReadonlyArray<string>
}

const HARNESS = String.raw`
out=$1 cases=$2
if [[ $3 == glob ]]; then set +f; else set -f; fi
set -C # should bash see a redirection the lexer did not, it creates at most an empty file
PATH=/nonexistent-skein-oracle
for n in {4..40}; do eval "exec $n>&-"; done
command_not_found_handle() {
  local fds= n -
  set +f
  cd /proc/$BASHPID/fd && for n in *; do [[ $n -ef /dev/null ]] && fds+=$n,; done
  printf 'I\0%s\0%s\0' "$fds" "$#" >>"$out"
  printf '%s\0' "$@" >>"$out"
  return 127
}
while IFS= read -r -d '' -u 3 line; do
  printf 'C\0' >>"$out"
  ( eval "$line" )
done 3<"$cases"
`

const sandboxArgs = (dir: string, cwd: string) => [
  "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", dir, dir, "--proc", "/proc", "--dev", "/dev",
  "--unshare-all", "--die-with-parent", "--chdir", cwd
]

let bwrap: boolean | undefined
/** Whether bwrap can make a sandbox here (it needs user namespaces). */
export const sandboxed = (dir: string): boolean => {
  bwrap ??= spawnSync("bwrap", [...sandboxArgs(dir, dir), "/bin/true"], { stdio: "ignore" }).status === 0
  return bwrap
}

/**
 * Runs `lines` (each a bash command line without NUL) in `cwd` and returns, per line, every
 * handler call it made. `glob`: filename expansion on (otherwise `set -f`).
 */
export const run = (dir: string, cwd: string, lines: ReadonlyArray<string>, glob = false): Array<Array<Invocation>> => {
  const work = mkdtempSync(join(dir, "oracle-"))
  try {
    const harness = join(work, "harness.sh")
    const cases = join(work, "cases")
    const out = join(work, "out")
    writeFileSync(harness, HARNESS)
    writeFileSync(cases, lines.map((line) => `${line}\0`).join(""))
    writeFileSync(out, "")
    const bash = ["/bin/bash", "--norc", "--noprofile", harness, out, cases, glob ? "glob" : "words"]
    const [file, args] = sandboxed(dir) ? ["bwrap", [...sandboxArgs(dir, cwd), ...bash]] as const : [bash[0]!, bash.slice(1)] as const
    const result = spawnSync(file, args, {
      cwd,
      input: "",
      env: { LC_ALL: "C.UTF-8", PATH: "/usr/bin:/bin", HOME: "/nonexistent-skein-oracle" },
      maxBuffer: 64 * 1024 * 1024
    })
    if (result.error !== undefined) throw result.error
    return parse(readFileSync(out, "utf8"), lines.length)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const parse = (output: string, count: number): Array<Array<Invocation>> => {
  const fields = output.split("\0")
  fields.pop() // after the last NUL
  const cases: Array<Array<Invocation>> = []
  for (let i = 0; i < fields.length;) {
    const tag = fields[i++]
    if (tag === "C") {
      cases.push([])
      continue
    }
    if (tag !== "I" || cases.length === 0) throw new Error(`unreadable oracle output at field ${i - 1}: ${JSON.stringify(tag)}`)
    const fds = fields[i++]!.split(",").filter((s) => s !== "").map(Number).sort((a, b) => a - b)
    const argc = Number(fields[i++])
    cases.at(-1)!.push({ fds, argv: fields.slice(i, i + argc) })
    i += argc
  }
  if (cases.length !== count) throw new Error(`the oracle ran ${cases.length} of ${count} lines`)
  return cases
}

/** The marker word that stands for an operator in a transformed line. */
export const marker = (op: Operator) => `R%${op}%`
export const PIPE = "P%%"

const family = (op: Operator): string => {
  switch (op) {
    case "<":
    case "<&":
    case "<>":
      return "<"
    case ">":
    case ">>":
    case ">|":
    case ">&":
      return ">"
    case "&>":
    case "&>>":
      return "&>"
    default: {
      const unhandled: never = op
      return unhandled
    }
  }
}

/** The line bash runs for `line`, given the tokens the lexer read from it. */
export const transform = (line: string, tokens: ReadonlyArray<Token>): string => {
  const edits: Array<{ start: number; end: number; text: string }> = []
  for (const token of tokens) {
    if (token._tag === "redirect") edits.push({ ...token.opSpan, text: `${family(token.op)}/dev/null '${marker(token.op)}' ` })
    else if (token._tag === "pipe") {
      // Newlines after a pipe continue the pipeline; after the marker word they would end the command.
      const after = /^(?:[ \t\n]|\\\n)*/.exec(line.slice(token.span.end))![0]
      edits.push({ start: token.span.start, end: token.span.end + after.length, text: ` '${PIPE}' ` })
    }
  }
  let out = line
  for (const edit of edits.reverse()) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end)
  return out
}

/** What the handler must print for a transformed line, if the lexer read it as bash does. */
export const expected = (tokens: ReadonlyArray<Token>): Invocation => {
  const argv: Array<string> = []
  const fds = new Set<number>()
  for (const token of tokens) {
    switch (token._tag) {
      case "word":
        argv.push(token.word.text)
        break
      case "pipe":
        argv.push(PIPE)
        break
      case "redirect": {
        argv.push(marker(token.op), token.target.text)
        const f = family(token.op)
        if (f === "&>") {
          fds.add(1)
          fds.add(2)
        } else fds.add(token.fd ?? (f === "<" ? 0 : 1))
        break
      }
      default: {
        const unhandled: never = token
        return unhandled
      }
    }
  }
  return { fds: [...fds].sort((a, b) => a - b), argv }
}
