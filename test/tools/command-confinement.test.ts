/**
 * Read-only commands against real files and real git: every word they open must land inside the
 * workspace (symlinks, `..`, globs, option values, `< file`, `git -C`), the program must not come
 * from the workspace, and an auto-allowed git must run none of the repository's programs.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as fc from "fast-check"
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Confine from "../../src/tools/commands/Confine.ts"
import type * as GitGuard from "../../src/tools/commands/GitGuard.ts"
import * as TempDir from "../support/TempDir.ts"

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const ws = join(base, "ws")
  const outside = join(base, "outside")
  mkdirSync(ws)
  mkdirSync(outside)
  writeFileSync(join(outside, "secret.txt"), "SECRET\n")
  writeFileSync(join(ws, "a.txt"), "a\n")
  writeFileSync(join(ws, "b.txt"), "b\n")
  mkdirSync(join(ws, "src"))
  writeFileSync(join(ws, "src", "x.ts"), "x\n")
  const check = (command: string, options: { cwd?: string; roots?: ReadonlyArray<string>; env?: Record<string, string | undefined> } = {}) =>
    Confine.check(command, { cwd: options.cwd ?? ws, roots: options.roots ?? [ws], env: options.env ?? process.env }).pipe(
      Effect.provide(TempDir.platform)
    )
  return { base, ws, outside, check }
})

const allowed = (verdict: GitGuard.Verdict) => verdict.ok
const reason = (verdict: GitGuard.Verdict) => verdict.ok ? "allowed" : verdict.reason

describe("Confine.check: paths", () => {
  it.effect("operands, option values and `< file` must resolve inside the workspace", () =>
    Effect.gen(function*() {
      const { check, outside } = yield* setup
      const inside = ["cat a.txt", "cat ./src/../a.txt", "cat missing.txt", "grep -f a.txt x b.txt", "cat < a.txt", "cat /dev/null", "wc -l -", "ls", "grep -rn x", "find . -newer a.txt"]
      for (const command of inside) assert.isTrue(allowed(yield* check(command)), command)
      const out = [
        "cat /etc/passwd", "cat /proc/self/environ", "cat ../outside/secret.txt", `cat ${outside}/secret.txt`, "cat /dev/zero",
        "head -n 1 /etc/hostname", "grep -f /etc/passwd x a.txt", "grep --file=/etc/passwd x", "grep --exclude-from=/etc/passwd x .",
        "realpath --relative-to=/etc a.txt", "cat < /etc/passwd", "wc < ../outside/secret.txt", "find /etc -name x",
        "find . -newer /etc/shadow", "date -r /etc/shadow", "du -s /", "ls /", "stat ..", "git -C .. log", "git log -- /etc/passwd",
        "git diff /etc/passwd /etc/hostname", "cat src/../../outside/secret.txt"
      ]
      for (const command of out) assert.isFalse(allowed(yield* check(command)), command)
    }))

  it.effect("a symlink inside pointing outside is outside, wherever it appears in a path", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      symlinkSync(outside, join(ws, "out"))
      symlinkSync(join(outside, "secret.txt"), join(ws, "s.txt"))
      symlinkSync(join(outside, "nowhere"), join(ws, "dangling"))
      mkdirSync(join(outside, "deep"))
      symlinkSync(join(outside, "deep"), join(ws, "deeplink"))
      for (const command of ["cat s.txt", "cat out/secret.txt", "grep -r x out", "ls out", "cat dangling", "git -C out log", "cat < s.txt", "cat deeplink/../secret.txt"]) {
        assert.isFalse(allowed(yield* check(command)), command)
      }
      // The kernel resolves `deeplink/..` to `outside/`; a lexical `..` would have said `ws/`.
      assert.include(reason(yield* check("cat deeplink/../secret.txt")), "outside the workspace")
    }))

  it.effect("the plain recursive forms do not follow links out, so a link inside the tree is fine", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      symlinkSync(outside, join(ws, "src", "out"))
      for (const command of ["grep -rn SECRET .", "ls -R", "du -a", "find . -type f"]) {
        assert.isTrue(allowed(yield* check(command)), command)
        const output = spawnSync("/bin/bash", ["-c", command], { cwd: ws, encoding: "utf8" }).stdout
        assert.notInclude(output, "SECRET", command)
        assert.notInclude(output, "secret.txt", command)
      }
    }))

  it.effect("additional directories count as the workspace", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      assert.isTrue(allowed(yield* check(`cat ${outside}/secret.txt`, { roots: [ws, outside] })))
    }))

  it.effect("diff does not compare directories (it would read their entries through links)", () =>
    Effect.gen(function*() {
      const { check } = yield* setup
      assert.isTrue(allowed(yield* check("diff a.txt b.txt")))
      assert.isFalse(allowed(yield* check("diff src a.txt")))
      assert.isFalse(allowed(yield* check("diff . src")))
    }))
})

describe("Confine.check: globs", () => {
  it.effect("every match is checked: a name that reads as an option, or a link leaving the workspace, asks", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      assert.isTrue(allowed(yield* check("cat *.txt")))
      assert.isTrue(allowed(yield* check("wc -l src/*.ts")))
      assert.isTrue(allowed(yield* check("cat *.none"))) // no match: bash passes the word as it is
      writeFileSync(join(ws, "-n"), "")
      assert.include(reason(yield* check("cat *")), "expands to an option")
      assert.isTrue(allowed(yield* check("cat *.txt")))
      symlinkSync(join(outside, "secret.txt"), join(ws, "z.txt"))
      assert.include(reason(yield* check("cat *.txt")), "outside the workspace")
      assert.isTrue(allowed(yield* check("cat 'z*'.md a.txt")))
    }))

  it.effect("a glob in a directory component, or dot-globs that reach `..`, ask", () =>
    Effect.gen(function*() {
      const { check } = yield* setup
      assert.isFalse(allowed(yield* check("cat */x.ts")))
      assert.isFalse(allowed(yield* check("cat .*")))
      assert.isFalse(allowed(yield* check("ls /etc/*")))
      assert.isFalse(allowed(yield* check("echo /etc/*")))
      assert.isFalse(allowed(yield* check("echo ../*")))
      assert.isTrue(allowed(yield* check("echo *")))
    }))

  it.effect("bash really expands a `-rf` file into an option: the reason for the check", () =>
    Effect.gen(function*() {
      const { ws } = yield* setup
      writeFileSync(join(ws, "--version"), "")
      const output = execFileSync("/bin/bash", ["-c", "cat *"], { cwd: ws, encoding: "utf8" })
      assert.include(output, "GNU coreutils")
    }))
})

