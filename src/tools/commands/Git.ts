/**
 * The git subcommands that only read, each with every option it may be given
 * (git 2.39: `git <sub> -h` and `git help <sub>`). Pure.
 *
 * Left out: anything that writes a file (`--output`), runs a program of its
 * own (`--ext-diff`, `--textconv`, `-O`/`--open-files-in-pager`,
 * `--show-signature`), reads a file named by an option (`-O<orderfile>`,
 * `blame --contents`/`-S`/`--ignore-revs-file`, `grep -f`, `ls-files -X`),
 * compares files outside the repository (`diff --no-index`) or recurses into
 * submodules (`--recurse-submodules`, `--submodule`). Every operand, revision
 * or path alike, is confined as a path: a revision resolves inside, and
 * `git diff /etc/a /etc/b` (which compares outside the repository) does not.
 *
 * That git runs none of the repository's own programs (hooks, fsmonitor,
 * diff and filter drivers) is the guard's job (GitGuard.ts), not this list's.
 */
import { type Operands, type PathWord, type Spec, firstText, given, none, parse, paths, texts, upTo } from "./Options.ts"
import type { Word } from "./Shell.ts"

const DIFF_SHORT = "pusRabwWDzM?C?B?X?U:S:G:l:"
const DIFF_LONG = [
  "patch", "no-patch", "raw", "patch-with-raw", "patch-with-stat", "stat?", "stat-width=", "stat-name-width=",
  "stat-count=", "stat-graph-width=", "compact-summary", "numstat", "shortstat", "dirstat?", "cumulative",
  "dirstat-by-file?", "summary", "name-only", "name-status", "check", "full-index", "binary", "abbrev?",
  "color?", "no-color", "color-moved?", "no-color-moved", "color-moved-ws=", "no-color-moved-ws", "word-diff?",
  "word-diff-regex=", "color-words?", "no-renames", "rename-empty", "no-rename-empty", "find-renames?", "find-copies?",
  "find-copies-harder", "break-rewrites?", "irreversible-delete", "diff-filter=", "relative?", "no-relative", "text",
  "ignore-cr-at-eol", "ignore-space-at-eol", "ignore-space-change", "ignore-all-space", "ignore-blank-lines",
  "ignore-matching-lines=", "indent-heuristic", "no-indent-heuristic", "minimal", "patience", "histogram",
  "diff-algorithm=", "anchored=", "unified=", "inter-hunk-context=", "function-context", "exit-code", "quiet",
  "no-ext-diff", "no-textconv", "ignore-submodules?", "src-prefix=", "dst-prefix=", "no-prefix", "line-prefix=",
  "ita-invisible-in-index", "ita-visible-in-index", "pickaxe-all", "pickaxe-regex", "find-object=", "skip-to=",
  "rotate-to=", "output-indicator-new=", "output-indicator-old=", "output-indicator-context="
]
const LOG_SHORT = "iEFPgcmtrn:"
const LOG_LONG = [
  "oneline", "graph", "decorate?", "no-decorate", "decorate-refs=", "decorate-refs-exclude=",
  "clear-decorations", "all", "branches?", "tags?", "remotes?", "glob=", "exclude=", "not", "max-count=", "skip=",
  "since=", "after=", "until=", "before=", "author=", "committer=", "grep=", "grep-reflog=", "all-match",
  "invert-grep", "regexp-ignore-case", "basic-regexp", "extended-regexp", "fixed-strings", "perl-regexp", "merges",
  "no-merges", "min-parents=", "max-parents=", "no-min-parents", "no-max-parents", "first-parent", "reverse",
  "follow", "format=", "pretty?", "abbrev-commit", "no-abbrev-commit", "date=", "relative-date", "left-right",
  "left-only", "right-only", "cherry-pick", "cherry-mark", "cherry", "boundary", "ancestry-path?",
  "simplify-by-decoration", "sparse", "full-history", "dense", "simplify-merges", "show-pulls", "topo-order",
  "date-order", "author-date-order", "source", "use-mailmap", "mailmap", "log-size", "parents",
  "children", "walk-reflogs", "reflog", "encoding=", "expand-tabs?", "no-expand-tabs", "notes?", "no-notes",
  "show-linear-break?", "no-walk?", "do-walk", "single-worktree", "cc", "combined-all-paths",
  "diff-merges=", "no-diff-merges"
]

