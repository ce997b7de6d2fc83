/**
 * A compact unified diff of two texts, for people at a terminal (and transcripts): hunks with three lines of
 * context, as `git diff` shows them.
 *
 * Bounded whatever the input: the common head and tail are skipped in linear time, the rest is
 * compared with Myers' algorithm for at most `maxEdits` differing lines (and a bounded amount of
 * work), beyond which the changed region is shown as removed, then added; and at most
 * `maxLines` lines are returned. A file of any size costs little more than reading it.
 */

export interface Line {
  readonly kind: "hunk" | "context" | "removed" | "added" | "more"
  readonly text: string
}

interface Options {
  readonly context?: number | undefined
  /** Lines returned at most; past it, one `more` line says how many were left out. */
  readonly maxLines?: number | undefined
  /** Differing lines compared at most before the changed region is shown as a whole. */
  readonly maxEdits?: number | undefined
}

type Op = 0 | 1 | 2 // equal, removed, added
const EQUAL: Op = 0
const REMOVED: Op = 1
const ADDED: Op = 2

/** Work allowed to the comparison ((lines) × (edits)), so a huge rewrite stays quick. */
const MAX_WORK = 5_000_000
const MAX_LINE_CHARS = 240

const splitLines = (text: string): Array<string> => {
  if (text.length === 0) return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** Myers' O((N+M)·D) comparison of `a` and `b`; undefined when they differ in more than `maxD` lines. */
const myers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxD: number): Array<Op> | undefined => {
  const n = a.length
  const m = b.length
  const offset = maxD + 1
  const v = new Int32Array(2 * maxD + 3)
  const trace: Array<Int32Array> = []
  for (let d = 0; d <= maxD; d++) {
    trace.push(v.slice())
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[k - 1 + offset]! < v[k + 1 + offset]!) ? v[k + 1 + offset]! : v[k - 1 + offset]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[k + offset] = x
      if (x >= n && y >= m) return backtrack(trace, d, n, m, offset)
    }
  }
  return undefined
}

const backtrack = (trace: ReadonlyArray<Int32Array>, depth: number, n: number, m: number, offset: number): Array<Op> => {
  const ops: Array<Op> = []
  let x = n
  let y = m
  for (let d = depth; d > 0; d--) {
    const v = trace[d]!
    const k = x - y
    const prevK = k === -d || (k !== d && v[k - 1 + offset]! < v[k + 1 + offset]!) ? k + 1 : k - 1
    const prevX = v[prevK + offset]!
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push(EQUAL)
      x--
      y--
    }
    ops.push(x === prevX ? ADDED : REMOVED)
    x = prevX
    y = prevY
  }
  while (x > 0 && y > 0) {
    ops.push(EQUAL)
    x--
    y--
  }
  return ops.reverse()
}

/** The operations turning `a` into `b`, in order. */
const compare = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxEdits: number): Array<Op> => {
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const midA = a.slice(head, a.length - tail)
  const midB = b.slice(head, b.length - tail)
  const maxD = Math.min(maxEdits, midA.length + midB.length, Math.floor(MAX_WORK / Math.max(1, midA.length + midB.length)))
  const middle = midA.length === 0 || midB.length === 0 ? undefined : myers(midA, midB, maxD)
  const ops: Array<Op> = new Array<Op>(head).fill(EQUAL)
  if (middle !== undefined) {
    for (const op of middle) ops.push(op)
  } else {
    for (let i = 0; i < midA.length; i++) ops.push(REMOVED)
    for (let i = 0; i < midB.length; i++) ops.push(ADDED)
  }
  for (let i = 0; i < tail; i++) ops.push(EQUAL)
  return ops
}

const shorten = (line: string) => (line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line)

/** The hunks turning `oldText` into `newText` (`null`: the file is new). */
export const unified = (oldText: string | null, newText: string, options: Options = {}): Array<Line> => {
  const context = options.context ?? 3
  const maxLines = options.maxLines ?? 80
  const a = splitLines(oldText ?? "")
  const b = splitLines(newText)
  const ops = compare(a, b, options.maxEdits ?? 400)
  const out: Array<Line> = []
  let total = 0
  const push = (line: Line) => {
    total++
    if (out.length < maxLines) out.push(line)
  }
  // Walk the operations, emitting each run of changes with its context as a hunk.
  let i = 0
  let x = 0 // line index in a
  let y = 0 // line index in b
  while (i < ops.length) {
    if (ops[i] === EQUAL) {
      i++
      x++
      y++
      continue
    }
    // A hunk starts `context` lines before this change and runs while changes are close.
    const lead = Math.min(context, x, y)
    let end = i
    let gap = 0
    for (let j = i; j < ops.length; j++) {
      if (ops[j] === EQUAL) {
        gap++
        if (gap > 2 * context) break
      } else {
        gap = 0
        end = j + 1
      }
    }
    const trail = Math.min(context, ops.length - end)
    let oldCount = lead + trail
    let newCount = lead + trail
    for (let j = i; j < end; j++) {
      if (ops[j] !== ADDED) oldCount++
      if (ops[j] !== REMOVED) newCount++
    }
    push({ kind: "hunk", text: `@@ -${x - lead + (oldCount > 0 ? 1 : 0)},${oldCount} +${y - lead + (newCount > 0 ? 1 : 0)},${newCount} @@` })
    for (let j = lead; j > 0; j--) push({ kind: "context", text: shorten(a[x - j]!) })
    for (; i < end; i++) {
      const op = ops[i]
      if (op !== ADDED) push({ kind: op === EQUAL ? "context" : "removed", text: shorten(a[x++]!) })
      else push({ kind: "added", text: shorten(b[y++]!) })
      if (op === EQUAL) y++
    }
    for (let j = 0; j < trail; j++) push({ kind: "context", text: shorten(a[x + j]!) })
  }
  if (total > out.length) out.push({ kind: "more", text: `… ${total - out.length} more lines` })
  return out
}
