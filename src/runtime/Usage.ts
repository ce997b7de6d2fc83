/**
 * The usage a session shows after a model call (the ephemeral `usage` event, ACP
 * `usage_update`): the context the call used of the model's window, and the session's cost so
 * far. It is not logged; a loaded session derives the last one it showed from its log (the
 * history's `spending` and `shownUsed`), its calls priced as the models are priced now; a
 * replay of its log shows each update again where the live session showed it (`meter`). Pure.
 */
import type { History } from "../log/History.ts"
import type { Canonical, UsageShown } from "../log/Event.ts"
import { absurd } from "effect/Function"
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

/** What the usage a session shows is derived with: the models' windows and prices, as a runtime has them. */
export interface Pricing {
  readonly models: Models.Catalog | undefined
  /** The model of a session that chose none. */
  readonly defaultModel: string | undefined
  /** The provider's own window, for a model the catalog does not know. */
  readonly providerWindow: number | undefined
}

/** A runtime's pricing: its catalog, its default model, its provider's window. */
export const pricing = (runtime: { readonly models: Models.Catalog | undefined; readonly contextWindow?: number | undefined }): Pricing => ({
  models: runtime.models,
  defaultModel: runtime.models?.defaultModel,
  providerWindow: runtime.contextWindow
})

/**
 * A replay's usage meter: fed a session's logged events in order, it answers the usage update
 * the live session showed right after each one (after a model call with usage, and after a
 * compaction), as the live session computes it: the context the call used of the window of the
 * model the session had then, and the cost so far, each call priced at its model's price (the
 * prices and windows of `pricing`: today's, as on load).
 */
export const meter = (pricing: Pricing): (event: Canonical) => UsageShown | undefined => {
  let model: string | undefined
  let spent = 0
  const info = () => pricing.models?.info(model ?? pricing.defaultModel)
  const window = () => info()?.contextWindow ?? pricing.providerWindow
  return (event) => {
    switch (event.type) {
      case "config_changed":
        if (event.data.id === "model") model = event.data.value
        return undefined
      case "model_response": {
        const usage = event.data.usage
        if (usage === undefined) return undefined
        const cost = Models.cost(usage, info()?.price)
        if (cost !== undefined) spent += cost
        // A compaction's summary call adds to the cost only: its `compaction` event shows the context after it.
        return shown(event.data.compaction === undefined ? Models.contextUsed(usage) : undefined, window(), spent, cost !== undefined)
      }
      case "compaction":
        return shown(event.data.usageAfter, window(), spent, false)
      case "turn_start":
      case "model_partial":
      case "tool_call":
      case "tool_result":
      case "mode_changed":
      case "plan":
      case "permission":
      case "notice":
      case "mcp_servers":
      case "subagent":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "checkpoint":
      case "rewound":
      case "turn_end":
        return undefined
      default:
        return absurd(event)
    }
  }
}
