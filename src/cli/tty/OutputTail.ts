/**
 * What is new in a running command's output. Each `tool_progress` event carries the whole
 * bounded buffer (see `tools/process/OutputBuffer.ts`): the output as it is, or, once it
 * outgrew the buffer, its head, a marker `… N bytes omitted …` and its tail. From the bytes
 * already shown and the latest buffer this finds the bytes not shown yet, so a terminal
 * prints each part of the output once.
 */

export interface Seen {
  /** Bytes of the command's output shown so far. */
  readonly position: number
  /** The buffer as last seen. */
  readonly text: string
}

export const start: Seen = { position: 0, text: "" }

// The marker OutputBuffer puts where it dropped the middle (`omittedMarker`); the ellipsis as an
// escape, so the bundle stays ASCII (scripts/build.mjs).
const MARKER = /\n\u2026 (\d+) bytes omitted \u2026\n/

const bytes = (s: string) => Buffer.byteLength(s, "utf8")

/** The output after `seen`, and what is seen after printing it. */
export const next = (seen: Seen, output: string): { readonly text: string; readonly seen: Seen } => {
  if (output.startsWith(seen.text)) {
    const text = output.slice(seen.text.length)
    return { text, seen: { position: seen.position + bytes(text), text: output } }
  }
  const marker = MARKER.exec(output)
  if (marker === null) {
    // Not a continuation of what was shown (should not happen): show it whole.
    return { text: output, seen: { position: seen.position + bytes(output), text: output } }
  }
  const head = output.slice(0, marker.index)
  const tail = output.slice(marker.index + marker[0].length)
  const tailBuffer = Buffer.from(tail, "utf8")
  const total = bytes(head) + Number(marker[1]) + tailBuffer.length
  const fresh = total - seen.position
  const after = { position: Math.max(total, seen.position), text: output }
  if (fresh <= 0) return { text: "", seen: after }
  if (fresh <= tailBuffer.length) {
    // A cut inside a character leaves replacement characters at the start: drop them.
    const text = tailBuffer.subarray(tailBuffer.length - fresh).toString("utf8").replace(/^\uFFFD+/, "")
    return { text, seen: after }
  }
  const text = `${seen.position > 0 && !seen.text.endsWith("\n") ? "\n" : ""}… ${fresh - tailBuffer.length} bytes not shown …\n${tail}`
  return { text, seen: after }
}