describe("Confine.check: words as bash reads them", () => {
  it.effect("a redirection target is the whole word: a quoted rest glued to it is not a separate operand", () =>
    Effect.gen(function*() {
      const { check, ws } = yield* setup
      const command = "tr -d <.'/../outside/secret.txt' Z"
      // What bash does with it: reads the file outside.
      const output = spawnSync("/bin/bash", ["-c", command], { cwd: ws, encoding: "utf8" }).stdout
      assert.strictEqual(output, "SECRET\n")
      assert.include(reason(yield* check(command)), "./../outside/secret.txt is outside the workspace")
      for (const other of ["cat <\"../outside\"/secret.txt", "cat <..\\/outside/secret.txt", "cat <..'/'outside/secret.txt", "wc -l 0<../out\\\nside/secret.txt"]) {
        assert.include(reason(yield* check(other)), "outside the workspace", other)
      }
      assert.isTrue(allowed(yield* check("tr -d <'a'.txt Z")))
    }))

  it.effect("a name that is not valid UTF-8, or `?` and brackets against names that are not ASCII, ask", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      // Read back as `a\uFFFD`, which is not the name bash passes on: the link behind it would go unchecked.
      symlinkSync(join(outside, "secret.txt"), Buffer.from([...Buffer.from(join(ws, "a")), 0xff]))
      assert.include(spawnSync("/bin/bash", ["-c", "cat a*"], { cwd: ws, encoding: "utf8" }).stdout, "SECRET")
      assert.include(reason(yield* check("cat a*")), "cannot tell what a* expands to")
      assert.isFalse(allowed(yield* check("cat a?*")))
      assert.isTrue(allowed(yield* check("cat b*")))
      writeFileSync(join(ws, "é"), "")
      assert.include(reason(yield* check("cat ?")), "cannot tell what ? expands to")
      assert.include(reason(yield* check("cat [[:alpha:]]")), "cannot tell")
      assert.isTrue(allowed(yield* check("cat *.txt")))
    }))
})

describe("Confine.check: the shell", () => {
  it.effect("without /bin/bash the command would run with /bin/sh, which reads some of it otherwise: asked", () =>
    Effect.gen(function*() {
      const { ws } = yield* setup
      const check = (fs: Layer.Layer<FileSystem.FileSystem>) =>
        Confine.check("cat a.txt", { cwd: ws, roots: [ws], env: process.env }).pipe(Effect.provide(Layer.mergeAll(fs, NodePath.layer)))
      // The real file system, with /bin/bash hidden.
      const withoutBash = Layer.effect(
        FileSystem.FileSystem,
        Effect.map(FileSystem.FileSystem, (fs) =>
          FileSystem.FileSystem.of({ ...fs, exists: (path) => path === "/bin/bash" ? Effect.succeed(false) : fs.exists(path) }))
      ).pipe(Layer.provide(NodeFileSystem.layer))
      assert.include(reason(yield* check(withoutBash)), "/bin/bash is missing")
      assert.isTrue(allowed(yield* check(NodeFileSystem.layer)))
    }))
})

