/**
 * Whether Skein exports telemetry, and the layer that does. It is on when the environment
 * names an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, or one signal's own
 * `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`), as ACP's telemetry RFD has a client
 * set it, and `OTEL_SDK_DISABLED` is not `true`. Off, the exporter (`Otlp.ts`) is never
 * loaded: this module is all start-up pays.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export type Env = Readonly<Record<string, string | undefined>>

const set = (value: string | undefined) => value !== undefined && value.trim() !== ""

/** Whether the environment asks for telemetry. */
export const enabled = (env: Env): boolean =>
  env["OTEL_SDK_DISABLED"]?.trim().toLowerCase() !== "true" &&
  (set(env["OTEL_EXPORTER_OTLP_ENDPOINT"]) || ["TRACES", "METRICS", "LOGS"].some((signal) => set(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`])))

/** The exporter, loaded on first use (only when `enabled`). Its problems are warnings on stderr, never a failure. */
export const layer = (env: Env): Layer.Layer<never> =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("./Otlp.ts")), (otlp) => otlp.layer(env)))
