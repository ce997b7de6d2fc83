/**
 * The turn's `Files` has two implementations, the disk and the client's editor (ACP
 * `fs/read_text_file`, `fs/write_text_file`); which one a turn uses is decided once, from what
 * the client offers. On the same inputs they must behave the same: one table of `read`,
 * `write` and `edit` calls, run by the built agent against a client that offers no files and
 * against one (the official ACP client library) whose editor is the same disk. Each call's
 * result for the model and for the editor, and the workspace after, must be equal.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, expectClean, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

interface Case {
  readonly name: string
  readonly tool: "read" | "write" | "edit"
  readonly args: Record<string, unknown>
}

/** The workspace every run starts from: one file per case that needs one. */
const files: Record<string, string> = {
  "notes.txt": "one\ntwo\nthree\n",
  "window.txt": Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n") + "\n",
  "crlf.txt": "alpha\r\nbeta\r\n",
  "empty.txt": "",
  "binary.bin": "PK\u0000\u0001 not text",
  "binary-edit.bin": "PK\u0000\u0001 not text",
  "binary-write.bin": "PK\u0000\u0001 not text",
  "replace.txt": "old content\n",
  "edit.ts": "function a() {\n  return 1\n}\n",
  "crlf-edit.txt": "first\r\nsecond\r\n",
  "twice.txt": "x\nx\n",
  "keep.txt": "unchanged\n",
  "src/dir/.keep": ""
}

const cases: ReadonlyArray<Case> = [
  { name: "read a whole file", tool: "read", args: { path: "notes.txt" } },
  { name: "read a window", tool: "read", args: { path: "window.txt", offset: 10, limit: 5 } },
  { name: "read CRLF lines", tool: "read", args: { path: "crlf.txt" } },
  { name: "read an empty file", tool: "read", args: { path: "empty.txt" } },
  { name: "read a binary file", tool: "read", args: { path: "binary.bin" } },
  { name: "read past the end", tool: "read", args: { path: "notes.txt", offset: 9 } },
  { name: "read a missing file", tool: "read", args: { path: "missing.txt" } },
  { name: "read outside the workspace", tool: "read", args: { path: "../outside.txt" } },
  { name: "write a new file in new folders", tool: "write", args: { path: "new/deep/made.txt", content: "made\n" } },
  { name: "write over a file", tool: "write", args: { path: "replace.txt", content: "new content\nsecond line\n" } },
  { name: "write over a folder", tool: "write", args: { path: "src/dir", content: "no" } },
  { name: "edit a file", tool: "edit", args: { path: "edit.ts", edits: [{ oldText: "return 1", newText: "return 2" }] } },
  { name: "edit a CRLF file with LF edits", tool: "edit", args: { path: "crlf-edit.txt", edits: [{ oldText: "first\nsecond", newText: "one\ntwo" }] } },
  { name: "edit text that occurs twice", tool: "edit", args: { path: "twice.txt", edits: [{ oldText: "x", newText: "y" }] } },
  { name: "edit text that is not there", tool: "edit", args: { path: "keep.txt", edits: [{ oldText: "absent", newText: "y" }] } },
  { name: "edit with no change", tool: "edit", args: { path: "keep.txt", edits: [{ oldText: "unchanged", newText: "unchanged" }] } },
  { name: "edit a missing file", tool: "edit", args: { path: "missing.ts", edits: [{ oldText: "a", newText: "b" }] } },
  { name: "edit a binary file", tool: "edit", args: { path: "binary-edit.bin", edits: [{ oldText: "not text", newText: "text" }] } },
  { name: "edit a file that is not UTF-8", tool: "edit", args: { path: "latin1.txt", edits: [{ oldText: "caf", newText: "CAF" }] } },
  { name: "read a file that is not UTF-8", tool: "read", args: { path: "latin1-read.txt" } },
  { name: "write over a binary file", tool: "write", args: { path: "binary-write.bin", content: "text now\n" } }
]

