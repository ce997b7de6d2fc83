/**
 * The commands that may run without asking, each with every option it may be
 * given (audited against GNU coreutils 9.1, grep 3.8, diffutils 3.8, findutils
 * 4.9, sed 4.9, util-linux 2.38, binutils 2.40, file 5.44, jq 1.6, xxd
 * 2022-01-14 and git 2.39). Pure.
 *
 * Left out on purpose: options that write (`sort -o`, `tree -o`, `xxd` with an
 * output file, `sed -i`, `date -s`), run programs (`find -exec`, `sort
 * --compress-program`, `diff -l`, `file -z`), read files named elsewhere
 * (`wc --files0-from`, `md5sum -c`, `file -f`, `jq -f`/`--rawfile`/`-L`,
 * `strings @file`), or follow symlinks out of a tree (`grep -R`, `find -L`,
 * `du -L`, `ls -L`, `diff -r`). Programs whose installed version could not be
 * audited here (`rg`, `fd`, `tree`) are not listed: they ask.
 */
import * as Git from "./Git.ts"
import { type Operands, type PathWord, type Spec, firstText, none, parse, paths, texts, upTo } from "./Options.ts"
import type { Word } from "./Shell.ts"

/** What one stage needs checked before it may run. */
export interface Check {
  /** Directories the command changes to, in order, before it resolves its paths (`git -C`). */
  readonly chdir: ReadonlyArray<Word>
  readonly paths: ReadonlyArray<PathWord>
  /** A git command: it runs with git's code-running configuration disabled, and only in a clean repository. */
  readonly git: boolean
}

type Rule = (words: ReadonlyArray<Word>) => Check | undefined

const checked = (result: { readonly paths: ReadonlyArray<PathWord> } | undefined): Check | undefined =>
  result === undefined ? undefined : { chdir: [], paths: result.paths, git: false }

/** GNU and util-linux programs all take `--help` and `--version`. */
const gnu = (spec: Spec): Spec => ({ ...spec, long: [...(spec.long ?? []), "help", "version"] })

/** Builtins and programs whose words are never opened as files (a glob is still confined). */
const anyText: Rule = (words) => checked({ paths: texts(words, { options: [], operands: words }) ?? [] })

// ---------------------------------------------------------------------------
// Programs with their own syntax
// ---------------------------------------------------------------------------

/** `sed` only as a printer: scripts of p/d/q/= and plain s/// (no w, e, r, R, W or flags beyond g, p, i, I, N). */
const SED_SAFE_SCRIPT = /^(?:(?:\d+|\$)(?:,(?:\d+|\$|[+~]\d+))?!?[pdq=]?|s\/(?:[^/\\]|\\.)*\/(?:[^/\\]|\\.)*\/[gpiI0-9]*)$/
const sedScript = (script: string) => !script.includes("\n") && SED_SAFE_SCRIPT.test(script.trim())
export const SED: Spec = {
  short: "nErsuze:",
  long: ["quiet", "silent", "regexp-extended", "separate", "unbuffered", "null-data", "posix", "debug", "expression=", "help", "version"],
  operands: firstText("-e", "--expression")
}
const sed: Rule = (words) => {
  const result = parse(SED, words)
  if (result === undefined) return undefined
  const scripts = result.parsed.options.filter((o) => o.value !== undefined).map((o) => o.value!.text)
  if (scripts.length === 0) {
    const first = result.parsed.operands[0]
    if (first === undefined) return undefined
    scripts.push(first.text)
  }
  return scripts.every(sedScript) ? checked(result) : undefined
}

/** `date` prints; an operand that is not `+FORMAT` would set the clock. */
const DATE: Spec = {
  short: "Rud:r@I?",
  long: ["date=", "debug", "iso-8601?", "resolution", "rfc-email", "rfc-3339=", "reference=@", "utc", "universal", "help", "version"],
  operands: (operands) => operands.length <= 1 && operands.every((w) => w.text.startsWith("+") && !w.glob) ? [] : undefined
}

/**
 * `jq FILTER [FILE…]`. jq reads its options itself: exact long names, short
 * letters in clusters, `--arg`/`--argjson` with two values. A filter that
 * imports or includes a module reads files from jq's search path: asked.
 */
