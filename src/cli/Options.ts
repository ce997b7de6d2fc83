/**
 * Command-line options shared by the `skein` commands. Each option also has
 * an environment variable; the flag wins.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import { parseArgs } from "node:util"
import { isModeId, type ModeId } from "../Vocabulary.ts"

export class UsageError extends Error {
  override readonly name = "UsageError"
}

export interface Common {
  readonly home: string
  readonly provider: string | undefined
  readonly model: string | undefined
  readonly script: string | undefined
  readonly mode: ModeId | undefined
  readonly maxTurnRequests: number | undefined
  readonly permissionTimeoutMs: number | undefined
  /** Use local files/processes even when the ACP client offers `fs` / `terminal`. */
  readonly localFs: boolean
  readonly localTerminal: boolean
  /** `acp`: longest accepted JSON-RPC line in bytes (longer ones are refused with -32600). */
  readonly maxLineBytes: number | undefined
  /** `acp`: live sessions kept in memory; past it, idle ones are closed (and come back when used). */
  readonly maxLiveSessions: number | undefined
  /** Keep sessions in this PostgreSQL database (`postgres://…`) instead of files under the home. */
  readonly store: string | undefined
  /** `--sandbox` (auto, required, off), else `SKEIN_SANDBOX`: checked with config.json's by `Config.skeinConfig`. */
  readonly sandbox: string | undefined
}

export const HELP = `skein — an ACP coding agent on Effect

Usage:
  skein acp [options]            Serve the Agent Client Protocol over stdio (for editors)
  skein setup [--home DIR]       Choose the model provider, its API key and the model, at a
                                 terminal; checks them, then saves $SKEIN_HOME/config.json
  skein run [options] [PROMPT]   Work in this terminal: with no PROMPT, prompt after prompt in one
                                 session; with a PROMPT (or one piped on stdin), one turn
  skein sessions [list|show ID|rm ID|fork ID [--turn N]]
                                 The saved sessions: list them (--cwd DIR, --limit N, --json),
                                 show one's transcript, delete one, fork one (a new session
                                 with its conversation up to the end of turn N; prints its id)
  skein replay ID|FILE [--acp|--rerun [--cwd DIR]]
                                 Print a saved session's transcript; --acp: the session/update
                                 stream session/load sends; --rerun: run every turn again (model
                                 answers from the log, tools for real) and report where tool
                                 results differ (exit 1 when they do)
  skein doctor [options]         Show the configured providers and models, and what is
                                 missing (no network; keys shown as set or not set)
  skein serve [--listen URL]     Serve the runtime to other processes (Skein.remote in an Effect
                                 program, skein acp --connect in an editor); URL is unix:PATH
                                 (default unix:$SKEIN_HOME/skein.sock, mode 0600),
                                 tcp://HOST:PORT or ws://HOST:PORT/PATH (these need a token:
                                 SKEIN_SERVE_TOKEN or --token-file FILE, 16 characters or more)
  skein serve ... --web HOST:PORT [--web-approve]
                                 Also serve a live web monitor of the sessions at HOST:PORT
                                 (loopback; port 0: any free one); prints a one-time URL
                                 carrying its token; --web-approve: questions can be answered
                                 on the page (read-only by default)
  skein monitor [--web HOST:PORT] [--web-approve] [--connect URL]
                                 The web monitor alone: of the skein serve on the home's socket
                                 (or at URL), else of the home's logs, read-only
  skein serve --cluster URL --runner HOST:PORT [--listen URL]
                                 Run a runner of a cluster whose sessions live in the PostgreSQL
                                 database at URL (SKEIN_CLUSTER); every runner's --listen
                                 endpoint reaches every session, wherever it runs
  skein --version | --help

Options (each also an environment variable):
  --home DIR               Where sessions live (SKEIN_HOME, default ~/.skein)
  --script FILE            Answer model calls from a JSON script (SKEIN_SCRIPT)
  --provider NAME          Model provider: openai-responses, openai-chat, anthropic-messages,
                           scripted, or one from $SKEIN_HOME/config.json (SKEIN_PROVIDER)
  --model ID               Model id, or provider/id (SKEIN_MODEL)
  --mode ID                Mode of new sessions: default, acceptEdits, plan, bypassPermissions
  --max-turn-requests N    Model calls allowed in one turn (default 50)
  --permission-timeout-ms N  Unanswered permission requests are denied after N ms
                           (SKEIN_PERMISSION_TIMEOUT_MS, default 1800000)
  --sandbox MODE           Where commands run: auto (in the sandbox where it works, else asked
                           for), required (only in the sandbox), off (SKEIN_SANDBOX; config.json
                           "sandbox"; default auto). See skein doctor

skein acp options:
  --local-fs               Read and write files locally even when the client offers fs/*
                           (SKEIN_LOCAL_FS=1; default: through the client, so unsaved
                           editor buffers are seen and edits land in the editor)
  --local-terminal         Run commands locally even when the client offers terminal/*
                           (SKEIN_LOCAL_TERMINAL=1; default: in client terminals)
  --max-line-bytes N       Refuse JSON-RPC lines longer than N bytes with -32600
                           (SKEIN_MAX_LINE_BYTES, default 16777216)
  --max-live-sessions N    Sessions kept live in memory (SKEIN_MAX_LIVE_SESSIONS, default 256);
                           past it, the least recently used idle one is closed, and comes
                           back from its log when the client uses it again
  --store URL              Keep sessions in a PostgreSQL database (SKEIN_STORE=postgres://…)
                           instead of files under the home; one Skein at a time holds a session
  --connect URL            Keep the sessions in the skein serve at URL instead of this process
                           (windows connected to one server share sessions and see each
                           other's turns); --token-file FILE or SKEIN_SERVE_TOKEN for tcp/ws

skein serve options:
  --max-connections N      tcp and ws: connections open at once (SKEIN_SERVE_MAX_CONNECTIONS,
                           default 128); each has 5 s and 8 KiB to show the token

skein serve --cluster options:
  --runner HOST:PORT       Where the other runners reach this one (SKEIN_RUNNER)
  --runner-listen HOST:PORT  Where to listen for them (default: --runner)
  --lock-expiry SECONDS    How long a runner that stopped answering keeps its sessions
                           (SKEIN_LOCK_EXPIRY, default 10); they move to another runner after it
  --drain SECONDS          On SIGTERM, how long running turns may go on before they are
                           cancelled (SKEIN_DRAIN, default 30); then the sessions move

skein run options:
  --cwd DIR                Working directory of the session (default: the current directory)
  -c, --continue           Go on with the newest session of this directory
  -r, --resume [ID]        Go on with that session (any unique prefix of its id); without an
                           ID, pick one of this directory's sessions (arrow keys and Enter)
  --json                   One turn; print every event as one JSON line
  At the prompt: Enter sends; Ctrl-J, Alt-Enter or \\ then Enter: a new line; @path attaches a
  file; /help lists the commands answered here (/exit, /clear, /model, /mode, /context, /cost)
  and the keys. During a turn: Enter queues, Ctrl-S steers, Esc or Ctrl-C interrupts.
  Permission questions take one key (y: allow once, a: always, n: reject, N: always reject);
  Esc or Ctrl-C there rejects and stops the turn. When stdin is not a terminal no one can
  answer: calls that need permission are denied. Ctrl-D, or Ctrl-C on an empty prompt, leaves
  (0). The answer goes to stdout, the rest to stderr.

Providers read OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL like
the vendors' SDKs, and $SKEIN_HOME/config.json; SKEIN_IDLE_TIMEOUT_MS (default 120000) fails a
stream that stalls. Sessions live in $SKEIN_HOME/sessions/<id>.ndjson (one append-only log each).

OpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set, traces, metrics and logs are exported over
OTLP/HTTP (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json,
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); without it, nothing is loaded or sent.

An option a command does not use is refused (exit 2) rather than ignored.

Exit codes: 0 ok, 1 runtime failure (replay --rerun: a difference), 2 usage (a bad option,
directory, script, provider or session id), 130 interrupted.
`

