/**
 * What a loaded session shows of its usage (`Usage.restore`), from its history: each model's
 * calls at that model's price (a switch of model halfway), a compaction's summary call counted in
 * the cost and its estimate as the context used, a rewind that keeps what was shown last, and
 * nothing where the window is unknown.
 */
import { describe, expect, it } from "vitest"
import type { CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import type * as Models from "../../src/providers/Models.ts"
import * as Usage from "../../src/runtime/Usage.ts"

const info = (id: string, contextWindow: number, price?: Models.Price): Models.ModelInfo => ({ id, contextWindow, efforts: [], reasoning: false, images: false, price })
const catalog: Models.Catalog = {
  entries: [],
  defaultModel: "p/cheap",
  info: (model) => ({ "p/cheap": info("cheap", 8000, { input: 1, output: 2 }), "p/dear": info("dear", 200_000, { input: 10, output: 20 }), "p/free": info("free", 4000) })[model ?? ""]
}

const response = (usage: { input: number; output: number; cached?: number }, compaction?: string): CanonicalBody => ({
  type: "model_response",
  data: { call: 1, parts: [{ type: "text", text: "ok" }], usage, stop: "end_turn", ...(compaction !== undefined ? { compaction } : {}) }
})
const model = (value: string): CanonicalBody => ({ type: "config_changed", data: { id: "model", value } })

const fold = (events: ReadonlyArray<CanonicalBody>) => {
  const history = History.make()
  events.forEach((event, i) => History.apply(history, event, i + 1))
  return history
}

describe("Usage.restore", () => {
  it("prices each call at the model it ran with, the default model's as the default", () => {
    const history = fold([response({ input: 1000, output: 100 }), model("p/dear"), response({ input: 2000, output: 10, cached: 5000 })])
    const restored = Usage.restore(history, catalog, "p/cheap", undefined)
    // cheap: 1000 × 1 + 100 × 2; dear: 2000 × 10 (the cached count is capped at the input) + 10 × 20.
    const expected = (1000 + 200 + 20_000 + 200) / 1_000_000
    expect(restored.spent).toBeCloseTo(expected, 15)
    expect(restored.shown).toEqual({ used: 2010, size: 200_000, cost: restored.spent })
  })

  it("counts a compaction's summary call in the cost and shows the context after it; a rewind keeps what was shown", () => {
    const compaction: CanonicalBody = {
      type: "compaction",
      data: { id: "k1", trigger: "manual", fromSeq: 1, toSeq: 2, keepFromSeq: 3, promptHash: "h", summaryForModel: "s", summaryForUser: "s", usageBefore: 5000, usageAfter: 300 }
    }
    const history = fold([response({ input: 5000, output: 0 }), response({ input: 5000, output: 100 }, "k1"), compaction])
    expect(Usage.restore(history, catalog, "p/cheap", undefined)).toEqual({ spent: (10_000 + 200) / 1_000_000, shown: { used: 300, size: 8000, cost: (10_000 + 200) / 1_000_000 } })
    const rewound: CanonicalBody = { type: "rewound", data: { toTurn: 1, fromSeq: 1, restored: [], removed: [], skipped: [] } }
    History.apply(history, rewound, 4)
    expect(Usage.restore(history, catalog, "p/cheap", undefined).shown?.used).toBe(300)
  })

  it("shows no cost without a price, and nothing without a window or a call", () => {
    expect(Usage.restore(fold([model("p/free"), response({ input: 10, output: 1 })]), catalog, "p/cheap", undefined)).toEqual({ spent: 0, shown: { used: 11, size: 4000 } })
    expect(Usage.restore(fold([response({ input: 10, output: 1 })]), undefined, undefined, undefined)).toEqual({ spent: 0, shown: undefined })
    expect(Usage.restore(fold([response({ input: 10, output: 1 })]), undefined, undefined, 500)).toEqual({ spent: 0, shown: { used: 11, size: 500 } })
    expect(Usage.restore(fold([]), catalog, "p/cheap", undefined)).toEqual({ spent: 0, shown: undefined })
  })
})

describe("Usage.meter", () => {
  const pricing: Usage.Pricing = { models: catalog, defaultModel: "p/cheap", providerWindow: undefined }
  const run = (events: ReadonlyArray<CanonicalBody>, with_ = pricing) => {
    const meter = Usage.meter(with_)
    return events.map((event, i) => meter({ ...event, seq: i + 1, ts: "", turn: 1, sessionId: "s" } as never))
  }

  it("shows after each call what the live session showed: its context, with the window and price of the model it ran with, and the cost so far", () => {
    const shown = run([response({ input: 1000, output: 100 }), model("p/dear"), response({ input: 2000, output: 10, cached: 5000 })])
    expect(shown).toEqual([
      { used: 1100, size: 8000, cost: 1200 / 1_000_000 },
      undefined,
      { used: 2010, size: 200_000, cost: (1200 + 20_200) / 1_000_000 }
    ])
    // The last one is what a load restores.
    const history = fold([response({ input: 1000, output: 100 }), model("p/dear"), response({ input: 2000, output: 10, cached: 5000 })])
    expect(shown.at(-1)).toEqual(Usage.restore(history, catalog, "p/cheap", undefined).shown)
  })

  it("a compaction's summary call adds to the cost only; the compaction shows the context after it; a rewind shows nothing", () => {
    const compaction: CanonicalBody = {
      type: "compaction",
      data: { id: "k1", trigger: "manual", fromSeq: 1, toSeq: 2, keepFromSeq: 3, promptHash: "h", summaryForModel: "s", summaryForUser: "s", usageBefore: 5000, usageAfter: 300 }
    }
    const rewound: CanonicalBody = { type: "rewound", data: { toTurn: 1, fromSeq: 1, restored: [], removed: [], skipped: [] } }
    expect(run([response({ input: 5000, output: 0 }), response({ input: 5000, output: 100 }, "k1"), compaction, rewound])).toEqual([
      { used: 5000, size: 8000, cost: 5000 / 1_000_000 },
      undefined,
      { used: 300, size: 8000, cost: 10_200 / 1_000_000 },
      undefined
    ])
  })

  it("shows no cost before anything is priced, and nothing without a window", () => {
    expect(run([model("p/free"), response({ input: 10, output: 1 })])).toEqual([undefined, { used: 11, size: 4000 }])
    expect(run([response({ input: 10, output: 1 })], { models: undefined, defaultModel: undefined, providerWindow: undefined })).toEqual([undefined])
    expect(run([response({ input: 10, output: 1 })], { models: undefined, defaultModel: undefined, providerWindow: 500 })).toEqual([{ used: 11, size: 500 }])
  })
})
