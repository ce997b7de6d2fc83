/**
 * The usage a session shows after a model call (the ephemeral `usage` event, ACP
 * `usage_update`): the context the call used of the model's window, and the session's cost so
 * far. It is not logged; a loaded session derives the last one it showed from its log (the
 * history's `spending` and `shownUsed`), its calls priced as the models are priced now. Pure.
 */
import type { History } from "../log/History.ts"
import type { UsageShown } from "../log/Event.ts"
import * as Models from "../providers/Models.ts"

/**
 * What is shown: nothing while the window's size or the context used is unknown; the cost once
 * something was spent or the call's model has a price (a free model's cost is 0, shown).
 */
export const shown = (used: number | undefined, size: number | undefined, spent: number, priced: boolean): UsageShown | undefined =>
  used === undefined || size === undefined ? undefined : { used, size, ...(spent > 0 || priced ? { cost: spent } : {}) }

/** A loaded session's cost so far and the usage it showed last. */
export interface Restored {
  /** USD, over the calls whose model has a price now. */
  readonly spent: number
  readonly shown: UsageShown | undefined
}

/**
 * What the calls a history holds cost (each model's summed usage at its price; `""`, the calls
 * with the session's default model, as `defaultModel`), and the usage update its last call or
 * compaction showed, with the window of the model the session has now.
 */
export const restore = (
  history: Pick<History, "spending" | "shownUsed" | "config">,
  models: Models.Catalog | undefined,
  defaultModel: string | undefined,
  providerWindow: number | undefined
): Restored => {
  let usd = 0
  let priced = false
  for (const [model, usage] of history.spending) {
    const cost = Models.cost(usage, models?.info(model === "" ? defaultModel : model)?.price)
    if (cost === undefined) continue
    usd += cost
    priced = true
  }
  const size = models?.info(history.config.get("model") ?? defaultModel)?.contextWindow ?? providerWindow
  return { spent: usd, shown: shown(history.shownUsed, size, usd, priced) }
}
