// `npm start`: a short, scripted conversation with Skein over the Agent Client Protocol.
//
// Spawns `dist/skein.mjs acp` with the scripted provider (demo/script.json) in a temp copy of
// demo/workspace/, drives it with the official ACP client library, and prints a readable
// transcript: prompts, streamed answers, thoughts, tool calls with their results, stop reasons.
import { client, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Readable, Writable } from "node:stream"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const agentBin = join(root, "dist", "skein.mjs")
const scriptFile = join(root, "demo", "script.json")
const workspaceTemplate = join(root, "demo", "workspace")

const PROMPTS = [
  "What is in notes.txt?",
  "Which open item should I tackle first?",
  "Check in parallel: is `delete` in the README, and what is still open?",
  // A long session's slash command: the conversation so far becomes a hand-over summary.
  "/compact keep what is left to do"
]
const AGENT_EXIT_TIMEOUT_MS = 5000
const DEMO_TIMEOUT_MS = 30000
const MAX_TOOL_LINES = 20
const USER_LABEL = "you   › "
const AGENT_LABEL = "skein › "
const THOUGHT_LABEL = "        (thinking) "

// ── output ────────────────────────────────────────────────────────────────────────────────
const color = process.stdout.isTTY === true && !process.env.NO_COLOR
const paint = (code) => (s) => (color ? `\x1b[${code}m${s}\x1b[0m` : s)
const bold = paint("1")
const dim = paint("2")
const italic = paint("2;3")
const green = paint("32")
const red = paint("31")
const cyan = paint("36")
const yellow = paint("33")

/** Tracks what is on the current line so streamed text, thoughts and tool lines do not run together. */
const out = {
  stream: null, // "text" | "thought" | null: what the open line is streaming
  atLineStart: true,
  write(s) {
    if (s.length === 0) return
    process.stdout.write(s)
    this.atLineStart = s.endsWith("\n")
  },
  /** Ends any streamed line, then prints whole lines. */
  line(s = "") {
    this.endStream()
    this.write(`${s}\n`)
  },
  endStream() {
    if (!this.atLineStart) this.write("\n")
    this.stream = null
  },
  /** Streams a chunk of the given kind; a change of kind starts a new, labelled line. */
  chunk(kind, text) {
    if (this.stream !== kind) {
      this.endStream()
      this.stream = kind
      this.first = true
    }
    const style = kind === "thought" ? italic : (s) => s
    text.split("\n").forEach((part, i) => {
      if (i > 0) this.write("\n")
      if (part.length === 0) return
      if (this.atLineStart) {
        this.write(kind === "thought" ? italic(THOUGHT_LABEL) : this.first ? bold(cyan(AGENT_LABEL)) : " ".repeat(AGENT_LABEL.length))
        this.first = false
      }
      this.write(style(part))
    })
  }
}

const indent = (text, prefix) => text.split("\n").map((l) => `${prefix}${l}`.trimEnd()).join("\n")

const toolContentText = (content) => {
  const parts = []
  for (const item of content ?? []) {
    if (item.type === "content" && item.content?.type === "text") parts.push(item.content.text)
    else if (item.type === "diff") parts.push(`(diff of ${item.path})`)
    else if (item.type === "terminal") parts.push(`(terminal ${item.terminalId})`)
  }
  return parts.join("\n")
}

const clip = (text) => {
  const lines = text.replace(/\s+$/, "").replace(/\t/g, "  ").split("\n")
  if (lines.length <= MAX_TOOL_LINES) return lines.join("\n")
  return [...lines.slice(0, MAX_TOOL_LINES), `… ${lines.length - MAX_TOOL_LINES} more lines`].join("\n")
}

// ── rendering session/update ──────────────────────────────────────────────────────────────
const toolCalls = new Map() // toolCallId → { title, kind, status, printedResult }

const renderToolResult = (id, call) => {
  if (call.printedResult) return
  call.printedResult = true
  const ok = call.status === "completed"
  const mark = ok ? green("✓ completed") : red("✗ failed")
  out.line(`          ${mark}`)
  const text = clip(call.content ?? "")
  if (text.length > 0) out.line(dim(indent(text, "          │ ")))
}

