/**
 * The sandbox on the real bubblewrap: what a command can write, read, reach and leave
 * behind. Every test runs real commands in a real session sandbox (`Sandbox.make`), the way
 * `bash` runs them.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import type { SessionSandbox } from "../../src/tools/Sandboxed.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as Visible from "../support/Visible.ts"

/**
 * A workspace, an outside directory, a fake home with credentials, and Skein's home. Not
 * under /tmp (`Visible.dir`): a sandboxed command has a /tmp of its own, where none of it would be.
 */
const world = Effect.gen(function*() {
  const base = yield* Visible.dir("skein-sandbox-")
  const ws = join(base, "ws")
  const outside = join(base, "outside")
  const home = join(base, "home")
  const skeinHome = join(home, ".skein")
  for (const dir of [ws, outside, join(home, ".ssh"), join(home, ".aws"), skeinHome, join(home, ".config", "gh")]) mkdirSync(dir, { recursive: true })
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY\n")
  writeFileSync(join(home, ".aws", "credentials"), "aws_secret_access_key = AKIASECRET\n")
  writeFileSync(join(home, ".netrc"), "machine example.com password hunter2\n")
  writeFileSync(join(home, ".git-credentials"), "https://user:tok@example.com\n")
  writeFileSync(join(home, ".config", "gh", "hosts.yml"), "oauth_token: gho_secret\n")
  writeFileSync(join(skeinHome, "config.json"), "{\"providers\": {\"x\": {\"apiKey\": \"sk-skein\"}}}\n")
  writeFileSync(join(home, "notes.txt"), "readable\n")
  return { base, ws, outside, home, skeinHome }
})

const session = (settings: Partial<Settings.Settings>, w: { readonly ws: string; readonly home: string; readonly skeinHome: string }, roots?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const manager = yield* Sandbox.make({ ...Settings.DEFAULT, ...settings }, { skeinHome: w.skeinHome, userHome: w.home })
    return yield* manager.session({ cwd: w.ws, roots: roots ?? [w.ws] })
  })

/** The contents of a file once a command has written it (polled on native time, up to 20 s). */
const waitForFile = (path: string) =>
  Effect.callback<string>((resume) => {
    let tries = 0
    const poll = () => {
      if (existsSync(path) && readFileSync(path, "utf8") !== "") return resume(Effect.succeed(readFileSync(path, "utf8")))
      if (++tries > 1000) return resume(Effect.die(new Error(`${path} was never written`)))
      timer = setTimeout(poll, 20)
    }
    let timer = setTimeout(poll, 0)
    return Effect.sync(() => clearTimeout(timer))
  })

const sh = (sandbox: SessionSandbox, cwd: string, command: string, options: { readonly readOnly?: boolean } = {}) =>
  Bwrap.run(sandbox, command, { cwd, ...options })