const JQ_FLAGS = new Set([..."nrjacCMSesRhV"])
const JQ_LONG = new Set([
  "null-input", "raw-output", "join-output", "ascii-output", "compact-output", "color-output", "monochrome-output",
  "sort-keys", "exit-status", "raw-input", "slurp", "tab", "seq", "stream", "unbuffered", "help", "version"
])
const jq: Rule = (words) => {
  let filter: Word | undefined
  const files: Array<PathWord> = []
  let done = false
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    const a = word.text
    const option = !done && a.length > 1 && a.startsWith("-") && (a[1] === "-" || /[A-Za-z]/.test(a[1]!))
    if (!option) {
      if (filter === undefined) {
        if (word.glob) return undefined
        filter = word
      } else files.push({ word })
      continue
    }
    if (a === "--") {
      if (filter === undefined) return undefined
      done = true
    } else if (a === "--arg" || a === "--argjson") {
      if (words[i + 1] === undefined || words[i + 2] === undefined || words[i + 1]!.glob || words[i + 2]!.glob) return undefined
      i += 2
    } else if (a === "--indent") {
      if (words[i + 1] === undefined || words[i + 1]!.glob) return undefined
      i++
    } else if (a.startsWith("--")) {
      if (!JQ_LONG.has(a.slice(2))) return undefined
    } else if (![...a.slice(1)].every((ch) => JQ_FLAGS.has(ch))) return undefined
  }
  if (filter === undefined || /\b(?:import|include)\b/.test(filter.text)) return undefined
  return { chdir: [], paths: files, git: false }
}

/**
 * `xxd [options] [infile]`. xxd reads its options itself, only before the
 * first operand; a second operand is a file it writes, even one starting
 * with `-`. Only the exact spellings below are taken.
 */
const XXD_FLAGS = new Set(["-a", "-b", "-C", "-E", "-e", "-i", "-p", "-ps", "-d", "-u", "-h", "-v"])
const XXD_VALUES = new Set(["-c", "-g", "-l", "-n", "-o", "-s"])
const xxd: Rule = (words) => {
  let i = 0
  for (; i < words.length; i++) {
    const a = words[i]!.text
    if (a === "--") {
      i++
      break
    }
    if (!a.startsWith("-") || a === "-") break
    if (XXD_VALUES.has(a)) {
      if (words[i + 1] === undefined || words[i + 1]!.glob) return undefined
      i++
    } else if (!XXD_FLAGS.has(a)) return undefined
  }
  const rest = words.slice(i)
  if (rest.length > 1 || rest.some((w) => w.glob)) return undefined
  return { chdir: [], paths: rest.map((word) => ({ word })), git: false }
}

/**
 * `find [-P] [start…] [expression]`: start points are paths; the expression
 * may test, print and prune, never run, delete, write or follow links.
 */
const FIND_NULLARY = new Set([
  "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable", "-writable", "-executable",
  "-nouser", "-nogroup", "-depth", "-d", "-xdev", "-mount", "-noleaf", "-daystart", "-ignore_readdir_race",
  "-noignore_readdir_race", "-nowarn", "-warn", "-not", "!", "-a", "-and", "-o", "-or", "(", ")", ",", "-help", "-version"
])
const FIND_TEXT = new Set([
  "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-regextype", "-type",
  "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used", "-maxdepth", "-mindepth", "-perm",
  "-user", "-group", "-uid", "-gid", "-links", "-inum", "-lname", "-ilname", "-printf", "-fstype", "-newermt"
])
const FIND_PATH = new Set(["-newer", "-anewer", "-cnewer", "-samefile"])
const find: Rule = (words) => {
  const found: Array<PathWord> = []
  let i = 0
  if (words[0]?.text === "-P") i++
  for (; i < words.length; i++) {
    const a = words[i]!.text
    if (a.startsWith("-") || a === "!" || a === "(" || a === ")" || a === ",") break
    found.push({ word: words[i]! })
  }
  for (; i < words.length; i++) {
    const word = words[i]!
    if (word.glob) return undefined
    if (FIND_NULLARY.has(word.text)) continue
    const value = words[i + 1]
    if (value === undefined || value.glob) return undefined
    if (FIND_PATH.has(word.text)) found.push({ word: value })
    else if (!FIND_TEXT.has(word.text)) return undefined
    i++
  }
  return { chdir: [], paths: found, git: false }
}

