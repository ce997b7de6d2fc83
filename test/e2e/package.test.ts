/**
 * End to end: Skein as npm publishes it. Packs Skein (`npm pack`, whose `prepare` builds the
 * bundle and the declaration files) once, then:
 *
 * - checks the tarball: small, what it ships (no sources), no install-time scripts, no
 *   runtime dependencies;
 * - installs it globally in a clean prefix with a clean npm cache, offline (the package needs
 *   nothing from a registry), and runs the installed `skein`: `--version`, `acp` through the
 *   official ACP client library, `run`, `serve`;
 * - starts it as an editor that found it in the ACP registry does, with `npm exec`;
 * - installs it in a project that embeds it, type-checks the README's programs there (the files
 *   `examples/*.ts`, which the README shows verbatim: test/e2e/readme.test.ts) under strict
 *   settings, Skein's declaration files included, and runs the embedding example.
 *
 * Nothing here is timed: packing and type-checking take minutes on a busy machine, so the tests
 * have no time limit of their own, and each command only a bound far beyond any real run, which
 * stops one that hangs.
 *
 * The pack runs in a copy of the sources (so this checkout's dist/, which other tests spawn,
 * is never rebuilt under them). The embedding project gets Effect (Skein's peer dependency) by
 * links to this checkout's node_modules instead of a download; that the library imports
 * nothing else is checked against its bundle.
 */
import { spawn, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectClean, message, NODE, REPO_ROOT, useAgents } from "../support/AgentProcess.ts"
import { checkConsumer } from "../support/ConsumerTypes.ts"

const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-package-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** The tarball stays small: it is what every `npx skein@VERSION acp` downloads. */
const MAX_TARBALL_BYTES = 5 * 1024 * 1024

/** Far beyond any real run of a command here: only a hang reaches it. */
const HANG_MS = 20 * 60_000

/** Runs a command; fails the test with its output when it exits non-zero. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) => {
  const r = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", timeout: HANG_MS })
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`)
  return r
}

/**
 * The packages a bundle imports (`effect/Layer` → `effect`, `@effect/platform-node/X` →
 * `@effect/platform-node`): by `import` in an ES module, by `require` in a CommonJS one (whose
 * strings may well contain the text of an import declaration).
 */