Bwrap.describeWithBwrap("sandbox: files", () => {
  it.live("writes go to the roots and the private /tmp only, whatever the command", () =>
    Effect.gen(function*() {
      const w = yield* world
      const sandbox = yield* session({}, w)
      const ran = yield* sh(sandbox, w.ws, [
        `echo in > inside.txt && echo wrote-inside`,
        `echo out > ${w.outside}/escape.txt || echo refused-outside`,
        `echo home > ${w.home}/planted.txt || echo refused-home`,
        `echo tmp > /tmp/private.txt && cat /tmp/private.txt`,
        `ln -s ${w.outside} link && echo via-link > link/escape2.txt || echo refused-link`,
        `mv inside.txt ${w.outside}/ || echo refused-move`
      ].join("; "))
      assert.include(ran.output, "wrote-inside")
      assert.include(ran.output, "refused-outside")
      assert.include(ran.output, "refused-home")
      assert.include(ran.output, "refused-link")
      assert.include(ran.output, "refused-move")
      assert.include(ran.output, "Read-only file system")
      assert.include(ran.output, "tmp\n")
      assert.strictEqual(readFileSync(join(w.ws, "inside.txt"), "utf8"), "in\n")
      assert.isFalse(existsSync(join(w.outside, "escape.txt")))
      assert.isFalse(existsSync(join(w.outside, "escape2.txt")))
      assert.isFalse(existsSync(join(w.home, "planted.txt")))
      // The private /tmp is not the machine's.
      assert.isFalse(existsSync("/tmp/private.txt"))
    }))

  it.live("a command allowed because it only reads cannot write even inside", () =>
    Effect.gen(function*() {
      const w = yield* world
      const sandbox = yield* session({}, w)
      const ran = yield* sh(sandbox, w.ws, "echo x > inside.txt || echo refused; cat /dev/null", { readOnly: true })
      assert.include(ran.output, "refused")
      assert.isFalse(existsSync(join(w.ws, "inside.txt")))
    }))

  it.live("credential files, Skein's home and configured places are unreadable; the rest of the home is readable", () =>
    Effect.gen(function*() {
      const w = yield* world
      const extra = join(w.home, "private")
      mkdirSync(extra)
      writeFileSync(join(extra, "secret.txt"), "configured secret\n")
      symlinkSync(join(w.home, ".aws", "credentials"), join(w.ws, "creds"))
      const sandbox = yield* session({ denyRead: [extra] }, w)
      const ran = yield* sh(sandbox, w.ws, [
        `cat ${w.home}/.ssh/id_ed25519 ${w.home}/.aws/credentials ${w.home}/.netrc ${w.home}/.git-credentials ${w.home}/.config/gh/hosts.yml`,
        `cat ${w.skeinHome}/config.json ${extra}/secret.txt creds`,
        `ls -A ${w.home}/.ssh ${w.skeinHome}`,
        `cat ${w.home}/notes.txt`,
        `echo x > ${w.home}/.ssh/authorized_keys || echo refused-ssh`
      ].join("; "))
      for (const secret of ["PRIVATE KEY", "AKIASECRET", "hunter2", "user:tok", "gho_secret", "sk-skein", "configured secret"]) {
        assert.notInclude(ran.output, secret)
      }
      assert.include(ran.output, "readable\n")
      assert.include(ran.output, "refused-ssh")
    }))

  it.live("git's configuration and hooks cannot be planted or moved away; commits still work", () =>
    Effect.gen(function*() {
      const w = yield* world
      execFileSync("git", ["init", "-q", w.ws])
      execFileSync("git", ["-C", w.ws, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "first"])
      const config = readFileSync(join(w.ws, ".git", "config"), "utf8")
      const sandbox = yield* session({}, w)
      const ran = yield* sh(sandbox, w.ws, [
        `printf '#!/bin/sh\\ntouch ${w.outside}/pwned\\n' > .git/hooks/pre-commit || echo refused-hook`,
        `git config core.hooksPath /tmp/hooks || echo refused-config`,
        `mv .git .git-old || echo refused-move`,
        `mv .git/hooks .git/hooks-old || echo refused-move-hooks`,
        `rm -rf .git/hooks || echo refused-remove`,
        `echo hi > a.txt && git add a.txt && git -c user.email=a@b -c user.name=a commit -q -m second && echo committed`
      ].join("; "))
      for (const refused of ["refused-hook", "refused-config", "refused-move", "refused-move-hooks", "refused-remove", "committed"]) assert.include(ran.output, refused)
      assert.strictEqual(readFileSync(join(w.ws, ".git", "config"), "utf8"), config)
      assert.isFalse(existsSync(join(w.ws, ".git", "hooks", "pre-commit")))
      assert.include(execFileSync("git", ["-C", w.ws, "log", "--oneline"], { encoding: "utf8" }), "second")
    }))

  it.live("a repository without a hooks directory gets none planted", () =>
    Effect.gen(function*() {
      const w = yield* world
      execFileSync("git", ["init", "-q", w.ws])
      execFileSync("rm", ["-rf", join(w.ws, ".git", "hooks")])
      const sandbox = yield* session({}, w)
      const ran = yield* sh(sandbox, w.ws, "mkdir -p .git/hooks; echo x > .git/hooks/post-checkout || echo refused")
      assert.include(ran.output, "refused")
      assert.isFalse(existsSync(join(w.ws, ".git", "hooks", "post-checkout")))
    }))
})