const render = (update) => {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
      if (update.content.type === "text") out.chunk("text", update.content.text)
      else out.line(dim(`        [${update.content.type} content]`))
      return
    case "agent_thought_chunk":
      if (update.content.type === "text") out.chunk("thought", update.content.text)
      return
    case "user_message_chunk":
      return
    case "tool_call": {
      const call = { title: update.title, kind: update.kind ?? "other", status: update.status ?? "pending", content: "" }
      toolCalls.set(update.toolCallId, call)
      out.line(`        ${cyan("→")} ${bold(call.title)} ${dim(`(tool call, kind ${call.kind})`)}`)
      if (update.content) call.content = toolContentText(update.content)
      if (call.status === "completed" || call.status === "failed") renderToolResult(update.toolCallId, call)
      return
    }
    case "tool_call_update": {
      let call = toolCalls.get(update.toolCallId)
      if (call === undefined) {
        call = { title: update.title ?? update.toolCallId, kind: update.kind ?? "other", status: "pending", content: "" }
        toolCalls.set(update.toolCallId, call)
      }
      if (update.title) call.title = update.title
      if (update.content) call.content = toolContentText(update.content)
      if (update.status) call.status = update.status
      if (call.status === "completed" || call.status === "failed") renderToolResult(update.toolCallId, call)
      return
    }
    case "plan":
      out.line(`  ${yellow("plan:")}`)
      for (const entry of update.entries) out.line(`    [${entry.status}] ${entry.content}`)
      return
    case "current_mode_update":
      out.line(dim(`        [mode is now ${update.currentModeId}]`))
      return
    default:
      return // config options, commands, usage, …: nothing to show in a transcript
  }
}

// ── the agent process ─────────────────────────────────────────────────────────────────────
const fail = (message) => {
  const error = new Error(message)
  error.demo = true
  return error
}

const startAgent = (cwd, home) => {
  const child = spawn(process.execPath, [agentBin, "acp", "--home", home, "--script", scriptFile], {
    cwd,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, SKEIN_HOME: home }
  })
  let stderr = ""
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (d) => {
    stderr += d
    if (stderr.length > 64 * 1024) stderr = stderr.slice(-64 * 1024)
  })
  // A dead agent must not crash us with EPIPE; the failed request reports it.
  child.stdin.on("error", () => {})
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }))
    child.on("error", (error) => resolve({ code: null, signal: null, error }))
  })
  return { child, exited, stderr: () => stderr }
}

const waitForExit = async (agent) => {
  let timer
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), AGENT_EXIT_TIMEOUT_MS)
  })
  const result = await Promise.race([agent.exited, timeout])
  clearTimeout(timer)
  if (result === "timeout") {
    agent.child.kill("SIGKILL")
    await agent.exited
    throw fail(`the agent did not exit within ${AGENT_EXIT_TIMEOUT_MS / 1000} s after stdin closed (killed it)`)
  }
  if (result.error) throw fail(`could not start the agent: ${result.error.message}`)
  if (result.code !== 0) throw fail(`the agent exited with ${result.signal ?? `code ${result.code}`}`)
}

/** Reads a prompt's updates as they arrive and prints them; resolves with the stop reason. */
const runTurn = async (session, text) => {
  out.line(`${bold(green(USER_LABEL))}${text}`)
  out.line()
  const response = session.prompt(text)
  // If the prompt fails, nextUpdate() would wait forever: race it against the failure.
  const failed = response.then(() => new Promise(() => {}), (error) => Promise.reject(error))
  for (;;) {
    const message = await Promise.race([session.nextUpdate(), failed])
    if (message.kind === "stop") {
      out.endStream()
      out.line()
      out.line(dim(`        [stop reason: ${message.stopReason}]`))
      return message.stopReason
    }
    render(message.update)
  }
}

