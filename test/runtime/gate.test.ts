/**
 * The permission gate deciding on real files and real git, and the tools then run the way the
 * turn loop runs them: what runs without asking writes nothing and runs none of the
 * repository's programs; git's own files are always asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as History from "../../src/log/History.ts"
import type { PermissionRule } from "../../src/log/Event.ts"
import * as Gate from "../../src/runtime/Gate.ts"
import { Questions } from "../../src/session/TurnContract.ts"
import type { ModeId } from "../../src/Vocabulary.ts"
import { bash } from "../../src/tools/bash.ts"
import { edit } from "../../src/tools/edit.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

/** Runs one call as the turn loop does: the gate (no one to answer), then the tool with the gate's verdict. */
const attempt = (cwd: string, mode: ModeId, tool: Tool.Tool<any, Edges.Services>, args: unknown, rules: ReadonlyArray<PermissionRule> = []) =>
  Effect.gen(function*() {
    const history = History.make()
    history.rules.push(...rules)
    // Nobody presents the turn: what needs asking is denied.
    const gate = yield* Gate.make({
      cwd,
      roots: [cwd],
      mode: () => mode,
      history,
      timeoutMs: 1_000,
      record: () => Effect.void
    }).pipe(Effect.provideService(Questions, Questions.none))
    const verdict = yield* gate.permit(
      { id: "c1", name: tool.name, args, title: tool.title(args), kind: tool.kind, locations: tool.locations(args, cwd) },
      tool,
      args
    )
    if (verdict._tag === "deny") return { ran: false as const, reason: verdict.reason }
    const ctx: Tool.ToolContext = {
      sessionId: "s1",
      toolCallId: "c1",
      cwd,
      roots: [cwd],
      readOnly: verdict.readOnly === true,
    }
    const output = yield* Tool.run(tool, args, ctx).pipe(ToolServices.provide())
    return { ran: true as const, readOnly: verdict.readOnly === true, output }
  }).pipe(Effect.provide(TempDir.platform))

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", ...args], { cwd, encoding: "utf8" })

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const ws = join(base, "ws")
  mkdirSync(ws)
  const marker = join(base, "marker")
  // Records that it ran, then passes its input through (as a filter or textconv must).
  const evil = join(base, "evil.sh")
  writeFileSync(evil, `#!/bin/sh\necho "$0 $*" >> ${JSON.stringify(marker)}\ncat "$@" 2>/dev/null || cat\n`)
  chmodSync(evil, 0o755)
  const hooks = join(base, "hooks")
  mkdirSync(hooks)
  writeFileSync(join(hooks, "post-index-change"), `#!/bin/sh\necho hook >> ${JSON.stringify(marker)}\n`)
  chmodSync(join(hooks, "post-index-change"), 0o755)
  const repo = (dir: string) => {
    mkdirSync(dir, { recursive: true })
    git(dir, "init", "-q")
    git(dir, "config", "user.email", "a@example.com")
    git(dir, "config", "user.name", "a")
    writeFileSync(join(dir, "a.txt"), "one\n")
    writeFileSync(join(dir, ".gitattributes"), "*.txt diff=drv filter=flt\n")
    git(dir, "add", ".")
    git(dir, "commit", "-qm", "one")
    writeFileSync(join(dir, "a.txt"), "two\n")
    git(dir, "commit", "-qam", "two")
  }
  /** Makes `a.txt` look racily clean, so that `git status` must read it again (through filters). */
  const racy = (dir: string) => {
    writeFileSync(join(dir, "a.txt"), "six\n")
    const index = join(dir, ".git", "index")
    const when = new Date()
    utimesSync(index, when, when)
    utimesSync(join(dir, "a.txt"), when, when)
  }
  const ran = () => existsSync(marker) ? readFileSync(marker, "utf8") : ""
  return { base, ws, marker, evil, hooks, repo, racy, ran }
})