/** `strings`: binutils reads `@file` as more arguments, anywhere. */
export const STRINGS: Spec = {
  short: "afwon:t:e:s:",
  numbers: true,
  long: ["all", "print-file-name", "bytes=", "radix=", "include-all-whitespace", "encoding=", "output-separator=", "help", "version"],
  operands: paths
}
const strings: Rule = (words) => words.some((w) => w.text.startsWith("@")) ? undefined : checked(parse(STRINGS, words))

// ---------------------------------------------------------------------------
// The list
// ---------------------------------------------------------------------------

const GREP = gnu({
  short: "EFGPiywxzsvVbnHhoqaIrLlcTZUe:f@m:d:D:A:B:C:",
  numbers: true,
  long: [
    "extended-regexp", "fixed-strings", "basic-regexp", "perl-regexp", "regexp=", "file=@", "ignore-case", "no-ignore-case",
    "word-regexp", "line-regexp", "null-data", "no-messages", "invert-match", "max-count=", "byte-offset", "line-number",
    "line-buffered", "with-filename", "no-filename", "label=", "only-matching", "quiet", "silent", "binary-files=", "text",
    "directories=", "devices=", "recursive", "include=", "exclude=", "exclude-from=@", "exclude-dir=",
    "files-without-match", "files-with-matches", "count", "initial-tab", "null", "before-context=", "after-context=",
    "context=", "group-separator=", "no-group-separator", "color?", "colour?", "binary"
  ],
  operands: firstText("-e", "-f", "--regexp", "--file")
})

const SUMS = gnu({ short: "btz", long: ["binary", "tag", "text", "zero"], operands: paths })

const FILTERS: Operands = texts