Bwrap.describeWithBwrap("sandbox: a workspace under /tmp", () => {
  /** A directory in the machine's /tmp (where the sandbox puts a private one), removed with the scope. */
  const inTmp = Effect.acquireRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "skein-sandbox-ws-")))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

  it.live("is there as it is: its files read and written, its repository used; the rest of /tmp stays private", () =>
    Effect.gen(function*() {
      const w = yield* world
      const ws = yield* inTmp
      const sibling = yield* inTmp
      writeFileSync(join(ws, "a.txt"), "in the workspace\n")
      writeFileSync(join(sibling, "other.txt"), "another's\n")
      execFileSync("git", ["init", "-q", ws])
      const sandbox = yield* session({}, { ...w, ws })
      const ran = yield* sh(sandbox, ws, [
        "pwd",
        "cat a.txt",
        "echo made > b.txt && git add a.txt b.txt && git -c user.name=t -c user.email=t@t commit -qm x && git log --oneline | wc -l",
        // One pipe for both: cat's message and the echo after it arrive in the order written.
        `cat ${sibling}/other.txt 2>&1 || echo private`
      ].join("; "))
      assert.strictEqual(ran.code, 0, ran.output)
      assert.strictEqual(ran.output, `${ws}\nin the workspace\n1\ncat: ${sibling}/other.txt: No such file or directory\nprivate\n`)
      assert.strictEqual(readFileSync(join(ws, "b.txt"), "utf8"), "made\n")
    }))

  it.live("a root that holds the sandbox's runtime directory (/tmp itself) does not show it: no command rewrites the seccomp filter", () =>
    Effect.gen(function*() {
      const w = yield* world
      const tmp = realpathSync(tmpdir())
      const runtime = join(tmp, `skein-sandbox-${process.getuid?.() ?? "user"}`)
      const socket = join(w.outside, "daemon.sock")
      const server = net.createServer((c) => c.end("daemon answered\n"))
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => void server.listen(socket, () => resume(Effect.void))),
        () => Effect.sync(() => server.close())
      )
      const sandbox = yield* session({}, { ...w, ws: tmp }, [tmp])
      // Opened for appending nothing: a filter that could be written is found without harming
      // another Skein's (another test process's) that may live there too.
      const first = yield* sh(sandbox, tmp, `ls -A ${runtime} | wc -l; for f in ${runtime}/*/seccomp.bpf; do : >> "$f" && echo writable "$f"; done 2>/dev/null; true`)
      assert.isTrue(existsSync(runtime))
      assert.strictEqual(first.output, "0\n")
      // The next command is started with the filter as it was: unix sockets are still refused.
      const next = yield* sh(sandbox, tmp, `${Visible.node()} -e 'require("net").connect(${JSON.stringify(socket)}).on("data", (d) => process.stdout.write(d)).on("error", (e) => console.log("refused", e.code))'`)
      assert.strictEqual(next.code, 0, next.output)
      assert.include(next.output, "refused EPERM")
    }))
})

Bwrap.describeWithBwrap("sandbox: processes and environment", () => {
  it.live("a daemon a command starts is still there when the command's exit is seen (to be reported), and gone with the call", () =>
    Effect.gen(function*() {
      const w = yield* world
      const sandbox = yield* session({}, w)
      const arg = uniqueArg()
      let left: ReadonlyArray<number> = []
      const ran = yield* Bwrap.run(sandbox, `setsid sleep ${arg} > /dev/null 2>&1 < /dev/null & (nohup sleep ${arg} >/dev/null 2>&1 &); sleep 0.2; echo started`, {
        cwd: w.ws,
        // Right after the command's exit, before the tree is terminated by Skein: the sandbox's
        // init waits for the daemons instead of taking them with it unseen.
        onExit: () => Effect.sync(() => void (left = survivors(arg)))
      })
      assert.include(ran.output, "started")
      assert.strictEqual(ran.code, 0)
      assert.strictEqual(left.length, 2)
      assert.deepStrictEqual(survivors(arg), [])
    }))

  it.live("the process sees only its own processes and none of Skein's environment it was not given", () =>
    Effect.gen(function*() {
      const w = yield* world
      const sandbox = yield* session({}, w)
      const ran = yield* Bwrap.run(sandbox, `ls /proc | grep -c '^[0-9]' ; echo "agent=[$SSH_AUTH_SOCK] tmp=$TMPDIR"; ls -A /run | wc -l`, {
        cwd: w.ws,
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", SSH_AUTH_SOCK: "/run/user/1000/ssh-agent.sock" }
      })
      const [count] = ran.output.trim().split("\n")
      assert.isBelow(Number(count), 10)
      assert.include(ran.output, "agent=[] tmp=/tmp")
      assert.match(ran.output, /\n0\n$/)
    }))

  it.live("unix sockets cannot be opened (an agent's or a daemon's socket is not reached)", () =>
    Effect.gen(function*() {
      const w = yield* world
      const path = join(w.outside, "daemon.sock")
      const server = net.createServer((c) => c.end("daemon answered\n"))
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => void server.listen(path, () => resume(Effect.void))),
        () => Effect.sync(() => server.close())
      )
      const sandbox = yield* session({}, w)
      const node = Visible.node()
      const ran = yield* sh(sandbox, w.ws, `${node} -e 'require("net").connect(${JSON.stringify(path)}).on("data", (d) => process.stdout.write(d)).on("error", (e) => console.log("refused", e.code))'`)
      assert.include(ran.output, "refused EPERM")
      assert.notInclude(ran.output, "daemon answered")
    }))
})

