/**
 * Which shell commands may run without asking, and what an "always" answer
 * for a command covers. Pure; used by the permission gate.
 *
 * Conservative by construction: a small shell lexer accepts only plain words,
 * quotes, pipes and harmless redirections (`2>&1`, `>/dev/null`, `< file`).
 * Anything else it does not fully understand (`;`, `&&`, `||`, `&`, `$…`,
 * backticks, subshells, braces, heredocs, comments, newlines, writes to a
 * file) makes the command "not read-only", so the user is asked. A false
 * "no" costs a question; a false "yes" costs the user's files.
 */

interface Word {
  readonly text: string
  /** An unquoted `*`, `?` or `[`: the shell may expand it into file names (even `-delete`). */
  readonly glob: boolean
}
type Segment = ReadonlyArray<Word>

const PLAIN_STOP = new Set([" ", "\t", "\n", "\r", ";", "&", "|", "<", ">", "(", ")", "$", "`", "'", "\"", "\\", "{", "}", "#"])

/**
 * Splits a command into the plain words of each pipeline stage, or undefined
 * when it uses any syntax this module does not analyse.
 */
export const parsePipeline = (command: string): ReadonlyArray<Segment> | undefined => {
  const s = command.trim()
  const segments: Array<Segment> = []
  let words: Array<Word> = []
  let text: string | undefined
  let glob = false
  const finish = () => {
    if (text !== undefined) words.push({ text, glob })
    text = undefined
    glob = false
  }
  /** Reads a redirection target at `i` (after spaces); returns [target, next index]. */
  const target = (from: number): [string, number] | undefined => {
    let i = from
    while (s[i] === " " || s[i] === "\t") i++
    const start = i
    while (i < s.length && !PLAIN_STOP.has(s[i]!)) i++
    return i > start ? [s.slice(start, i), i] : undefined
  }
  /** `&1`, `&2`, `&-`: duplicating or closing a descriptor writes nothing. */
  const dup = (from: number): number | undefined => {
    let i = from
    if (s[i] === "-") return i + 1
    while (i < s.length && s[i]! >= "0" && s[i]! <= "9") i++
    return i > from ? i : undefined
  }
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c === " " || c === "\t") {
      finish()
    } else if (c === "'") {
      const end = s.indexOf("'", i + 1)
      if (end < 0) return undefined
      text = (text ?? "") + s.slice(i + 1, end)
      i = end
    } else if (c === "\"") {
      let k = i + 1
      let out = ""
      for (;; k++) {
        if (k >= s.length) return undefined
        const d = s[k]!
        if (d === "\"") break
        if (d === "$" || d === "`") return undefined
        if (d === "\\") {
          const n = s[k + 1]
          if (n === undefined || n === "\n") return undefined
          if (n === "\"" || n === "\\" || n === "$" || n === "`") {
            out += n
            k++
            continue
          }
        }
        out += d
      }
      text = (text ?? "") + out
      i = k
    } else if (c === "\\") {
      const n = s[i + 1]
      if (n === undefined || n === "\n" || n === "\r") return undefined
      text = (text ?? "") + n
      i++
    } else if (c === "|") {
      if (s[i + 1] === "|" || s[i + 1] === "&") return undefined
      finish()
      if (words.length === 0) return undefined
      segments.push(words)
      words = []
    } else if (c === ">" || c === "<" || (c === "&" && s[i + 1] === ">")) {
      // A word of digits glued to the operator is a descriptor number, not an argument.
      if (text !== undefined && /^\d+$/.test(text) && !glob) text = undefined
      finish()
      let k = i + 1
      if (c === "&") {
        k++ // `&>` / `&>>`: both streams to a file
        if (s[k] === ">") k++
      } else if (c === ">") {
        if (s[k] === ">") k++
        else if (s[k] === "|") return undefined
        if (s[k] === "&") {
          const next = dup(k + 1)
          if (next === undefined) return undefined
          i = next - 1
          continue
        }
      } else {
        if (s[k] === "<" || s[k] === "(" || s[k] === ">") return undefined // heredoc, process substitution, read-write
        if (s[k] === "&") {
          const next = dup(k + 1)
          if (next === undefined) return undefined
          i = next - 1
          continue
        }
      }
      const t = target(k)
      if (t === undefined) return undefined
      if (c !== "<" && t[0] !== "/dev/null") return undefined // writes a file
      i = t[1] - 1
    } else if (c === "\n" || c === "\r" || c === ";" || c === "&" || c === "(" || c === ")" || c === "$" || c === "`" || c === "{" || c === "}") {
      return undefined
    } else if (c === "#" && text === undefined) {
      return undefined // a comment hides the rest from review
    } else {
      if (c === "*" || c === "?" || c === "[") glob = true
      text = (text ?? "") + c
    }
  }
  finish()
  if (words.length === 0) return segments.length === 0 ? [] : undefined
  segments.push(words)
  return segments
}

// ---------------------------------------------------------------------------
// The allowlist
// ---------------------------------------------------------------------------

