/**
 * Exports traces, metrics and logs over OTLP/HTTP through `effect/observability`, configured
 * from the standard OpenTelemetry variables:
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces`, `/v1/metrics`, `/v1/logs` below it), or a
 *   signal's own `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` (used as it is);
 * - `OTEL_EXPORTER_OTLP_HEADERS` / `…_<SIGNAL>_HEADERS` (`key=value,…`, percent-decoded);
 * - `OTEL_EXPORTER_OTLP_PROTOCOL` / `…_<SIGNAL>_PROTOCOL`: `http/protobuf` (the default) or
 *   `http/json`; `grpc` is not supported (a warning, then `http/protobuf`);
 * - `OTEL_SERVICE_NAME` (default `skein`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`);
 * - `OTEL_<SIGNAL>_EXPORTER=none` turns one signal off; `OTEL_BSP_SCHEDULE_DELAY` and
 *   `OTEL_METRIC_EXPORT_INTERVAL` (ms) set how often spans and metrics are sent.
 *
 * A value that cannot be used is a warning on stderr (which never repeats it: a header may be
 * a credential) and that signal stays off; Skein itself always starts. Log records are
 * redacted as stderr's are: a secret Skein knows never leaves in one.
 */
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as HttpClient from "effect/http/HttpClient"
import * as OtlpExporter from "effect/observability/OtlpExporter"
import * as OtlpLogger from "effect/observability/OtlpLogger"
import * as OtlpMetrics from "effect/observability/OtlpMetrics"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import * as Secrets from "../secrets/Secrets.ts"
import * as Stderr from "../secrets/Stderr.ts"
import { VERSION } from "../version.ts"
import type { Env } from "./Telemetry.ts"

export type Signal = "traces" | "metrics" | "logs"
export type Protocol = "http/json" | "http/protobuf"

export interface Target {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: Protocol
}

export interface Settings {
  readonly traces: Target | undefined
  readonly metrics: Target | undefined
  readonly logs: Target | undefined
  readonly resource: { readonly serviceName: string; readonly serviceVersion: string; readonly attributes: Readonly<Record<string, string>> }
  readonly spanInterval: Duration.Duration | undefined
  readonly metricInterval: Duration.Duration | undefined
  /** What could not be used, for stderr (never a value: it may be a credential). */
  readonly warnings: ReadonlyArray<string>
}

const value = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim()
  return v === undefined || v === "" ? undefined : v
}

/** `key=value,key=value` with percent-encoded parts (W3C Baggage's shape, as OTel uses it); undefined when malformed. */
export const pairs = (text: string): Record<string, string> | undefined => {
  const out: Record<string, string> = {}
  for (const item of text.split(",")) {
    if (item.trim() === "") continue
    const eq = item.indexOf("=")
    if (eq <= 0) return undefined
    try {
      const key = decodeURIComponent(item.slice(0, eq).trim())
      if (key === "") return undefined
      out[key] = decodeURIComponent(item.slice(eq + 1).trim())
    } catch {
      return undefined
    }
  }
  return out
}

const millis = (env: Env, name: string, warnings: Array<string>): Duration.Duration | undefined => {
  const raw = value(env, name)
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (Number.isInteger(n) && n > 0) return Duration.millis(n)
  warnings.push(`${name} is not a whole number of milliseconds above 0; the default is used`)
  return undefined
}