/** An HTTP server on the host at `host`, answering `hello from <host>`. */
const hostServer = (host: string) =>
  Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((_, res) => res.end(`hello from ${host}\n`))
      server.listen(0, host, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.sync(() => server.close())
  ).pipe(Effect.map((server) => (server.address() as net.AddressInfo).port))

Bwrap.describeWithBwrap("sandbox: network", () => {
  it.live("a listener on the machine's loopback is not reached, nor anything else", () =>
    Effect.gen(function*() {
      const w = yield* world
      const port = yield* hostServer("127.0.0.1")
      const sandbox = yield* session({}, w)
      const ran = yield* sh(sandbox, w.ws, `curl -sS --max-time 5 http://127.0.0.1:${port}/ ; curl -sS --max-time 5 http://example.com/ ; echo done`)
      assert.notInclude(ran.output, "hello from")
      assert.include(ran.output, "done")
    }))

  it.live("the commands of one session share a network namespace; another session's do not", () =>
    Effect.gen(function*() {
      const w = yield* world
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: w.skeinHome, userHome: w.home })
      const one = yield* manager.session({ cwd: w.ws, roots: [w.ws] })
      const other = yield* manager.session({ cwd: w.ws, roots: [w.ws] })
      const node = Visible.node()
      const serve = `${node} -e 'const s = require("http").createServer((q, r) => r.end("served in the session\\n")).listen(0, "127.0.0.1", () => { require("fs").writeFileSync("port", String(s.address().port)); setTimeout(() => process.exit(0), 20000) })'`
      const server = yield* Effect.forkChild(Bwrap.run(one, serve, { cwd: w.ws }))
      const port = yield* waitForFile(join(w.ws, "port"))
      const same = yield* sh(one, w.ws, `curl -sS --max-time 5 http://127.0.0.1:${port}/`)
      const different = yield* sh(other, w.ws, `curl -sS --max-time 5 http://127.0.0.1:${port}/ || echo unreachable`)
      const host = yield* Effect.promise(() =>
        new Promise<string>((resolve) => {
          const c = net.connect(Number(port), "127.0.0.1").on("connect", () => resolve("reached")).on("error", () => resolve("unreachable"))
          c.unref()
        })
      )
      assert.include(same.output, "served in the session")
      assert.include(different.output, "unreachable")
      assert.strictEqual(host, "unreachable")
      yield* Fiber.interrupt(server)
    }))

  it.live("through the proxy: an allowed host answers (plain and CONNECT), another is refused as blocked by the sandbox", () =>
    Effect.gen(function*() {
      const w = yield* world
      const allowed = yield* hostServer("127.0.0.2")
      const denied = yield* hostServer("127.0.0.3")
      const sandbox = yield* session({ allow: ["127.0.0.2"] }, w)
      const ran = yield* sh(sandbox, w.ws, [
        `curl -sS --max-time 10 http://127.0.0.2:${allowed}/`,
        `curl -sS --max-time 10 --proxytunnel http://127.0.0.2:${allowed}/`,
        `curl -sS --max-time 10 http://127.0.0.3:${denied}/`,
        `curl -sS --max-time 10 --proxytunnel http://127.0.0.3:${denied}/`,
        `curl -sS --max-time 10 --noproxy '*' http://127.0.0.2:${allowed}/ || echo direct-refused`
      ].join("; "))
      assert.strictEqual(ran.output.split("hello from 127.0.0.2").length - 1, 2)
      assert.notInclude(ran.output, "hello from 127.0.0.3")
      assert.include(ran.output, "Skein's sandbox blocked 127.0.0.3")
      assert.include(ran.output, "CONNECT tunnel failed, response 403")
      assert.include(ran.output, "direct-refused")
    }))
})