const main = async () => {
  if (!existsSync(agentBin)) throw fail(`${agentBin} is missing; build it with \`npm run build\``)
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), "skein-demo-")))
  const cwd = join(tmp, "workspace")
  const home = join(tmp, "home")
  let agent
  // Ctrl-C: stop the agent and leave no temp files behind.
  process.once("SIGINT", () => {
    agent?.child.kill("SIGKILL")
    rmSync(tmp, { recursive: true, force: true })
    process.stdout.write("\n")
    process.exit(130)
  })
  try {
    cpSync(workspaceTemplate, cwd, { recursive: true })
    agent = startAgent(cwd, home)
    const stream = ndJsonStream(Writable.toWeb(agent.child.stdin), Readable.toWeb(agent.child.stdout))

    const app = client({ name: "skein-demo" }).onRequest("session/request_permission", ({ params }) => {
      const option = params.options.find((o) => o.kind === "allow_once") ??
        params.options.find((o) => o.kind === "allow_always") ?? params.options[0]
      out.line(`        ${yellow("?")} permission requested for ${bold(params.toolCall?.title ?? params.toolCall?.toolCallId ?? "a tool call")}`)
      if (option === undefined) {
        out.line(`          ${red("no options offered: cancelled")}`)
        return { outcome: { outcome: "cancelled" } }
      }
      out.line(`          ${green("approved")} ${dim(`(${option.name}, ${option.kind})`)}`)
      return { outcome: { outcome: "selected", optionId: option.optionId } }
    })

    const agentGone = agent.exited.then(({ code, signal, error }) => {
      throw fail(error ? `could not start the agent: ${error.message}` : `the agent exited early (${signal ?? `code ${code}`})`)
    })

    let watchdog
    const timedOut = new Promise((_, reject) => {
      watchdog = setTimeout(() => reject(fail(`no answer from the agent within ${DEMO_TIMEOUT_MS / 1000} s`)), DEMO_TIMEOUT_MS)
    })
    await Promise.race([
      agentGone,
      timedOut,
      app.connectWith(stream, async (ctx) => {
        const init = await ctx.request("initialize", {
          protocolVersion: PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          clientInfo: { name: "skein-demo", version: "1" }
        })
        const info = init.agentInfo
        const agentName = [info?.title ?? info?.name ?? "agent", info?.version].filter(Boolean).join(" ")
        out.line(bold(`${agentName} demo: ACP v${init.protocolVersion} over stdio, driven by @agentclientprotocol/sdk`))
        out.line(dim(`model: scripted (demo/script.json)`))
        out.line(dim(`workspace ${cwd} (${readdirSync(cwd).sort().join(", ")})`))
        await ctx.buildSession({ cwd, mcpServers: [] }).withSession(async (session) => {
          const mode = session.modes?.currentModeId
          out.line(dim(`session ${session.sessionId}${mode ? `, mode ${mode}` : ""}`))
          for (const prompt of PROMPTS) {
            out.line()
            await runTurn(session, prompt)
          }
        })
      })
    ])
    clearTimeout(watchdog)
    agentGone.catch(() => {}) // from here on the agent is expected to exit
    agent.child.stdin.end()
    await waitForExit(agent)
    out.line()
    out.line(dim("Agent exited cleanly. Done."))
  } catch (error) {
    out.endStream()
    if (agent !== undefined) {
      // A closed connection usually means the agent died: wait a moment to say how.
      const exit = await Promise.race([agent.exited, new Promise((r) => setTimeout(() => r(undefined), 500))])
      if (exit === undefined) {
        agent.child.kill("SIGKILL")
        await agent.exited
      } else if (!error?.demo && (exit.code !== 0 || exit.signal !== null)) {
        error = fail(`the agent exited early (${exit.signal ?? `code ${exit.code}`}): ${error?.message ?? error}`)
      }
      const stderr = agent.stderr().trim()
      if (stderr) error.agentStderr = stderr
    }
    throw error
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    const reason = error?.demo ? error.message : error?.stack ?? String(error)
    process.stderr.write(`\nskein demo failed: ${reason}\n`)
    if (error?.agentStderr) process.stderr.write(`\nagent stderr:\n${indent(error.agentStderr, "  ")}\n`)
    process.exit(1)
  }
)
