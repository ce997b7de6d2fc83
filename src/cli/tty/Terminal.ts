/**
 * What `skein run` writes for people, and how. Every byte goes through `write` (stdout: the
 * model's answer, or `--json` lines) or `note` (stderr: everything else), so there is one
 * place to filter output. Text from the model or a tool is untrusted: `clean` turns its
 * control characters (escape sequences, carriage returns) into visible ones before it
 * reaches the terminal, so it cannot restyle the screen or overwrite a question.
 */
type Stream = "out" | "err"

const streams = { out: process.stdout, err: process.stderr } as const

const closed = { out: false, err: false }

/**
 * A reader that goes away (`skein run … | head`) is not a crash: nothing more is written
 * there, and when it was stdout the run stops as if interrupted (the turn is cancelled, the
 * log closed). Called once by the command, before it writes.
 */
export const guardStreams = (): void => {
  streams.out.on("error", () => {
    if (closed.out) return
    closed.out = true
    process.kill(process.pid, "SIGTERM")
  })
  streams.err.on("error", () => {
    closed.err = true
  })
}

/** Colours only on a terminal, and not when NO_COLOR is set. */
export const colours = (stream: Stream) => streams[stream].isTTY === true && (process.env.NO_COLOR ?? "") === ""

export const isTty = (stream: Stream): boolean => streams[stream].isTTY === true

const sgr = (open: string, close: string) => (stream: Stream, text: string) =>
  colours(stream) && text.length > 0 ? `\x1b[${open}m${text}\x1b[${close}m` : text

export const dim = sgr("2", "22")
export const bold = sgr("1", "22")
export const red = sgr("31", "39")
export const green = sgr("32", "39")
export const cyan = sgr("36", "39")

// C0 controls but tab and newline, DEL, C1 controls (some terminals act on those too), and the
// bidirectional overrides that make text read other than it is.
// eslint-disable-next-line no-control-regex
const controls = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g

/**
 * Untrusted text made inert: a carriage return ends the line (progress bars print one line
 * per update instead of redrawing one), other controls show in caret form (ESC → `^[`).
 */
export const clean = (text: string): string =>
  text.replace(/\r\n?/g, "\n").replace(controls, (c) => {
    const code = c.charCodeAt(0)
    return code < 0x20 ? `^${String.fromCharCode(code + 0x40)}` : code === 0x7f ? "^?" : `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`
  })

/** Untrusted text on one line: line breaks shown as `⏎`. */
export const oneLine = (text: string): string => clean(text).replace(/\n/g, "⏎")

/**
 * Where the cursor is, so a line is started only when needed. When both streams are the same
 * terminal they share one cursor; otherwise each stream has its own.
 */
const atLineStart = { out: true, err: true }
const shared = () => isTty("out") && isTty("err")

export const lineStart = (stream: Stream): boolean => (shared() ? atLineStart.out && atLineStart.err : atLineStart[stream])

/** Hooks run before anything is written (the screen's bottom area is erased) and after (it is drawn again). */
const beforeWrite: Array<(stream: Stream) => void> = []
const afterWrite: Array<(stream: Stream) => void> = []
export const onBeforeWrite = (hook: (stream: Stream) => void): void => {
  beforeWrite.push(hook)
}
export const onAfterWrite = (hook: (stream: Stream) => void): void => {
  afterWrite.push(hook)
}

/**
 * While held (a question is open), output is kept and written when the hold is released, so
 * nothing lands between a question and its answer. Bounded: past `MAX_HELD` characters the
 * oldest kept output is dropped and the release says how much.
 */
let holds = 0
let held: Array<{ readonly stream: Stream; readonly text: string; readonly plainEnd: string }> = []
let heldSize = 0
let heldDropped = 0
const MAX_HELD = 4 * 1024 * 1024

export const hold = (): void => {
  holds++
}

export const release = (): void => {
  if (holds === 0) return
  holds--
  if (holds > 0) return
  const kept = held
  const dropped = heldDropped
  held = []
  heldSize = 0
  heldDropped = 0
  if (dropped > 0) emit("err", `[${dropped} characters of output were dropped while a question was open]\n`, "\n")
  for (const piece of kept) emit(piece.stream, piece.text, piece.plainEnd)
}

const emit = (stream: Stream, text: string, plainEnd: string): void => {
  if (text.length === 0 || closed[stream]) return
  if (holds > 0) {
    held.push({ stream, text, plainEnd })
    heldSize += text.length
    while (heldSize > MAX_HELD && held.length > 1) {
      const first = held.shift()!
      heldSize -= first.text.length
      heldDropped += first.text.length
    }
    return
  }
  for (const hook of beforeWrite) hook(stream)
  streams[stream].write(text)
  const ended = plainEnd.endsWith("\n")
  if (shared()) {
    atLineStart.out = ended
    atLineStart.err = ended
  } else {
    atLineStart[stream] = ended
  }
  for (const hook of afterWrite) hook(stream)
}

/**
 * Writes to stdout. `plain` is the text without styling, when styled: it tells whether the
 * line was ended.
 */
export const write = (text: string, plain: string = text): void => emit("out", text, plain)

/** Writes to stderr. */
export const note = (text: string, plain: string = text): void => emit("err", text, plain)

/** Starts a new line on `stream` unless the cursor is at the start of one. */
export const newline = (stream: Stream): void => {
  if (!lineStart(stream)) emit(stream, "\n", "\n")
}

/** A whole line on stderr, styled as a whole. */
export const noteLine = (text: string, style?: (stream: Stream, text: string) => string): void => {
  newline("err")
  note(`${style === undefined ? text : style("err", text)}\n`, "\n")
}

/** The cursor is at the start of a line (after a prompt that the user ended with Enter). */
export const markLineStart = (): void => {
  atLineStart.out = true
  atLineStart.err = true
}

/** Writes to stderr around the transcript (the bottom area: spinner, prompt, menus); never held. */
export const overlay = (text: string): void => {
  if (!closed.err) process.stderr.write(text)
}

/** Whether writes to `stream` land on the terminal stderr draws its bottom area on. */
export const sharesScreen = (stream: Stream): boolean => stream === "err" || shared()