/** An environment variable, when set to something. */
export const env = (name: string): string | undefined => {
  const value = process.env[name]
  return value === undefined || value === "" ? undefined : value
}

/** Whether `raw` is a PostgreSQL URL (`postgres://…` or `postgresql://…`). */
export const isPostgresUrl = (raw: string): boolean => /^postgres(ql)?:\/\/[^\s]+$/.test(raw)

export const common = (values: Record<string, string | boolean | undefined>): Common => {
  const str = (key: string) => (typeof values[key] === "string" ? (values[key] as string) : undefined)
  const mode = str("mode")
  if (mode !== undefined && !isModeId(mode)) {
    throw new UsageError(`Unknown mode "${mode}" (expected default, acceptEdits, plan or bypassPermissions)`)
  }
  const max = str("max-turn-requests")
  const maxTurnRequests = max === undefined ? undefined : Number(max)
  if (maxTurnRequests !== undefined && (!Number.isInteger(maxTurnRequests) || maxTurnRequests < 1)) {
    throw new UsageError("--max-turn-requests must be a positive integer")
  }
  const positiveInt = (key: string, envName: string) => {
    const raw = str(key) ?? env(envName)
    if (raw === undefined) return undefined
    const n = Number(raw)
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${key} must be a positive integer`)
    return n
  }
  const flag = (key: string, envName: string) => values[key] === true || ["1", "true", "yes"].includes(env(envName) ?? "")
  const home = str("home") ?? env("SKEIN_HOME") ?? nodePath.join(os.homedir(), ".skein")
  return {
    home: nodePath.resolve(home),
    provider: str("provider") ?? env("SKEIN_PROVIDER"),
    model: str("model") ?? env("SKEIN_MODEL"),
    script: str("script") ?? env("SKEIN_SCRIPT"),
    mode,
    maxTurnRequests,
    permissionTimeoutMs: positiveInt("permission-timeout-ms", "SKEIN_PERMISSION_TIMEOUT_MS"),
    localFs: flag("local-fs", "SKEIN_LOCAL_FS"),
    localTerminal: flag("local-terminal", "SKEIN_LOCAL_TERMINAL"),
    maxLineBytes: positiveInt("max-line-bytes", "SKEIN_MAX_LINE_BYTES"),
    maxLiveSessions: positiveInt("max-live-sessions", "SKEIN_MAX_LIVE_SESSIONS"),
    store: storeUrl(str("store") ?? env("SKEIN_STORE")),
    sandbox: str("sandbox")
  }
}

/** `--store`: a PostgreSQL URL; anything else is a usage error (named without its credentials). */
const storeUrl = (raw: string | undefined): string | undefined => {
  if (raw === undefined || raw === "" || raw === "files") return undefined
  if (!isPostgresUrl(raw)) {
    throw new UsageError("--store takes a PostgreSQL URL (postgres://user@host:port/database) or \"files\"")
  }
  return raw
}

export const parse = <O extends Record<string, { type: "string" | "boolean"; short?: string }>>(args: ReadonlyArray<string>, options: O) => {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
}
