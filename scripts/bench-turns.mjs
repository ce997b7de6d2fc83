// What a bench measures of a session's turns (shared by bench-remote.mjs and bench-cluster.mjs):
// `runs` turns (+1 warm-up) of a fast script, throughput as text deltas delivered per second,
// then `runs` (+1) turns that stream one delta every few ms, as the mean time from each
// update's emission (`ts`) to its arrival. The script must answer the turns in that order.
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? null : s[Math.floor((s.length - 1) / 2)]
}

export const measureTurns = (session, runs) =>
  Effect.gen(function*() {
    const rates = []
    const latencies = []
    for (let i = 0; i <= runs; i++) {
      const started = performance.now()
      let delivered = 0
      yield* session.turn([{ type: "text", text: "go" }]).pipe(
        Stream.runForEach((e) => Effect.sync(() => {
          if (e.type === "text_delta") delivered += e.data.text.length
        }))
      )
      if (i > 0) rates.push(delivered / ((performance.now() - started) / 1000))
    }
    for (let i = 0; i <= runs; i++) {
      const lags = []
      yield* session.turn([{ type: "text", text: "go" }]).pipe(
        Stream.runForEach((e) => Effect.sync(() => {
          if (e.type === "text_delta") lags.push(Date.now() - e.ts)
        }))
      )
      if (i > 0) latencies.push(lags.reduce((a, b) => a + b, 0) / lags.length)
    }
    return { deltasPerSecond: median(rates), meanLagMs: median(latencies), samples: { deltasPerSecond: rates, meanLagMs: latencies } }
  })