const spec = (short: string, long: ReadonlyArray<string>, operands: Operands = paths, numbers = false): Spec => ({
  short,
  long: [...long, "help"],
  operands,
  numbers
})

/** Listing forms take patterns only after `--list`/`-l`; otherwise a name creates a branch or tag. */
const listing: Operands = (operands, parsed) => given(parsed, "-l", "--list") ? texts(operands, parsed) : none(operands, parsed)

const FILTER_REFS = ["contains=", "no-contains=", "merged=", "no-merged=", "points-at=", "sort=", "format=", "color?", "column?", "no-column", "ignore-case"]

export const SUBCOMMANDS: Readonly<Record<string, Spec>> = {
  status: spec("vsbzu?M?", [
    "verbose", "short", "branch", "show-stash", "ahead-behind", "no-ahead-behind", "porcelain?", "long", "null",
    "untracked-files?", "ignored?", "ignore-submodules?", "column?", "no-column", "renames", "no-renames", "find-renames?"
  ]),
  log: spec(DIFF_SHORT + LOG_SHORT, [...DIFF_LONG, ...LOG_LONG], paths, true),
  show: spec(DIFF_SHORT + LOG_SHORT, [...DIFF_LONG, ...LOG_LONG], paths, true),
  diff: spec(DIFF_SHORT + "123", [...DIFF_LONG, "cached", "staged", "merge-base", "base", "ours", "theirs"]),
  blame: spec("bfnpctlsewM?C?L:", [
    "incremental", "root", "show-stats", "progress", "no-progress", "score-debug", "show-name", "show-number",
    "porcelain", "line-porcelain", "show-email", "color-lines", "color-by-age", "minimal", "abbrev?",
    "date=", "encoding=", "first-parent", "reverse"
  ]),
  branch: spec("vrali", ["verbose", "remotes", "all", "list", "show-current", "abbrev?", "no-abbrev", ...FILTER_REFS], listing),
  tag: spec("lin?", ["list", ...FILTER_REFS], listing),
  "ls-files": spec("ztvfcdmoiskux:", [
    "cached", "deleted", "modified", "others", "ignored", "stage", "killed", "directory", "no-empty-directory",
    "empty-directory", "eol", "unmerged", "resolve-undo", "exclude=", "exclude-standard", "full-name", "error-unmatch",
    "with-tree=", "abbrev?", "debug", "deduplicate", "format="
  ]),
  "ls-tree": spec("drtzl", ["long", "name-only", "name-status", "object-only", "full-name", "full-tree", "format=", "abbrev?"]),
  "rev-parse": spec("q", [
    "verify", "quiet", "short?", "abbrev-ref?", "symbolic", "symbolic-full-name", "show-toplevel", "show-prefix",
    "show-cdup", "git-dir", "git-common-dir", "absolute-git-dir", "is-inside-work-tree", "is-inside-git-dir",
    "is-bare-repository", "is-shallow-repository", "show-superproject-working-tree", "all", "branches?", "tags?",
    "remotes?", "path-format=", "show-object-format?"
  ]),
  describe: spec("", ["contains", "debug", "all", "tags", "long", "first-parent", "abbrev?", "exact-match", "candidates=", "match=", "exclude=", "always"]),
  shortlog: spec("cnsew?", ["committer", "numbered", "summary", "email", "group=", "format?", "all", "no-merges", "merges", "since=", "until=", "after=", "before=", "author=", "first-parent"]),
  "merge-base": spec("a", ["all", "octopus", "independent", "is-ancestor", "fork-point"]),
  "rev-list": spec("n:", [
    "count", "all", "max-count=", "skip=", "since=", "until=", "after=", "before=", "author=", "committer=", "grep=",
    "no-merges", "merges", "first-parent", "reverse", "topo-order", "date-order", "left-right", "parents", "children",
    "abbrev-commit", "timestamp", "objects", "branches?", "tags?", "remotes?"
  ], paths, true),
  "for-each-ref": spec("sp", ["shell", "perl", "python", "tcl", "count=", "format=", "color?", "sort=", "points-at=", "merged=", "no-merged=", "contains=", "no-contains=", "ignore-case"]),
  "show-ref": spec("dqs?", ["tags", "heads", "verify", "head", "dereference", "hash?", "abbrev?", "quiet"]),
  "cat-file": spec("epts", [], upTo(2)),
  grep: spec("viwaIrEGFPnhHlLzocpWqe:C:B:A:m:", [
    "cached", "untracked", "exclude-standard", "invert-match", "ignore-case", "word-regexp", "text", "recursive",
    "no-recursive", "max-depth=", "extended-regexp", "basic-regexp", "fixed-strings", "perl-regexp", "line-number",
    "column", "full-name", "files-with-matches", "name-only", "files-without-match", "null", "only-matching", "count",
    "color?", "no-color", "break", "heading", "context=", "before-context=", "after-context=", "threads=",
    "show-function", "function-context", "and", "or", "not", "quiet", "all-match", "max-count=", "no-textconv"
  ], firstText("-e"), true),
  "check-ignore": spec("qvzn", ["quiet", "verbose", "non-matching", "no-index"]),
  "count-objects": spec("vH", ["verbose", "human-readable"], none),
  version: spec("", ["build-options"], none)
}