/** What the environment asks for. Pure. */
export const settings = (env: Env): Settings => {
  const warnings: Array<string> = []
  const target = (signal: Signal): Target | undefined => {
    const SIGNAL = signal.toUpperCase()
    if (value(env, `OTEL_${SIGNAL}_EXPORTER`)?.toLowerCase() === "none") return undefined
    const own = value(env, `OTEL_EXPORTER_OTLP_${SIGNAL}_ENDPOINT`)
    const base = value(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
    const name = own !== undefined ? `OTEL_EXPORTER_OTLP_${SIGNAL}_ENDPOINT` : "OTEL_EXPORTER_OTLP_ENDPOINT"
    const raw = own ?? base
    if (raw === undefined) return undefined
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      warnings.push(`${name} is not a URL: ${signal} are not exported`)
      return undefined
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      warnings.push(`${name} is not an http or https URL: ${signal} are not exported`)
      return undefined
    }
    if (own === undefined) url.pathname = `${url.pathname.replace(/\/$/, "")}/v1/${signal}`
    const headerName = value(env, `OTEL_EXPORTER_OTLP_${SIGNAL}_HEADERS`) !== undefined ? `OTEL_EXPORTER_OTLP_${SIGNAL}_HEADERS` : "OTEL_EXPORTER_OTLP_HEADERS"
    const headerText = value(env, headerName)
    const headers = headerText === undefined ? {} : pairs(headerText)
    if (headers === undefined) {
      warnings.push(`${headerName} is not a list of key=value pairs: ${signal} are not exported`)
      return undefined
    }
    const protocolName = value(env, `OTEL_EXPORTER_OTLP_${SIGNAL}_PROTOCOL`) !== undefined ? `OTEL_EXPORTER_OTLP_${SIGNAL}_PROTOCOL` : "OTEL_EXPORTER_OTLP_PROTOCOL"
    const asked = value(env, protocolName) ?? "http/protobuf"
    let protocol: Protocol = "http/protobuf"
    if (asked === "http/json") protocol = "http/json"
    else if (asked !== "http/protobuf") {
      const said = `${protocolName}=${asked.slice(0, 40)} is not supported (Skein exports over OTLP/HTTP): ${signal} go as http/protobuf`
      if (!warnings.includes(said)) warnings.push(said)
    }
    return { url: url.toString(), headers, protocol }
  }
  const traces = target("traces")
  const metrics = target("metrics")
  const logs = target("logs")
  const attributesText = value(env, "OTEL_RESOURCE_ATTRIBUTES")
  let attributes = attributesText === undefined ? {} : pairs(attributesText)
  if (attributes === undefined) {
    warnings.push("OTEL_RESOURCE_ATTRIBUTES is not a list of key=value pairs; it is ignored")
    attributes = {}
  }
  const { ["service.name"]: named, ["service.version"]: _version, ...rest } = attributes
  return {
    traces,
    metrics,
    logs,
    resource: { serviceName: value(env, "OTEL_SERVICE_NAME") ?? named ?? "skein", serviceVersion: VERSION, attributes: rest },
    spanInterval: millis(env, "OTEL_BSP_SCHEDULE_DELAY", warnings),
    metricInterval: millis(env, "OTEL_METRIC_EXPORT_INTERVAL", warnings),
    warnings
  }
}

const serialization = (protocol: Protocol) => (protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf)

/** A log record as stderr would show it: the message and its cause redacted, the cause as text. */
const redacting = (inner: Logger.Logger<unknown, void>): Logger.Logger<unknown, void> =>
  Logger.make((options) => {
    const cause = options.cause.reasons.length === 0 ? [] : [Secrets.redact(Cause.pretty(options.cause))]
    inner.log({ ...options, message: [...(Array.isArray(options.message) ? options.message : [options.message]).map(Secrets.redactDeep), ...cause], cause: Cause.empty })
  })

/** The exporters the environment asks for, for as long as the layer lives (they flush when it closes). */
export const layer = (env: Env): Layer.Layer<never> => {
  const s = settings(env)
  for (const warning of s.warnings) Stderr.write(`skein: telemetry: ${warning}\n`)
  const resource = s.resource
  const exporters: Array<Layer.Layer<never, never, HttpClient.HttpClient>> = []
  if (s.traces !== undefined) {
    exporters.push(
      OtlpTracer.layer({ url: s.traces.url, headers: s.traces.headers, resource, exportInterval: s.spanInterval }).pipe(Layer.provide(serialization(s.traces.protocol)))
    )
  }
  if (s.metrics !== undefined) {
    exporters.push(
      OtlpMetrics.layer({ url: s.metrics.url, headers: s.metrics.headers, resource, exportInterval: s.metricInterval }).pipe(Layer.provide(serialization(s.metrics.protocol)))
    )
  }
  if (s.logs !== undefined) {
    const logs = s.logs
    exporters.push(
      Logger.layer([Effect.map(OtlpLogger.make({ url: logs.url, headers: logs.headers, resource }), redacting)], { mergeWithExisting: true }).pipe(
        Layer.provide(serialization(logs.protocol)),
        Layer.provide(OtlpExporter.layerFlusher)
      )
    )
  }
  if (exporters.length === 0) return Layer.empty
  return Layer.mergeAll(...(exporters as [Layer.Layer<never, never, HttpClient.HttpClient>])).pipe(
    Layer.provide(FetchHttpClient.layer),
    // Everything is configured here: the exporters read no variable of their own (a malformed
    // OTEL_RESOURCE_ATTRIBUTES would otherwise stop Skein from starting).
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))
  )
}