describe("Gate: auto-allowed git runs none of the repository's programs", () => {
  it.effect("fsmonitor and a post-index-change hook: allowed, run with them off (and they do run otherwise)", () =>
    Effect.gen(function*() {
      const { ws, evil, hooks, repo, racy, ran } = yield* setup
      repo(ws)
      git(ws, "config", "core.fsmonitor", evil)
      git(ws, "config", "core.hooksPath", hooks)
      for (const command of ["git status", "git status --short", "git diff", "git log -p", "git show", "git -C . log --stat | head -5"]) {
        racy(ws)
        const result = yield* attempt(ws, "default", bash, { command })
        assert.isTrue(result.ran && result.readOnly, command)
        assert.isTrue(result.ran && result.output.ok, command)
        assert.strictEqual(ran(), "", command)
      }
      // The same command approved by the user runs git as configured: the fixture is live.
      racy(ws)
      const approved = yield* attempt(ws, "bypassPermissions", bash, { command: "git status" })
      assert.isTrue(approved.ran && !approved.readOnly)
      assert.include(ran(), "evil.sh")
    }))

  it.effect("diff drivers, filters and gpg programs in the repository's config: asked, nothing runs", () =>
    Effect.gen(function*() {
      const { ws, evil, repo, racy, ran } = yield* setup
      repo(ws)
      git(ws, "config", "diff.drv.textconv", evil)
      git(ws, "config", "filter.flt.clean", evil)
      git(ws, "config", "gpg.program", evil)
      for (const command of ["git status", "git diff", "git log -p", "git show", "git log --format=%G? -1"]) {
        racy(ws)
        const result = yield* attempt(ws, "default", bash, { command })
        assert.isFalse(result.ran, command)
        assert.include(result.ran ? "" : result.reason, "Permission is needed", command)
      }
      assert.strictEqual(ran(), "")
    }))

  it.effect("a bare repository inside the workspace: git -C refuses it, --git-dir asks", () =>
    Effect.gen(function*() {
      const { ws, evil, hooks, ran } = yield* setup
      const bare = join(ws, "evil.git")
      git(ws, "init", "-q", "--bare", bare)
      git(bare, "config", "core.fsmonitor", evil)
      git(bare, "config", "core.hooksPath", hooks)
      git(bare, "config", "diff.drv.textconv", evil)
      const result = yield* attempt(ws, "default", bash, { command: "git -C evil.git log -p" })
      assert.isTrue(result.ran && result.readOnly)
      assert.include(result.ran ? result.output.content : "", "cannot use bare repository")
      const explicit = yield* attempt(ws, "default", bash, { command: "git --git-dir=evil.git log -p" })
      assert.isFalse(explicit.ran)
      assert.strictEqual(ran(), "")
    }))

  it.effect("a .git file pointing at a git directory elsewhere in the workspace is inspected there", () =>
    Effect.gen(function*() {
      const { ws, evil, repo, ran } = yield* setup
      repo(join(ws, "real"))
      git(join(ws, "real"), "config", "diff.drv.textconv", evil)
      mkdirSync(join(ws, "wt"))
      writeFileSync(join(ws, "wt", ".git"), `gitdir: ${join(ws, "real", ".git")}\n`)
      const result = yield* attempt(ws, "default", bash, { command: "git -C wt log -p" })
      assert.isFalse(result.ran)
      assert.strictEqual(ran(), "")
    }))
})

describe("Gate: git's own files are protected from edits", () => {
  const rule = (value: string): PermissionRule => ({ decision: "allow", kind: "path", value, label: "edits" })

  it.effect("acceptEdits allows ordinary edits and asks for .git/, .git files, bare repositories and .gitconfig", () =>
    Effect.gen(function*() {
      const { ws, repo } = yield* setup
      repo(ws)
      const config = readFileSync(join(ws, ".git", "config"), "utf8")
      const bare = join(ws, "b.git")
      git(ws, "init", "-q", "--bare", bare)
      mkdirSync(join(ws, "sub"))
      symlinkSync(join(ws, ".git"), join(ws, "gitlink"))
      symlinkSync(join(ws, ".git", "config"), join(ws, "cfg"))
      const ok = yield* attempt(ws, "acceptEdits", write, { path: "new.txt", content: "x" })
      assert.isTrue(ok.ran)
      const asked = [
        ".git/config", ".git/hooks/post-index-change", ".git/info/attributes", ".GIT/config", "sub/.git", "cfg",
        "gitlink/config", "b.git/config", "b.git/HEAD", "b.git/hooks/pre-commit", ".gitconfig", "home/.config/git/config",
        ".g\u200cit/config"
      ]
      for (const path of asked) {
        const result = yield* attempt(ws, "acceptEdits", write, { path, content: "[core]\n\tfsmonitor = sh\n" })
        assert.isFalse(result.ran, path)
      }
      const edited = yield* attempt(ws, "acceptEdits", edit, { path: ".git/config", edits: [{ oldText: "[core]", newText: "[core]\n\tfsmonitor = sh" }] })
      assert.isFalse(edited.ran)
      assert.strictEqual(readFileSync(join(ws, ".git", "config"), "utf8"), config)
      assert.isFalse(existsSync(join(ws, "sub", ".git")))
    }))

  it.effect("a directory rule does not cover them; a rule for the file itself does; rejects still apply", () =>
    Effect.gen(function*() {
      const { ws, repo } = yield* setup
      repo(ws)
      const target = join(ws, ".git", "description")
      const args = { path: ".git/description", content: "x\n" }
      assert.isFalse((yield* attempt(ws, "default", write, args, [rule(ws)])).ran)
      assert.isFalse((yield* attempt(ws, "default", write, args, [rule(join(ws, ".git"))])).ran)
      assert.isTrue((yield* attempt(ws, "default", write, args, [rule(target)])).ran)
      const reject: PermissionRule = { decision: "reject", kind: "path", value: ws, label: "edits" }
      const denied = yield* attempt(ws, "acceptEdits", write, args, [reject, rule(target)])
      assert.include(denied.ran ? "" : denied.reason, "always reject")
      // bypassPermissions asks nothing, by definition.
      assert.isTrue((yield* attempt(ws, "bypassPermissions", write, args)).ran)
    }))
})
