/**
 * The suite's two vitest projects (vitest.config.ts). Most files start the built agent, git,
 * bubblewrap, PostgreSQL or a browser, patch globals or set `process.env`: each of them runs in a
 * fresh worker of its own (`isolated`). The files listed here only import modules and call
 * them (temp folders and in-process servers aside): they run in workers that are reused from
 * file to file (`shared`, `isolate: false`), so that Effect, the schemas and the runtime are
 * loaded once per worker rather than once per file, about a second of each file's start.
 *
 * A file belongs here only if it leaves nothing behind that another file could see: no child
 * process, no environment variable, no global or module mock, no fake timer, no listener on the
 * process. test/support/projects.test.ts reads each listed file and fails on what would break
 * that (`leaks`); a file not listed is isolated, which is only slower.
 */

/** Files run in shared workers, by path from the repository's root. */
export const SHARED: ReadonlyArray<string> = [
  "test/acp/blocks.test.ts",
  "test/acp/schema.test.ts",
  "test/agents/definitions.test.ts",
  "test/agents/doctor.test.ts",
  "test/agents/external-fold.test.ts",
  "test/agents/path-locks.test.ts",
  "test/architecture.test.ts",
  "test/checkpoints/target.test.ts",
  "test/cli/acp-warm.test.ts",
  "test/cli/setup-choices.test.ts",
  "test/cli/stack-probes.test.ts",
  "test/cli/usage.test.ts",
  "test/cluster/entity.test.ts",
  "test/commands/commands.test.ts",
  "test/embedding/embedding.test.ts",
  "test/faults/peer.test.ts",
  "test/fs/open-directory.test.ts",
  "test/hooks/pure.test.ts",
  "test/jsonrpc/Framing.test.ts",
  "test/jsonrpc/Peer.test.ts",
  "test/jsonrpc/PeerOutgoing.test.ts",
  "test/jsonrpc/PeerProperty.test.ts",
  "test/jsonrpc/PeerWire.test.ts",
  "test/jsonrpc/Protocol.test.ts",
  "test/jsonrpc/Response.test.ts",
  "test/log/checks.test.ts",
  "test/log/durable-embedding.test.ts",
  "test/log/durable-partial.test.ts",
  "test/log/durable-reader.test.ts",
  "test/log/log.test.ts",
  "test/mcp/pieces.test.ts",
  "test/monitor/projection.test.ts",
  "test/providers/body.test.ts",
  "test/providers/config-write.test.ts",
  "test/providers/dialects.test.ts",
  "test/providers/errors.test.ts",
  "test/providers/openai-summaries.test.ts",
  "test/providers/prompt.test.ts",
  "test/providers/registry.test.ts",
  "test/providers/resilience.test.ts",
  "test/providers/scenario.test.ts",
  "test/providers/scripted.test.ts",
  "test/providers/warm.test.ts",
  "test/remote/address.test.ts",
  "test/remote/ndjson.test.ts",
  "test/runtime/actor.test.ts",
  "test/runtime/bus.test.ts",
  "test/runtime/compaction.test.ts",
  "test/runtime/fork.test.ts",
  "test/runtime/gate-ceiling.test.ts",
  "test/runtime/gate-fetch.test.ts",
  "test/runtime/live-cap.test.ts",
  "test/runtime/questions.test.ts",
  "test/runtime/rerun-compare.test.ts",
  "test/runtime/session-id.test.ts",
  "test/runtime/session-state.test.ts",
  "test/runtime/session.test.ts",
  "test/runtime/subscribe.test.ts",
  "test/runtime/turn-edges.test.ts",
  "test/runtime/turn-end.test.ts",
  "test/runtime/usage.test.ts",
  "test/sandbox/permissions.test.ts",
  "test/sandbox/policy.test.ts",
  "test/secrets/shapes.test.ts",
  "test/server/auth.test.ts",
  "test/server/prompt-order.test.ts",
  "test/session/undo.test.ts",
  "test/skills/doctor.test.ts",
  "test/skills/readable.test.ts",
  "test/skills/skills.test.ts",
  "test/support/projects.test.ts",
  "test/support/sequencer.test.ts",
  "test/telemetry/settings.test.ts",
  "test/text/front-matter.test.ts",
  "test/tools/ceiling.test.ts",
  "test/tools/command-options.test.ts",
  "test/tools/edit.test.ts",
  "test/tools/glob.test.ts",
  "test/tools/grep.test.ts",
  "test/tools/permissions.test.ts",
  "test/tools/race.test.ts",
  "test/tools/read.test.ts",
  "test/tools/readonly-commands.test.ts",
  "test/tools/update_plan.test.ts",
  "test/tools/web_fetch.test.ts",
  "test/tools/workspace.test.ts",
  "test/tools/write.test.ts",
  "test/translate/present.test.ts",
  "test/translate/translate.test.ts",
  "test/translate/view.test.ts",
  "test/trust/trust.test.ts"
]

/** What a shared file may not do, each with a pattern that finds it in the file's source. */
export const FORBIDDEN: ReadonlyArray<readonly [what: string, pattern: RegExp]> = [
  ["starts a process", /node:child_process|ChildProcessSpawner|NodeServices|ProcessGroup|\bspawn(Sync)?\(|execFile(Sync)?\(|esbuild/],
  ["drives the built agent, a server, PostgreSQL, a browser or a sandbox", /support\/(AgentProcess|Serve|Postgres|Browser|Bwrap|Pty|Background|Tmpfs|InProcess)\.ts/],
  ["runs hooks or commands", /hooks\/Runner\.ts|tool\("bash"|tool: "bash"/],
  ["sets or deletes an environment variable", /process\.env(\.\w+|\[[^\]]+\])\s*=[^=]|delete process\.env|Object\.assign\(process\.env/],
  ["mocks, stubs or spies", /\bvi\.(mock|doMock|stub\w*|spyOn|hoisted|useFakeTimers|setSystemTime)/],
  ["touches globals or the process", /globalThis|process\.(on|once|off|chdir|exit|umask\(\s*\d|setUncaughtExceptionCaptureCallback)\b\(?/]
]

/** What in `source` keeps it from running in a shared worker (empty: nothing). */
export const leaks = (source: string): Array<string> => FORBIDDEN.flatMap(([what, pattern]) => (pattern.test(source) ? [what] : []))
