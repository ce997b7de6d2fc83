/**
 * Finds many secret values in text at once: an Aho-Corasick automaton over
 * UTF-16 code units, built once per set of values, so redacting costs one pass
 * over the text however many secrets there are. Most texts hold none: a native
 * regular expression of all the values says so first, at a fraction of the
 * cost of walking the automaton in JavaScript.
 *
 * - `redact` replaces every occurrence with `MARKER`; overlapping or touching
 *   occurrences become one marker. A text without any returns as it came.
 * - `stream` does the same across chunks (streamed model text): the end of a
 *   chunk that may be the beginning of a secret is held back until the next
 *   chunk or `flush` decides it. In streamed text, fewer than `MIN_HOLD` such
 *   characters are let through rather than held (holding one or two characters
 *   back at nearly every chunk would change what streams, for nothing); the
 *   rest of a secret that starts with them is still redacted.
 */

export const MARKER = "[redacted]"
/** The shortest suffix of a chunk that is held back when it may begin a secret. */
const MIN_HOLD = 3

interface Node {
  readonly next: Map<number, Node>
  fail: Node
  readonly depth: number
  /** Length of the longest value that ends here, directly or through fail links; 0 for none. */
  out: number
}

export interface Stream {
  /** Redacts a chunk; returns what can be shown now (maybe less than came in). */
  readonly push: (text: string) => string
  /** Ends the stream: what was held back, redacted. The stream can be used again. */
  readonly flush: () => string
}

export interface Matcher {
  /** How many values it looks for. */
  readonly size: number
  readonly redact: (text: string) => string
  /** A stream; `minHold` 1 holds back every character that may begin a secret (raw output, where chunks are arbitrary). */
  readonly stream: (minHold?: number) => Stream
}

const newNode = (depth: number): Node => {
  const node = { next: new Map<number, Node>(), fail: undefined as unknown as Node, depth, out: 0 }
  node.fail = node
  return node
}

/** Adds `[start, end)` to sorted, disjoint ranges (flat pairs), merging what overlaps or touches. */
const addRange = (ranges: Array<number>, start: number, end: number) => {
  while (ranges.length > 0 && start <= ranges[ranges.length - 1]!) {
    const lastEnd = ranges.pop()!
    const lastStart = ranges.pop()!
    if (lastStart < start) start = lastStart
    if (lastEnd > end) end = lastEnd
  }
  ranges.push(start, end)
}

const escape = (value: string) => value.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")

export const make = (values: Iterable<string>): Matcher => {
  const root = newNode(0)
  // Whether a code unit begins any value: most of any text is skipped on this test alone.
  const first = new Uint8Array(65536)
  let size = 0
  let longest = 0
  const alternatives: Array<string> = []
  for (const value of values) {
    if (value.length === 0) continue
    alternatives.push(escape(value))
    if (value.length > longest) longest = value.length
    let node = root
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i)
      let next = node.next.get(c)
      if (next === undefined) {
        next = newNode(node.depth + 1)
        node.next.set(c, next)
      }
      node = next
    }
    if (node.out === 0) size++
    node.out = value.length
    first[value.charCodeAt(0)] = 1
  }
  /** Whether a text holds any value at all. */
  const any = new RegExp(alternatives.join("|"))
  // Fail links, breadth first; `out` takes the longest value a fail link ends.
  const queue: Array<Node> = []
  for (const child of root.next.values()) {
    child.fail = root
    queue.push(child)
  }
  for (let q = 0; q < queue.length; q++) {
    const node = queue[q]!
    for (const [c, child] of node.next) {
      let fail = node.fail
      while (fail !== root && !fail.next.has(c)) fail = fail.fail
      const target = fail.next.get(c)
      child.fail = target !== undefined && target !== child ? target : root
      if (child.out === 0) child.out = child.fail.out
      queue.push(child)
    }
  }

  const step = (node: Node, c: number): Node => {
    if (node === root && first[c] === 0) return root
    for (;;) {
      const next = node.next.get(c)
      if (next !== undefined) return next
      if (node === root) return root
      node = node.fail
    }
  }

  /** `text` with `ranges` (offsets into it) replaced by markers. */
  const render = (text: string, ranges: ReadonlyArray<number>): string => {
    let out = ""
    let cursor = 0
    for (let r = 0; r < ranges.length; r += 2) {
      out += text.slice(cursor, ranges[r]) + MARKER
      cursor = ranges[r + 1]!
    }
    return out + text.slice(cursor)
  }

  const redact = (text: string): string => {
    if (size === 0 || !any.test(text)) return text
    let ranges: Array<number> | undefined
    let node = root
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (node === root && first[c] === 0) continue
      node = step(node, c)
      if (node.out > 0) addRange(ranges ??= [], i + 1 - node.out, i + 1)
    }
    return ranges === undefined ? text : render(text, ranges)
  }

  const stream = (minHold = MIN_HOLD): Stream => {
    let node = root
    /** Text not shown yet, from position `heldStart` of the stream. */
    let held = ""
    let heldStart = 0
    /** Ranges to redact (stream positions), all ending after `heldStart`. */
    let ranges: Array<number> = []
    /** The last thing shown is a marker whose range goes on: no second marker for it. */
    let open = false

    /** Shows the held text up to stream position `upTo`. */
    const release = (upTo: number): string => {
      let out = ""
      let cursor = heldStart
      while (ranges.length > 0 && ranges[0]! < upTo) {
        const start = Math.max(ranges[0]!, cursor)
        const end = ranges[1]!
        if (start > cursor) {
          out += held.slice(cursor - heldStart, start - heldStart)
          open = false
        }
        if (!open) out += MARKER
        if (end > upTo) {
          cursor = upTo
          ranges[0] = upTo
          open = true
          break
        }
        cursor = end
        ranges.splice(0, 2)
        open = false
      }
      if (cursor < upTo) {
        out += held.slice(cursor - heldStart, upTo - heldStart)
        open = false
      }
      held = held.slice(upTo - heldStart)
      heldStart = upTo
      return out
    }

    return {
      push: (text) => {
        if (size === 0 && held.length === 0) {
          heldStart += text.length
          return text
        }
        const base = heldStart + held.length
        // Nothing begun and no value in the chunk: only its end can begin one, so only its end is walked.
        const from = node === root && !any.test(text) ? Math.max(0, text.length - longest + 1) : 0
        for (let i = from; i < text.length; i++) {
          const c = text.charCodeAt(i)
          if (node === root && first[c] === 0) continue
          node = step(node, c)
          if (node.out > 0) addRange(ranges, Math.max(base + i + 1 - node.out, heldStart), base + i + 1)
        }
        if (held.length === 0 && ranges.length === 0 && node.depth < minHold) {
          // The usual case: nothing to redact, nothing to hold.
          heldStart += text.length
          open = false
          return text
        }
        held += text
        const end = heldStart + held.length
        return release(node.depth < minHold ? end : Math.max(end - node.depth, heldStart))
      },
      flush: () => {
        const out = release(heldStart + held.length)
        node = root
        open = false
        ranges = []
        return out
      }
    }
  }

  return { size, redact, stream }
}