/** Files whose bytes are not UTF-8 text (the table above holds text): café in Latin-1. */
const bytes: Record<string, Uint8Array> = {
  "latin1.txt": Buffer.from("caf\u00e9\n", "latin1"),
  "latin1-read.txt": Buffer.from("caf\u00e9\n", "latin1")
}

/** Every file under `dir` and its content, relative paths sorted. */
const tree = (dir: string, under = ""): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of readdirSync(path.join(dir, under)).sort()) {
    const rel = path.join(under, name)
    if (statSync(path.join(dir, rel)).isDirectory()) Object.assign(out, tree(dir, rel))
    else out[rel] = readFileSync(path.join(dir, rel), "utf8")
  }
  return out
}

/** What each call ended as (status, its result for the model, what the editor is shown), the workspace's path made neutral. */
const results = (agent: AgentProcess, sessionId: string) =>
  cases.map((_, i) => {
    const ended = agent.updates(sessionId).filter((u: any) => u.sessionUpdate === "tool_call_update" && u.toolCallId === `c${i}` && u.status !== undefined && u.status !== "in_progress")
    expect(ended).toHaveLength(1)
    const { status, rawOutput, content } = ended[0] as any
    return JSON.parse(JSON.stringify({ status, rawOutput, content }).replaceAll(agent.cwd, "<cwd>"))
  })

const run = async (editor: boolean) => {
  const agent = await agents.ready({
    args: ["--mode", "bypassPermissions"],
    files,
    clientCapabilities: { readTextFile: editor, writeTextFile: editor, terminal: false },
    // The editor's buffers are the disk: what it reads and writes is what the disk holds.
    clientMethods: {
      "fs/read_text_file": (params: { path: string }) => ({ content: readFileSync(params.path, "utf8") }),
      "fs/write_text_file": (params: { path: string; content: string }) => {
        writeFileSync(params.path, params.content)
        return {}
      }
    },
    script: { turns: [{ calls: [...cases.map((c, i) => [{ tool: c.tool, args: c.args, id: `c${i}` }]), [{ text: "done" }]] }] }
  })
  writeFileSync(path.join(agent.root, "outside.txt"), "outside\n")
  for (const [name, content] of Object.entries(bytes)) writeFileSync(path.join(agent.cwd, name), content)
  const sessionId = await agent.newSession()
  expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")
  expectClean(agent)
  const asked = agent.messages().filter((m) => m.method === "fs/read_text_file" || m.method === "fs/write_text_file").map((m) => m.method)
  return { results: results(agent, sessionId), workspace: tree(agent.cwd), asked }
}

describe("e2e: the turn's files, on disk or through the client's editor", () => {
  it("read, write and edit give the same results and leave the same files either way", async () => {
    const [disk, editor] = await Promise.all([run(false), run(true)])
    // Each implementation was the one used: the editor's was asked, the disk's never.
    expect(disk.asked).toEqual([])
    expect(editor.asked).toContain("fs/read_text_file")
    expect(editor.asked).toContain("fs/write_text_file")
    for (const [i, c] of cases.entries()) expect(editor.results[i], c.name).toEqual(disk.results[i])
    expect(editor.workspace).toEqual(disk.workspace)
    // The table says something: the writes and edits changed what they should.
    expect(disk.workspace["new/deep/made.txt"]).toBe("made\n")
    expect(disk.workspace["edit.ts"]).toBe("function a() {\n  return 2\n}\n")
    expect(disk.workspace["crlf-edit.txt"]).toBe("one\r\ntwo\r\n")
    expect(disk.workspace["keep.txt"]).toBe("unchanged\n")
    expect(disk.results.map((r) => r.status)).toEqual([
      "completed", "completed", "completed", "completed", "completed", "failed", "failed", "failed",
      "completed", "completed", "failed",
      "completed", "completed", "failed", "failed", "completed", "failed",
      "failed", "failed", "completed", "completed"
    ])
    // Neither the binary file nor the Latin-1 one was changed by an edit.
    expect(disk.workspace["binary-edit.bin"]).toBe(files["binary-edit.bin"])
    expect(disk.workspace["binary-write.bin"]).toBe("text now\n")
  })
})