type Check = (args: ReadonlyArray<string>) => boolean

interface Rule {
  readonly check: Check
  /** False when some option writes or runs things: then no argument may be a glob. */
  readonly globSafe: boolean
}

const isFlag = (a: string) => a.startsWith("-") && a !== "-"
const isShortCluster = (a: string) => a.startsWith("-") && !a.startsWith("--") && a.length > 1
/**
 * Some argument names one of `longs`, or is a short cluster holding one of
 * `shorts`. GNU getopt and git accept any unambiguous prefix of a long option
 * (`sort --out=f` is `--output=f`), so a prefix of a listed option counts too.
 */
const hasOption = (args: ReadonlyArray<string>, shorts: string, longs: ReadonlyArray<string>): boolean =>
  args.some((a) => {
    if (isShortCluster(a)) return [...a.slice(1)].some((ch) => shorts.includes(ch))
    if (!a.startsWith("--")) return false
    const name = a.split("=")[0]!
    return name.length > 2 && longs.some((l) => l.startsWith(name))
  })
const positionals = (args: ReadonlyArray<string>, valueFlags: ReadonlyArray<string> = []): number => {
  let n = 0
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (valueFlags.includes(a)) i++
    else if (!isFlag(a)) n++
  }
  return n
}

const always: Rule = { check: () => true, globSafe: true }
const guarded = (check: Check): Rule => ({ check, globSafe: false })

const FIND_FORBIDDEN = new Set(["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls"])

/** `sed` only as a printer: no in-place edit, no script file, scripts of p/d/q/= and plain s///. */
const SED_SAFE_SCRIPT = /^(?:(?:\d+|\$)(?:,(?:\d+|\$|[+~]\d+))?!?[pdq=]?|s\/(?:[^/\\]|\\.)*\/(?:[^/\\]|\\.)*\/[gpiI0-9]*)$/
const sedCheck: Check = (args) => {
  let script: string | undefined
  const scripts: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === "-e" || a === "--expression") {
      const v = args[++i]
      if (v === undefined) return false
      scripts.push(v)
    } else if (a.startsWith("--expression=")) scripts.push(a.slice("--expression=".length))
    else if (isFlag(a)) {
      if (!/^(?:-[nEsruz]+|--quiet|--silent|--regexp-extended|--separate|--unbuffered|--null-data|--posix|--debug)$/.test(a)) return false
    } else if (scripts.length === 0 && script === undefined) script = a
  }
  if (script !== undefined) scripts.push(script)
  return scripts.length > 0 && scripts.every((x) => !x.includes("\n") && SED_SAFE_SCRIPT.test(x.trim()))
}