const importedPackages = (bundle: string, format: "esm" | "cjs") => {
  const names = new Set<string>()
  const imports = format === "esm" ? /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"'./][^"']*)["']/g : /\brequire\(\s*["']([^"'./][^"']*)["']\s*\)/g
  for (const m of bundle.matchAll(imports)) {
    const spec = m[1]!
    if (spec.startsWith("node:") || builtinModules.includes(spec)) continue
    const parts = spec.split("/")
    names.add(spec.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
  }
  return [...names].sort()
}

/** Every file under `dir`, relative to it. */
const filesUnder = (dir: string, prefix = ""): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`]
  )

/**
 * An environment without the machine's provider keys, Skein settings and npm settings, with
 * Node 24 first on PATH (the installed `skein` runs on `env node`), then `bin`.
 */
const cleanEnv = (options: { readonly bin?: string; readonly env?: Record<string, string> } = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_|npm_)/i.test(key)) env[key] = value
  }
  const path = [dirname(NODE), ...(options.bin !== undefined ? [options.bin] : []), process.env.PATH ?? ""].join(delimiter)
  return { ...env, SKEIN_NO_CODE_CACHE: "1", ...options.env, PATH: path }
}

let tarball = ""
let manifest: Record<string, any> = {}
let unpacked = ""

beforeAll(() => {
  // Pack a copy of the sources; `prepare` builds dist/ there, declarations included.
  const source = join(root, "skein")
  for (const entry of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "README.md", "LICENSE", "scripts", "src", "demo"]) {
    cpSync(join(REPO_ROOT, entry), join(source, entry), { recursive: true })
  }
  // The checkout's declarations, with the hash of what they were made from: `prepare` emits them
  // again only if the sources changed since (scripts/declarations.mjs), as in any checkout.
  for (const entry of ["dist/types", "dist/types.inputs"]) {
    if (existsSync(join(REPO_ROOT, entry))) cpSync(join(REPO_ROOT, entry), join(source, entry), { recursive: true })
  }
  symlinkSync(join(REPO_ROOT, "node_modules"), join(source, "node_modules"))
  const packs = join(root, "packs")
  mkdirSync(packs)
  run("npm", ["pack", "--pack-destination", packs], source, { SKEIN_NO_CODE_CACHE: "1" })
  tarball = join(packs, readdirSync(packs).find((name) => name.endsWith(".tgz"))!)
  unpacked = join(root, "unpacked")
  mkdirSync(unpacked)
  run("tar", ["-xzf", tarball, "-C", unpacked, "--strip-components=1"], root)
  manifest = JSON.parse(readFileSync(join(unpacked, "package.json"), "utf8"))
}, 0)

describe("e2e: Skein as a package", () => {
  const agents = useAgents()

  it("is a small, publishable package: the built bundles and declarations, no sources, nothing run or fetched at install", () => {
    expect(statSync(tarball).size).toBeLessThan(MAX_TARBALL_BYTES)
    expect(manifest.private).toBeUndefined()
    expect(manifest.name).toBe("skein")
    // A CommonJS entry: Node starts it sooner than an ES module (adr/0053).
    expect(manifest.bin).toEqual({ skein: "dist/skein.cjs" })
    expect(manifest.engines).toEqual({ node: ">=22.19" })
    expect(manifest.license).toBe("MIT")
    // npm runs these when the package is installed from a registry or a tarball; `prepare` it does not.
    for (const script of ["preinstall", "install", "postinstall", "prepublish"]) expect(manifest.scripts?.[script]).toBeUndefined()
    // The CLI is one bundle: installing it downloads nothing else.
    expect(manifest.dependencies ?? {}).toEqual({})
    expect(manifest.optionalDependencies ?? {}).toEqual({})
    // Peers are for embedding programs only, so `npx skein` never installs them.
    for (const name of Object.keys(manifest.peerDependencies ?? {})) expect(manifest.peerDependenciesMeta?.[name]?.optional).toBe(true)

    const files = filesUnder(unpacked)
    expect(files).toEqual(expect.arrayContaining([
      "LICENSE",
      "README.md",
      "package.json",
      "dist/skein.cjs",
      "dist/skein.mjs",
      "dist/skein-main.cjs",
      "dist/skein-remote.cjs",
      "dist/skein-markdown.cjs",
      "dist/index.mjs",
      "dist/types/index.d.ts"
    ]))
    expect(files.filter((file) => !/^(LICENSE|README\.md|package\.json|dist\/.+)$/.test(file))).toEqual([])
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([])
    expect(files.some((file) => file === "binding.gyp" || file.endsWith(".node"))).toBe(false)
    for (const launcher of ["skein.cjs", "skein.mjs"]) {
      expect(statSync(join(unpacked, "dist", launcher)).mode & 0o111).not.toBe(0)
      expect(readFileSync(join(unpacked, "dist", launcher), "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true)
    }

    // The CLI bundles import no package (but the native speed-ups `ws` tries to load, inside a
    // try, and goes on without); the library only its peers (Effect), in its chunks too.
    for (const bundle of ["skein-main.cjs", "skein-remote.cjs"]) {
      const text = readFileSync(join(unpacked, "dist", bundle), "utf8")
      const optional = (name: string) => new RegExp(`try\\{let \\w+=require\\("${name}"\\)`).test(text)
      expect(importedPackages(text, "cjs").filter((name) => !(["bufferutil", "utf-8-validate"].includes(name) && optional(name)))).toEqual([])
    }
    const library = files.filter((file) => file === "dist/index.mjs" || (file.startsWith("dist/lib/") && file.endsWith(".mjs")))
    const imported = new Set(library.flatMap((file) => importedPackages(readFileSync(join(unpacked, file), "utf8"), "esm")))
    expect([...imported].filter((name) => manifest.peerDependencies?.[name] === undefined)).toEqual([])
    // Only the PostgreSQL store needs @effect/sql-pg: the entry point does not import it.
    expect(importedPackages(readFileSync(join(unpacked, "dist", "index.mjs"), "utf8"), "esm")).not.toContain("@effect/sql-pg")
  })

  it("installs globally in a clean prefix, offline with an empty cache, and the installed skein works: --version, acp, run, serve", async () => {
    const prefix = join(root, "prefix")
    const cache = join(root, "cache-global")
    run("npm", ["install", "-g", "--prefix", prefix, "--cache", cache, "--offline", "--no-audit", "--no-fund", tarball], root, cleanEnv())
    const skein = join(prefix, "bin", "skein")
    expect(existsSync(skein)).toBe(true)
    const env = cleanEnv({ bin: join(prefix, "bin") })
    const work = join(root, "work")
    mkdirSync(work)

    const version = spawnSync(skein, ["--version"], { cwd: work, env, encoding: "utf8", timeout: HANG_MS })
    expect({ status: version.status, stdout: version.stdout }).toEqual({ status: 0, stdout: `${manifest.version}\n` })

    // acp, driven by the official client library; every line it writes is checked against the ACP schema.
    const script = { turns: [{ calls: [[{ text: "Installed and answering." }]] }] }
    const agent = agents.start({ script, command: ({ home, script }) => [skein, "acp", "--home", home, "--script", script!], env })
    const init = await agent.initialize()
    expect(init.agentInfo).toMatchObject({ name: "skein", version: manifest.version })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "hello")).stopReason).toBe("end_turn")
    expect(agent.updates(sessionId)).toEqual([message("Installed and answering.", "m1.1")])
    expectClean(agent)

    // run: one turn at the command line.
    const home = join(root, "home-run")
    const scriptFile = join(root, "run-script.json")
    writeFileSync(scriptFile, JSON.stringify(script))
    const ran = spawnSync(skein, ["run", "--home", home, "--script", scriptFile, "hello"], { cwd: work, env, encoding: "utf8", timeout: HANG_MS })
    expect({ status: ran.status, stdout: ran.stdout }).toEqual({ status: 0, stdout: "Installed and answering.\n" })

    // serve: listens on its unix socket, and shuts down cleanly on SIGTERM.
    const socket = join(root, "serve.sock")
    const serve = spawn(skein, ["serve", "--home", join(root, "home-serve"), "--script", scriptFile, "--listen", `unix:${socket}`], { cwd: work, env })
    let stderr = ""
    serve.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => serve.on("exit", (code) => resolve(code)))
    try {
      await new Promise<void>((resolve, reject) => {
        const check = setInterval(() => {
          if (stderr.includes("listening on")) {
            clearInterval(check)
            resolve()
          } else if (serve.exitCode !== null) {
            clearInterval(check)
            reject(new Error(`skein serve exited ${serve.exitCode}: ${stderr}`))
          }
        }, 20)
      })
      expect(stderr).toContain(`skein serve: listening on unix:${socket}`)
      expect(existsSync(socket)).toBe(true)
      serve.kill("SIGTERM")
      expect(await exited).toBe(0)
    } finally {
      serve.kill("SIGKILL")
    }
  }, 0)

  it("starts an agent with `npm exec --yes --package=<tarball> -- skein acp`, as an editor's registry entry does, from an empty cache, offline", async () => {
    const cache = join(root, "cache-exec")
    const env = cleanEnv({ env: { npm_config_cache: cache, npm_config_offline: "true", npm_config_update_notifier: "false" } })
    const agent = agents.start({
      script: { turns: [{ calls: [[{ text: "Started by npm exec." }]] }] },
      // `--yes`: what an editor passes (npm 11 cancels an install it cannot ask about).
      command: ({ home, script }) => ["npm", "exec", "--yes", `--package=${tarball}`, "--", "skein", "acp", "--home", home, "--script", script!],
      env
    })
    const init = await agent.initialize()
    expect(init.agentInfo).toMatchObject({ name: "skein", version: manifest.version })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "hello")).stopReason).toBe("end_turn")
    expect(agent.updates(sessionId)).toEqual([message("Started by npm exec.", "m1.1")])
    expectClean(agent)
    // stdin's end stops the agent, and npm with it: nothing is left running.
    agent.child.stdin.end()
    expect(await agent.waitExit(20_000)).toEqual({ code: 0, signal: null })
  }, 0)

  it("installs in a project that embeds it: the README's programs type-check and run", () => {
    const app = join(root, "app")
    const installed = join(app, "node_modules", "skein")
    mkdirSync(installed, { recursive: true })
    run("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"], app)
    expect(manifest.exports["."].types).toBe("./dist/types/index.d.ts")
    readFileSync(join(installed, manifest.exports["."].types), "utf8")
    // Its peers (Effect and the Node platform), as the program that embeds Skein has them.
    for (const name of [...Object.keys(manifest.peerDependencies), "typescript", "@types/node"]) {
      mkdirSync(dirname(join(app, "node_modules", name)), { recursive: true })
      symlinkSync(join(REPO_ROOT, "node_modules", name), join(app, "node_modules", name))
    }
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module", dependencies: { skein: `file:${tarball}` } }))
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2023",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        types: ["node"],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noImplicitOverride: true,
        noEmit: true,
        // Skein's declarations are checked too, not only their use.
        skipLibCheck: false
      },
      include: ["*.ts"]
    }))

    // The README's programs, as they are.
    const examples = readdirSync(join(REPO_ROOT, "examples")).filter((name) => name.endsWith(".ts"))
    expect(examples).toContain("embedding.ts")
    for (const name of examples) writeFileSync(join(app, name), readFileSync(join(REPO_ROOT, "examples", name), "utf8"))
    // As `tsc -p app` would, as far as Skein is concerned: its declarations in full, Effect's and
    // Node's only where used (test/support/ConsumerTypes.ts).
    expect(checkConsumer(app, "skein")).toBe("")

    // The embedding example runs (its script answers; its home is a temporary folder, not $HOME's).
    const home = join(root, "home")
    const temp = join(root, "tmp")
    mkdirSync(home)
    mkdirSync(temp)
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SKEIN_")))
    const ran = spawnSync(NODE, ["embedding.ts"], { cwd: app, env: { ...inherited, HOME: home, TMPDIR: temp }, encoding: "utf8", timeout: HANG_MS })
    expect({ status: ran.status, stdout: ran.stdout }).toEqual({ status: 0, stdout: "It says hello.\n[end_turn]\n" })
    expect(readdirSync(home)).toEqual([])
    const [made] = readdirSync(temp)
    expect(readdirSync(join(temp, made!, "sessions")).filter((name) => name.endsWith(".ndjson")).length).toBe(1)
  }, 0)
})
