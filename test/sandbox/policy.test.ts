/**
 * The sandbox's pure parts: the setting and config.json, the proxy's host rules, what tells
 * the model it was the sandbox, the mount order, the environment, the seccomp program.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Blocked from "../../src/sandbox/Blocked.ts"
import * as Env from "../../src/sandbox/Env.ts"
import * as Guarantees from "../../src/sandbox/Guarantees.ts"
import * as Hosts from "../../src/sandbox/Hosts.ts"
import * as Policy from "../../src/sandbox/Policy.ts"
import * as Seccomp from "../../src/sandbox/Seccomp.ts"
import * as Settings from "../../src/sandbox/Settings.ts"

describe("Settings", () => {
  it("reads a mode or an object from config.json, expanding ~/ paths", () => {
    assert.deepStrictEqual(Settings.fromConfig(undefined, "/home/u"), Settings.DEFAULT)
    assert.deepStrictEqual(Settings.fromConfig("off", "/home/u"), Settings.ofMode("off"))
    assert.deepStrictEqual(
      Settings.fromConfig({ mode: "required", network: { allow: ["Registry.npmjs.org.", "*.github.com"] }, denyRead: ["~/work/keys"], allowWrite: ["/opt/cache/"] }, "/home/u"),
      { mode: "required", allow: ["registry.npmjs.org", "*.github.com"], denyRead: ["/home/u/work/keys"], allowWrite: ["/opt/cache"] }
    )
  })

  it("refuses what it does not understand instead of weakening anything", () => {
    for (const bad of ["on", 1, [], { mode: "yes" }, { network: { allow: "x" } }, { network: { allow: ["a b"] } }, { denyRead: ["relative/path"] }, { allowWrite: ["~other/x"] }, { nework: {} }, { network: { deny: [] } }]) {
      assert.property(Settings.fromConfig(bad, "/home/u"), "error", JSON.stringify(bad))
    }
  })

  it("the flag wins over the environment, which wins over the file", () => {
    const file = { ...Settings.DEFAULT, mode: "required" as const, allow: ["a.com"] }
    assert.deepStrictEqual(Settings.resolve({ file }), file)
    assert.strictEqual((Settings.resolve({ env: "off", file }) as Settings.Settings).mode, "off")
    assert.strictEqual((Settings.resolve({ flag: "auto", env: "off", file }) as Settings.Settings).mode, "auto")
    assert.deepStrictEqual((Settings.resolve({ flag: "auto", file }) as Settings.Settings).allow, ["a.com"])
    assert.property(Settings.resolve({ flag: "maybe", file }), "error")
    assert.property(Settings.resolve({ env: "1", file }), "error")
  })
})

describe("Hosts", () => {
  it("admits exact names and subdomains of a wildcard, nothing else", () => {
    const allow = ["registry.npmjs.org", "*.github.com", "127.0.0.2"]
    assert.strictEqual(Hosts.admittedBy(allow, "REGISTRY.npmjs.org."), "registry.npmjs.org")
    assert.strictEqual(Hosts.admittedBy(allow, "api.github.com"), "*.github.com")
    assert.strictEqual(Hosts.admittedBy(allow, "a.b.github.com"), "*.github.com")
    assert.strictEqual(Hosts.admittedBy(allow, "127.0.0.2"), "127.0.0.2")
    for (const host of ["github.com", "evilgithub.com", "npmjs.org", "registry.npmjs.org.evil.com", "127.0.0.1", "", "x"]) {
      assert.isUndefined(Hosts.admittedBy(allow, host), host)
    }
  })

  it("a name that resolves to this machine or its link is refused unless that address is named", () => {
    assert.isFalse(Hosts.addressAllowed("*.example.com", "a.example.com", "127.0.0.1"))
    assert.isFalse(Hosts.addressAllowed("metadata.example", "metadata.example", "169.254.169.254"))
    assert.isFalse(Hosts.addressAllowed("x.com", "x.com", "::1"))
    assert.isFalse(Hosts.addressAllowed("x.com", "x.com", "::ffff:127.0.0.1"))
    assert.isFalse(Hosts.addressAllowed("x.com", "x.com", "fe80::1"))
    assert.isFalse(Hosts.addressAllowed("x.com", "x.com", "0.0.0.0"))
    assert.isTrue(Hosts.addressAllowed("x.com", "x.com", "10.1.2.3"))
    assert.isTrue(Hosts.addressAllowed("x.com", "x.com", "93.184.216.34"))
    assert.isTrue(Hosts.addressAllowed("127.0.0.2", "127.0.0.2", "127.0.0.2"))
    assert.isTrue(Hosts.addressAllowed("localhost", "localhost", "127.0.0.1"))
  })

  it("parses CONNECT's authority", () => {
    assert.deepStrictEqual(Hosts.parseAuthority("example.com:443"), { host: "example.com", port: 443 })
    assert.deepStrictEqual(Hosts.parseAuthority("[::1]:8080"), { host: "::1", port: 8080 })
    for (const bad of ["example.com", "example.com:0", "example.com:70000", "a/b:80", ":80"]) assert.isUndefined(Hosts.parseAuthority(bad), bad)
  })
})

describe("Blocked", () => {
  it("recognizes what the sandbox refused and says how to ask", () => {
    const line = Blocked.hint("touch: cannot touch '/etc/x': Read-only file system\n", { outsideAllowed: true, networkAllowed: [] })
    assert.include(line, "Skein's sandbox")
    assert.include(line, "\"sandbox\": false")
    assert.deepStrictEqual(Blocked.refusals("curl: (56) CONNECT tunnel failed, response 403"), ["network"])
    assert.deepStrictEqual(Blocked.refusals("npm ERR! getaddrinfo EAI_AGAIN registry.npmjs.org\nEROFS: read-only"), ["write", "network"])
    assert.include(Blocked.hint("connect: Network is unreachable", { outsideAllowed: false, networkAllowed: [] }), "required")
    assert.isUndefined(Blocked.hint("all tests passed", { outsideAllowed: true, networkAllowed: [] }))
  })
})

describe("Policy", () => {
  const layout: Policy.Layout = {
    cwd: "/home/u/p",
    writable: ["/home/u/p", "/tmp/w"],
    readOnly: false,
    tmp: "/var/run/skein/s1/tmp",
    hiddenDirs: ["/home/u/.ssh", "/home/u/p/.secrets", "/home/u", "/tmp/other"],
    hiddenFiles: ["/home/u/.netrc"],
    git: [{ writable: ["/home/u/p/.git"], readOnly: ["/home/u/p/.git/config", "/home/u/p/.git/hooks"], empty: [] }],
    varRunIsDirectory: false
  }

  it("mounts roots after the read-only root and /tmp, then git's files, then hides secrets", () => {
    const args = Policy.bwrapOptions(layout, { namespaces: "session", seccompFd: 5 })
    const at = (...seq: Array<string>) => {
      for (let i = 0; i < args.length; i++) if (seq.every((s, j) => args[i + j] === s)) return i
      return -1
    }
    assert.isBelow(at("--ro-bind", "/", "/"), at("--bind", "/var/run/skein/s1/tmp", "/tmp"))
    assert.isBelow(at("--bind", "/var/run/skein/s1/tmp", "/tmp"), at("--bind", "/tmp/w", "/tmp/w"))
    assert.isBelow(at("--bind", "/home/u/p", "/home/u/p"), at("--bind", "/home/u/p/.git", "/home/u/p/.git"))
    assert.isBelow(at("--bind", "/home/u/p/.git", "/home/u/p/.git"), at("--ro-bind", "/home/u/p/.git/hooks", "/home/u/p/.git/hooks"))
    assert.isAbove(at("--tmpfs", "/home/u/.ssh"), at("--ro-bind", "/home/u/p/.git/hooks", "/home/u/p/.git/hooks"))
    assert.isAbove(at("--tmpfs", "/home/u/p/.secrets"), -1)
    assert.isAbove(at("--ro-bind", "/dev/null", "/home/u/.netrc"), -1)
    // A hidden place that holds a root stays; one under the replaced /tmp needs no mount.
    assert.strictEqual(at("--tmpfs", "/home/u"), -1)
    assert.strictEqual(at("--tmpfs", "/tmp/other"), -1)
    assert.notInclude(args, "--unshare-net")
    assert.deepStrictEqual(args.slice(-6), ["--chdir", "/home/u/p", "--cap-drop", "ALL", "--seccomp", "5"])
    assert.include(Policy.bwrapOptions(layout, { namespaces: "own" }), "--unshare-net")
  })

  it("/dev: the session's, with one bind, only inside the session's mount namespace; a fresh one otherwise", () => {
    const inSession = Policy.bwrapOptions(layout, { namespaces: "session" }).join(" ")
    const own = Policy.bwrapOptions(layout, { namespaces: "own" }).join(" ")
    assert.include(inSession, "--ro-bind / / --dev-bind /dev /dev --proc /proc")
    assert.notInclude(inSession, "--dev /dev")
    // Outside the session's mount namespace `--dev-bind /dev /dev` would hand over the machine's.
    assert.include(own, "--ro-bind / / --dev /dev --proc /proc")
    assert.notInclude(own, "--dev-bind")
  })

  it("a read-only command gets its roots read-only and no writable git directory", () => {
    const args = Policy.bwrapOptions({ ...layout, readOnly: true }, { namespaces: "session" })
    assert.notInclude(args.join(" "), "--bind /home/u/p ")
    assert.include(args.join(" "), "--ro-bind /home/u/p /home/u/p")
    assert.notInclude(args.join(" "), "--bind /home/u/p/.git")
  })

  it("the command line carries no environment, and reaches the session's namespaces through Skein's descriptors", () => {
    const namespaces = { pid: 4242, userFd: 31, netFd: 32, mntFd: 33 }
    const line = Policy.commandLine({ bwrap: "/usr/bin/bwrap", nsenter: "/usr/bin/nsenter" }, layout, { file: "/bin/bash", args: ["-c", "true"] }, { seccomp: true, namespaces })
    assert.strictEqual(line.file, "/usr/bin/nsenter")
    assert.deepStrictEqual(line.args.slice(0, 6), ["--user=/proc/4242/fd/31", "--net=/proc/4242/fd/32", "--mount=/proc/4242/fd/33", "--preserve-credentials", "--", "/usr/bin/bwrap"])
    assert.include(line.args.join(" "), "--dev-bind /dev /dev")
    // The filter is the one descriptor the chain inherits (bwrap reads and closes it).
    assert.deepStrictEqual(line.args.slice(-6, -4), ["--seccomp", "3"])
    assert.deepStrictEqual(line.args.slice(-4), ["--", "/bin/bash", "-c", "true"])
    assert.notInclude(line.args.join(" "), "--setenv")
  })
})

describe("Env", () => {
  it("drops pointers to agents, sends caches to /tmp, and points every proxy variable at the proxy", () => {
    const env = Env.environment({ PATH: "/bin", SSH_AUTH_SOCK: "/run/x", https_proxy: "http://corp:3128", HOME: "/home/u" }, 41234)
    assert.strictEqual(env["SSH_AUTH_SOCK"], undefined)
    assert.strictEqual(env["TMPDIR"], "/tmp")
    assert.strictEqual(env["HOME"], "/home/u")
    for (const name of ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "npm_config_https_proxy"]) assert.strictEqual(env[name], "http://127.0.0.1:41234")
    assert.strictEqual(env["no_proxy"], Env.NO_PROXY)
    const offline = Env.environment({ PATH: "/bin", HTTPS_PROXY: "http://corp:3128" }, undefined)
    assert.strictEqual(offline["HTTPS_PROXY"], undefined)
  })
})

describe("Seccomp", () => {
  it("is a whole program of 8-byte instructions ending in allow and deny (EPERM)", () => {
    for (const arch of ["x64", "arm64"]) {
      const bytes = Seccomp.program(arch)!
      assert.strictEqual(bytes.length % 8, 0)
      const view = new DataView(bytes.buffer)
      const last = bytes.length / 8 - 1
      assert.strictEqual(view.getUint16(last * 8, true), 0x06)
      assert.strictEqual(view.getUint32(last * 8 + 4, true), 0x00050001)
      assert.strictEqual(view.getUint32((last - 1) * 8 + 4, true), 0x7fff0000)
    }
    assert.isUndefined(Seccomp.program("ia32"))
  })
})

describe("Guarantees", () => {
  it("states what holds in the shape of RFD #1063, honestly for each setting", () => {
    const none = { fsIsolation: "none", netIsolation: "none", processCaps: false } as const
    assert.deepStrictEqual(Guarantees.statement(Settings.ofMode("off"), undefined), { mode: "host", guarantees: none, setting: "off" })
    assert.deepStrictEqual(Guarantees.statement(Settings.DEFAULT, "bwrap is not installed"), { mode: "host", guarantees: none, setting: "auto", fallback: "ask", reason: "bwrap is not installed" })
    // Required holds even without a sandbox: nothing then runs.
    assert.deepStrictEqual(Guarantees.statement(Settings.ofMode("required"), "bwrap is not installed").guarantees, { fsIsolation: "workspace", netIsolation: "denyAll", processCaps: true })
    const open = Guarantees.statement({ ...Settings.DEFAULT, allow: ["registry.npmjs.org"] }, undefined)
    assert.deepStrictEqual(open, {
      mode: "custom",
      mechanism: "bubblewrap",
      guarantees: { fsIsolation: "workspace", netIsolation: "restricted", processCaps: true },
      network: { allow: ["registry.npmjs.org"] },
      setting: "auto",
      fallback: "ask"
    })
  })
})