/** The programs read through an option table (each long name audited against the installed `--help`). */
export const SPECS: Readonly<Record<string, Spec>> = {
  ls: gnu({
    short: "aAbBcCdDfFgGhHiklmnNopqQrRsStuUvxXZ1I:T:w:",
    long: [
      "all", "almost-all", "author", "escape", "block-size=", "ignore-backups", "color?", "directory", "dired", "classify?",
      "file-type", "format=", "full-time", "group-directories-first", "no-group", "human-readable", "si",
      "dereference-command-line", "dereference-command-line-symlink-to-dir", "hide=", "hyperlink?", "indicator-style=",
      "inode", "ignore=", "kibibytes", "numeric-uid-gid", "literal", "hide-control-chars", "show-control-chars",
      "quote-name", "quoting-style=", "reverse", "recursive", "size", "sort=", "time=", "time-style=", "tabsize=",
      "width=", "context", "zero"
    ],
    operands: paths
  }),
  cat: gnu({
    short: "AbeEnstTuv",
    long: ["show-all", "number-nonblank", "show-ends", "number", "squeeze-blank", "show-tabs", "show-nonprinting"],
    operands: paths
  }),
  head: gnu({ short: "qvzc:n:", numbers: true, long: ["bytes=", "lines=", "quiet", "silent", "verbose", "zero-terminated"], operands: paths }),
  tail: gnu({ short: "qvzc:n:", numbers: true, long: ["bytes=", "lines=", "quiet", "silent", "verbose", "zero-terminated"], operands: paths }),
  wc: gnu({ short: "cmlLw", long: ["bytes", "chars", "lines", "max-line-length", "words"], operands: paths }),
  stat: gnu({ short: "Lftc:", long: ["dereference", "file-system", "cached=", "format=", "printf=", "terse"], operands: paths }),
  du: gnu({
    short: "0abcDHhklmPSsxB:d:t:",
    long: [
      "null", "all", "apparent-size", "block-size=", "bytes", "total", "dereference-args", "max-depth=", "human-readable",
      "inodes", "count-links", "no-dereference", "separate-dirs", "si", "summarize", "threshold=", "time?", "time-style=",
      "exclude=", "one-file-system"
    ],
    operands: paths
  }),
  df: gnu({
    short: "ahHiklPTvB:t:x:",
    long: [
      "all", "block-size=", "human-readable", "si", "inodes", "local", "no-sync", "output?", "portability", "total", "type=",
      "print-type", "exclude-type="
    ],
    operands: paths
  }),
  realpath: gnu({
    short: "emLPqsz",
    long: [
      "canonicalize-existing", "canonicalize-missing", "logical", "physical", "quiet", "relative-to=@", "relative-base=@",
      "strip", "no-symlinks", "zero"
    ],
    operands: paths
  }),
  readlink: gnu({
    short: "femnqsvz",
    long: ["canonicalize", "canonicalize-existing", "canonicalize-missing", "no-newline", "quiet", "silent", "verbose", "zero"],
    operands: paths
  }),
  nl: gnu({
    short: "pb:d:f:h:i:l:n:s:v:w:",
    long: [
      "body-numbering=", "section-delimiter=", "footer-numbering=", "header-numbering=", "line-increment=",
      "join-blank-lines=", "number-format=", "no-renumber", "number-separator=", "starting-line-number=", "number-width="
    ],
    operands: paths
  }),
  cut: gnu({
    short: "nszb:c:d:f:",
    long: ["bytes=", "characters=", "delimiter=", "fields=", "complement", "only-delimited", "output-delimiter=", "zero-terminated"],
    operands: paths
  }),
  tr: gnu({ short: "cCdst", long: ["complement", "delete", "squeeze-repeats", "truncate-set1"], operands: FILTERS }),
  comm: gnu({ short: "123z", long: ["check-order", "nocheck-order", "output-delimiter=", "total", "zero-terminated"], operands: upTo(2) }),
  column: gnu({
    short: "tdeLJxhVn:O:N:l:E:H:R:T:W:r:i:p:c:o:s:",
    long: [
      "table", "table-name=", "table-order=", "table-columns=", "table-columns-limit=", "table-noextreme=",
      "table-noheadings", "table-header-repeat", "table-hide=", "table-right=", "table-truncate=", "table-wrap=",
      "keep-empty-lines", "json", "tree=", "tree-id=", "tree-parent=", "output-width=", "output-separator=", "separator=",
      "fillrows"
    ],
    operands: paths
  }),
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  // Two directories, or a file and a directory, make diff read entries through their symlinks: files only.
  diff: gnu({
    short: "qscenyptTNiEZbBwaduvC:U:W:F:I:",
    long: [
      "normal", "brief", "report-identical-files", "context?", "unified?", "ed", "rcs", "side-by-side", "width=",
      "left-column", "suppress-common-lines", "show-c-function", "show-function-line=", "label=", "expand-tabs",
      "initial-tab", "tabsize=", "suppress-blank-empty", "new-file", "unidirectional-new-file", "ignore-case",
      "ignore-tab-expansion", "ignore-trailing-space", "ignore-space-change", "ignore-all-space", "ignore-blank-lines",
      "ignore-matching-lines=", "text", "strip-trailing-cr", "minimal", "horizon-lines=", "speed-large-files", "color?",
      "palette="
    ],
    operands: upTo(2, true)
  }),
  cmp: gnu({ short: "blsvi:n:", long: ["print-bytes", "ignore-initial=", "verbose", "bytes=", "quiet", "silent"], operands: upTo(4) }),
  md5sum: SUMS,
  sha1sum: SUMS,
  sha224sum: SUMS,
  sha256sum: SUMS,
  sha384sum: SUMS,
  sha512sum: SUMS,
  b2sum: SUMS,
  cksum: gnu({ short: "za:l:", long: ["algorithm=", "length=", "tag", "untagged", "zero", "debug"], operands: paths }),
  od: gnu({
    short: "abcdfilosxvwA:j:N:S:t:",
    long: ["address-radix=", "endian=", "skip-bytes=", "read-bytes=", "strings?", "format=", "output-duplicates", "width?"],
    operands: paths
  }),
  hexdump: gnu({
    short: "bcCdoxvLVhe:n:s:",
    long: [
      "one-byte-octal", "one-byte-char", "canonical", "two-bytes-decimal", "two-bytes-octal", "two-bytes-hex", "color?",
      "format=", "length=", "skip=", "no-squeezing"
    ],
    operands: paths
  }),
  tac: gnu({ short: "brs:", long: ["before", "regex", "separator="], operands: paths }),
  rev: gnu({ short: "hV", operands: paths }),
  fold: gnu({ short: "bsw:", numbers: true, long: ["bytes", "spaces", "width="], operands: paths }),
  paste: gnu({ short: "szd:", long: ["delimiters=", "serial", "zero-terminated"], operands: paths }),
  sort: gnu({
    short: "bdfghiMnRrVcCmsuzk:S:t:",
    long: [
      "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort", "ignore-nonprinting",
      "month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "reverse", "sort=", "version-sort",
      "batch-size=", "check?", "debug", "key=", "merge", "stable", "buffer-size=", "field-separator=", "parallel=",
      "unique", "zero-terminated"
    ],
    operands: paths
  }),
  // A second operand is the file uniq writes.
  uniq: gnu({
    short: "cdDiuzf:s:w:",
    long: ["count", "repeated", "all-repeated?", "skip-fields=", "group?", "ignore-case", "skip-chars=", "unique", "zero-terminated", "check-chars="],
    operands: upTo(1)
  }),
  file: gnu({
    short: "bikLhnN0rve:F:",
    long: [
      "brief", "mime", "mime-type", "mime-encoding", "apple", "extension", "keep-going", "dereference", "no-dereference",
      "no-buffer", "no-pad", "print0", "raw", "exclude=", "exclude-quiet=", "separator="
    ],
    operands: paths
  }),
  date: DATE,
  seq: gnu({ short: "wf:s:", long: ["format=", "separator=", "equal-width"], operands: texts }),
  basename: gnu({ short: "azs:", long: ["multiple", "suffix=", "zero"], operands: texts }),
  dirname: gnu({ short: "z", long: ["zero"], operands: texts }),
  printenv: gnu({ short: "0", long: ["null"], operands: texts }),
  uname: gnu({
    short: "asnrvmpio",
    long: ["all", "kernel-name", "nodename", "kernel-release", "kernel-version", "machine", "processor", "hardware-platform", "operating-system"],
    operands: none
  }),
  id: gnu({ short: "aZgGnruz", long: ["context", "group", "groups", "name", "real", "user", "zero"], operands: texts }),
  groups: gnu({ operands: texts }),
  whoami: gnu({ operands: none }),
  arch: gnu({ operands: none }),
  nproc: gnu({ long: ["all", "ignore="], operands: none }),
  tty: gnu({ short: "s", long: ["silent", "quiet"], operands: none }),
  uptime: gnu({ short: "pshV", long: ["pretty", "since"], operands: none }),
  locale: gnu({ short: "amckvV", long: ["all-locales", "charmaps", "category-name", "keyword-name", "verbose", "usage"], operands: texts }),
  hostname: gnu({ short: "AdfiIs", long: ["all-fqdns", "domain", "fqdn", "long", "ip-address", "all-ip-addresses", "short"], operands: none }),
  // Debian's which, and bash's builtins.
  which: { short: "as", operands: texts },
  pwd: { short: "LP", operands: none },
  type: { short: "afptP", operands: texts }
}

const RULES: Readonly<Record<string, Rule>> = {
  ...Object.fromEntries(Object.entries(SPECS).map(([name, spec]) => [name, (words: ReadonlyArray<Word>) => checked(parse(spec, words))])),
  strings,
  xxd,
  jq,
  sed,
  find,
  echo: anyText,
  printf: anyText,
  true: anyText,
  false: anyText,
  git: Git.rule
}

/** Builtins of bash: they run inside the shell, whatever PATH holds. */
export const BUILTINS: ReadonlySet<string> = new Set(["pwd", "type", "echo", "printf", "true", "false"])

export const ruleFor = (program: string): Rule | undefined => Object.hasOwn(RULES, program) ? RULES[program] : undefined