const LOG = SUBCOMMANDS.log!
const STASH_SHOW = spec(DIFF_SHORT, [...DIFF_LONG, "include-untracked", "only-untracked"], upTo(1))

/** Subcommands with their own sub-subcommands: only their listing forms. */
const nested = (sub: string, args: ReadonlyArray<Word>): ReturnType<typeof parse> => {
  const first = args[0]?.text
  const rest = args.slice(1)
  switch (sub) {
    case "stash":
      return first === "list" ? parse(LOG, rest) : first === "show" ? parse(STASH_SHOW, rest) : undefined
    case "reflog":
      // Any other word is a subcommand (`expire`, `delete`) or a ref `show` would take: ask.
      return first === "show" ? parse(LOG, rest) : first === undefined || first.startsWith("-") ? parse(LOG, args) : undefined
    case "remote":
      if (args.length === 0 || (args.length === 1 && (first === "-v" || first === "--verbose"))) return { parsed: { options: [], operands: [] }, paths: [] }
      return first === "get-url" ? parse(spec("", ["push", "all"], texts), rest) : undefined
    case "worktree":
      return first === "list" ? parse(spec("vz", ["porcelain", "verbose"], none), rest) : undefined
    default:
      return undefined
  }
}

/** `git [-C dir]… [--no-pager] [--no-optional-locks] [--literal-pathspecs] <sub> …` */
export const rule = (words: ReadonlyArray<Word>) => {
  const chdir: Array<Word> = []
  let i = 0
  for (; i < words.length; i++) {
    const a = words[i]!.text
    if (a === "--no-pager" || a === "-P" || a === "--no-optional-locks" || a === "--literal-pathspecs") continue
    if (a !== "-C") break
    const dir = words[++i]
    if (dir === undefined || dir.glob) return undefined
    chdir.push(dir)
  }
  const sub = words[i]
  if (sub === undefined || sub.glob) return undefined
  const args = words.slice(i + 1)
  const own = Object.hasOwn(SUBCOMMANDS, sub.text) ? SUBCOMMANDS[sub.text] : undefined
  const result = own !== undefined ? parse(own, args) : nested(sub.text, args)
  if (result === undefined) return undefined
  const found: ReadonlyArray<PathWord> = result.paths
  return { chdir, paths: found, git: true }
}
