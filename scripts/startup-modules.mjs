// What the CLI bundles evaluate at start-up, from esbuild's metafile, and what they must not.
// esbuild turns a module reached only through `import()` into one evaluated when that import
// runs; every other module of the bundle is evaluated when the bundle loads. scripts/build.mjs
// fails a build that evaluates one of these too early; test/e2e/startup-modules.test.ts checks
// the sources the same way.

/** The modules reached from `roots` through static imports only: those evaluated with them. */
export const staticallyReached = (metafile, roots) => {
  const seen = new Set(roots)
  const queue = [...roots]
  while (queue.length > 0) {
    for (const imported of metafile.inputs[queue.pop()]?.imports ?? []) {
      if (imported.kind === "dynamic-import" || imported.external === true || seen.has(imported.path)) continue
      seen.add(imported.path)
      queue.push(imported.path)
    }
  }
  return seen
}

/**
 * What `skein acp` evaluates before it answers `session/new`: the entry, then the runtime it
 * imports right after answering `initialize` (src/cli/acp.ts) and the providers' HTTP client the
 * registry imports for a session (src/providers/Registry.ts).
 */
export const ACP_START = ["src/cli/main.ts", "src/Local.ts", "src/providers/Dialects.ts"]

/** Modules no start-up evaluates (each bundle, from its entry): a process that exports telemetry loads the exporter. */
export const NEVER_AT_START = [
  { why: "the telemetry exporter", test: (input) => input === "src/telemetry/Otlp.ts" || /effect\/dist\/observability\//.test(input) }
]

/**
 * Modules `skein acp` does not evaluate before `session/new` is answered: the ACP schemas of the
 * client's answers (permission, files, terminals), of an agent's answers to the session methods
 * (with the modes and config options in them) and of `session/update`, which Skein writes
 * without them and only external agents decode, and nothing before a turn needs; the
 * checkpoints' shadow repository and `/rewind` (with git's runner and the object store), which a
 * session's first checkpoint, a rewind or a deletion loads.
 */
export const NOT_BEFORE_SESSION = [
  { why: "the ACP schemas of answers and session updates", test: (input) => /^src\/acp\/(Client|Answers|Config|Update|Protocol|index)\.ts$/.test(input) },
  { why: "the checkpoints' shadow repository and /rewind", test: (input) => /^src\/checkpoints\/(Shadow|Rewind|Git|Objects)\.ts$/.test(input) }
]

/**
 * The Schemas built at their first use (src/Lazy.ts) that `skein acp` may have built when it
 * answers `session/new`: the requests it decoded (`initialize`, `session/new` with the MCP server
 * shapes in it). The vocabulary, the log's events, the session protocol and every other request
 * wait for the work that uses them. The build's warm-up run (scripts/warm-code-cache.mjs) reports
 * what it had built at that answer, and the build fails on any other; test/e2e/startup.test.ts
 * checks the same.
 */
export const SCHEMAS_BEFORE_SESSION = [
  "acp.InitializeRequest",
  "acp.ClientCapabilities",
  "acp.FileSystemCapabilities",
  "acp.AuthCapabilities",
  "acp.Implementation",
  "acp.NewSessionRequest",
  "acp.directories",
  "acp.mcpServers",
  "acp.McpServer",
  "acp.McpServerHttp",
  "acp.McpServerSse",
  "acp.McpServerStdio",
  "acp.HttpHeader"
]

/** The Schemas of `built` that start-up may not build. */
export const unexpectedSchemas = (built) => built.filter((name) => !SCHEMAS_BEFORE_SESSION.includes(name))

/** Each rule broken by `reached`: `why` and the first inputs that break it. */
export const broken = (reached, rules) =>
  rules.flatMap((rule) => {
    const inputs = [...reached].filter(rule.test)
    return inputs.length === 0 ? [] : [{ why: rule.why, inputs: inputs.slice(0, 3) }]
  })