describe("Confine.check: any input", () => {
  it.effect("never fails and never dies, whatever the command", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      symlinkSync(outside, join(ws, "out"))
      writeFileSync(join(ws, "-rf"), "")
      const unit = fc.constantFrom(..."ls cat grep -r git -C find . .. / * ? [ ] z-a ! ~ < | ' \" out a.txt src".split(" "), " ")
      const commands = fc.sample(fc.array(unit, { maxLength: 8 }).map((parts) => parts.join(" ")), 300)
      for (const command of commands) {
        const verdict = yield* check(command)
        assert.isBoolean(verdict.ok, command)
      }
      assert.isFalse(allowed(yield* check("ls [z-a]*")))
    }))
})

describe("Confine.check: programs", () => {
  it.effect("a program PATH would find in the workspace asks", () =>
    Effect.gen(function*() {
      const { check, ws } = yield* setup
      mkdirSync(join(ws, "bin"))
      writeFileSync(join(ws, "bin", "cat"), "#!/bin/sh\ntouch pwned\n")
      chmodSync(join(ws, "bin", "cat"), 0o755)
      const env = { ...process.env, PATH: `${join(ws, "bin")}:${process.env["PATH"]}` }
      assert.include(reason(yield* check("cat a.txt", { env })), "would run from the workspace")
      assert.isFalse(allowed(yield* check("ls | cat", { env })))
      // A relative or empty PATH entry counts from the command's directory.
      assert.isFalse(allowed(yield* check("cat a.txt", { env: { ...process.env, PATH: `bin:${process.env["PATH"]}` } })))
      // Builtins run inside the shell.
      assert.isTrue(allowed(yield* check("echo hi", { env })))
      assert.isTrue(allowed(yield* check("cat a.txt")))
    }))
})

// ---------------------------------------------------------------------------
// git
// ---------------------------------------------------------------------------

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "core.hooksPath=/dev/null", ...args], { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } })

/** A repository with one commit in `dir`. */
const repo = (dir: string) => {
  mkdirSync(dir, { recursive: true })
  git(dir, "init", "-q")
  git(dir, "config", "user.email", "a@example.com")
  git(dir, "config", "user.name", "a")
  writeFileSync(join(dir, "a.txt"), "hi\n")
  git(dir, "add", ".")
  git(dir, "commit", "-qm", "one")
}

describe("Confine.check: git repositories", () => {
  it.effect("a clean repository inside the workspace: allowed", () =>
    Effect.gen(function*() {
      const { check, ws } = yield* setup
      repo(ws)
      for (const command of ["git status", "git log -p", "git show", "git diff", "git log --oneline | head -3"]) {
        assert.isTrue(allowed(yield* check(command)), command)
      }
    }))

  it.effect("the repository's own configuration naming programs or files asks: diff drivers, filters, gpg, excludes", () =>
    Effect.gen(function*() {
      const { check, ws } = yield* setup
      repo(ws)
      for (const [key, value] of [["diff.x.textconv", "sh -c 'touch pwned'"], ["diff.y.command", "sh"], ["filter.f.clean", "sh"], ["filter.g.process", "sh"], ["gpg.program", "sh"], ["diff.external", "sh"], ["submodule.s.ignore", "none"], ["core.excludesFile", "/etc/passwd"]]) {
        git(ws, "config", key!, value!)
        const verdict = yield* check("git status")
        assert.isFalse(allowed(verdict), key)
        assert.include(reason(verdict), "can run programs or read files", key)
        git(ws, "config", "--unset", key!)
      }
      // Through an include the repository's configuration names.
      writeFileSync(join(ws, "extra.cfg"), "[diff \"z\"]\n\ttextconv = sh\n")
      git(ws, "config", "include.path", "../extra.cfg")
      assert.isFalse(allowed(yield* check("git log -p")))
      git(ws, "config", "--unset", "include.path")
      // Fixed keys are switched off by the overrides instead: no question.
      git(ws, "config", "core.fsmonitor", "sh")
      git(ws, "config", "core.pager", "sh")
      assert.isTrue(allowed(yield* check("git status")))
    }))

  it.effect("a repository outside the workspace (the workspace a subdirectory of it) asks", () =>
    Effect.gen(function*() {
      const { check, base } = yield* setup
      repo(base)
      const verdict = yield* check("git log")
      assert.isFalse(allowed(verdict))
      assert.include(reason(verdict), "outside the workspace")
      assert.isTrue(allowed(yield* check("git log", { roots: [base] })))
    }))

  it.effect("alternates and a .gitmodules that sets `ignore` ask", () =>
    Effect.gen(function*() {
      const { check, ws, outside } = yield* setup
      repo(ws)
      writeFileSync(join(ws, ".git", "objects", "info", "alternates"), `${outside}\n`)
      assert.isFalse(allowed(yield* check("git log")))
      writeFileSync(join(ws, ".git", "objects", "info", "alternates"), "")
      writeFileSync(join(ws, ".gitmodules"), "[submodule \"s\"]\n\tpath = s\n\tignore = none\n")
      assert.isFalse(allowed(yield* check("git status")))
    }))

  it.effect("not a repository: git fails the same way, nothing to guard", () =>
    Effect.gen(function*() {
      const { check } = yield* setup
      assert.isTrue(allowed(yield* check("git status")))
    }))
})