const gitCheck: Check = (all) => {
  let i = 0
  while (i < all.length) {
    const a = all[i]!
    if (a === "--no-pager" || a === "-P" || a === "--no-optional-locks") i++
    else if (a === "-C") i += 2
    else break
  }
  const sub = all[i]
  const args = all.slice(i + 1)
  if (sub === undefined) return false
  const noOutputFile = !hasOption(args, "", ["--output", "--ext-diff"])
  switch (sub) {
    case "status": case "log": case "show": case "diff": case "rev-parse": case "ls-files": case "ls-tree":
    case "blame": case "shortlog": case "describe": case "cat-file": case "rev-list": case "merge-base":
    case "name-rev": case "for-each-ref": case "show-ref": case "count-objects": case "whatchanged":
    case "diff-tree": case "diff-files": case "diff-index": case "check-ignore": case "version":
      return noOutputFile
    case "grep":
      return noOutputFile && !hasOption(args, "O", ["--open-files-in-pager"])
    case "branch": {
      if (hasOption(args, "dDmMcCfu", ["--delete", "--move", "--copy", "--force", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track", "--no-track", "--create-reflog", "--recurse-submodules"])) return false
      const listing = args.some((a) => a === "--list" || a === "-l")
      return listing || positionals(args, ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"]) === 0
    }
    case "tag": {
      if (hasOption(args, "dafsumFe", ["--delete", "--annotate", "--force", "--sign", "--local-user", "--message", "--file", "--edit"])) return false
      return args.some((a) => a === "--list" || a === "-l") || positionals(args, ["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"]) === 0
    }
    case "remote":
      return args.length === 0 || (args.length === 1 && (args[0] === "-v" || args[0] === "--verbose")) || args[0] === "get-url"
    case "config":
      return args.some((a) => ["--get", "--get-all", "--get-regexp", "--list", "-l"].includes(a)) &&
        !hasOption(args, "e", ["--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit"])
    case "stash":
      return args[0] === "list" || args[0] === "show"
    case "reflog":
      return args.length === 0 || args[0] === "show" || args[0] === "exists" || isFlag(args[0]!)
    case "worktree":
      return args[0] === "list"
    default:
      return false
  }
}

const RULES: Record<string, Rule> = {
  ...Object.fromEntries(
    [
      "ls", "pwd", "cat", "head", "tail", "wc", "echo", "printf", "which", "whereis", "type", "stat", "du", "df",
      "basename", "dirname", "realpath", "readlink", "uname", "whoami", "id", "groups", "nl", "cut", "tr", "comm",
      "column", "grep", "egrep", "fgrep", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum",
      "strings", "od", "hexdump", "printenv", "true", "false", "jq", "tac", "rev", "fold", "paste", "seq", "test",
      "arch", "nproc", "uptime", "locale", "tty"
    ].map((name) => [name, always])
  ),
  tree: guarded((args) => !hasOption(args, "o", ["--output"])),
  file: guarded((args) => !hasOption(args, "C", ["--compile"])),
  date: guarded((args) => !hasOption(args, "s", ["--set"]) && args.every((a) => isFlag(a) || a.startsWith("+"))),
  hostname: guarded((args) => args.every(isFlag) && !hasOption(args, "bF", ["--boot", "--file"])),
  sort: guarded((args) => !hasOption(args, "o", ["--output", "--compress-program"])),
  uniq: guarded((args) => positionals(args, ["-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"]) <= 1),
  xxd: guarded((args) => positionals(args, ["-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name"]) <= 1),
  find: guarded((args) => !args.some((a) => FIND_FORBIDDEN.has(a) || a.startsWith("-fprint"))),
  fd: guarded((args) => !hasOption(args, "xX", ["--exec", "--exec-batch"])),
  fdfind: guarded((args) => !hasOption(args, "xX", ["--exec", "--exec-batch"])),
  rg: guarded((args) => !hasOption(args, "", ["--pre"])),
  sed: guarded(sedCheck),
  git: guarded(gitCheck)
}

const PROGRAM = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/

const segmentReadOnly = (segment: Segment): boolean => {
  const [program, ...rest] = segment
  if (program === undefined || program.glob || !PROGRAM.test(program.text)) return false
  const rule = Object.hasOwn(RULES, program.text) ? RULES[program.text] : undefined
  if (rule === undefined) return false
  if (!rule.globSafe && rest.some((w) => w.glob)) return false
  return rule.check(rest.map((w) => w.text))
}

/**
 * True only for a command that cannot change anything: a single command, or a
 * pipeline of them, each on the allowlist with arguments that neither write
 * nor run other programs, and no redirection except to /dev/null.
 */
export const isReadOnlyCommand = (command: string): boolean => {
  const segments = parsePipeline(command)
  return segments !== undefined && segments.length > 0 && segments.every(segmentReadOnly)
}

// ---------------------------------------------------------------------------
// Command prefixes (what an "always" answer for bash covers)
// ---------------------------------------------------------------------------

/** Programs whose first argument names what they do (`npm test`, `git commit`, `npx vitest`). */
const MULTI_LEVEL = new Set([
  "npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "git", "cargo", "go", "docker", "podman", "kubectl", "gh",
  "deno", "uv", "poetry", "pip", "pip3", "brew", "apt", "apt-get", "dotnet", "mvn", "gradle", "make", "rustup",
  "terraform", "helm", "systemctl", "composer", "bundle", "mix", "swift", "zig", "just", "nx", "turbo"
])
/** Subcommands that only run something named next (`npm run build`, `uv run pytest`). */
const RUNNERS = new Set(["run", "run-script", "exec", "dlx", "x"])
const SUBCOMMAND = /^[@A-Za-z0-9][\w:.@/+-]*$/

/**
 * The prefix an "always allow" covers: the program, plus its subcommand for
 * well-known multi-level tools (and the script for `npm run …`).
 */
export const commandPrefix = (command: string): string => {
  const line = command.trim().split("\n")[0] ?? ""
  const words = line.split(/[ \t]+/)
  const first = words[0] ?? ""
  const program = /^[^;&|<>()$`'"\\]+/.exec(first)?.[0]
  if (program === undefined || program !== first) return line.slice(0, 80)
  const name = program.slice(program.lastIndexOf("/") + 1)
  if (!MULTI_LEVEL.has(name)) return program
  const sub = words[1]
  if (sub === undefined || !SUBCOMMAND.test(sub)) return program
  const script = words[2]
  if (RUNNERS.has(sub) && script !== undefined && SUBCOMMAND.test(script)) return `${program} ${sub} ${script}`
  return `${program} ${sub}`
}

/**
 * Whether `command` is covered by a remembered prefix: it starts with the
 * prefix's words and is otherwise a simple command (no `;`, `&&`, `$(…)`,
 * redirection into a file), piped only into read-only commands.
 */
export const matchesCommandPrefix = (command: string, prefix: string): boolean => {
  const segments = parsePipeline(command)
  const want = prefix.trim().split(/[ \t]+/)
  if (segments === undefined || segments.length === 0 || want.length === 0 || want[0] === "") return false
  const [first, ...rest] = segments
  const words = first!.map((w) => w.text)
  return want.every((w, i) => words[i] === w) && rest.every(segmentReadOnly)
}
