/**
 * What the OpenTelemetry variables turn into, as pure functions: the W3C `traceparent` a client
 * sends (anything malformed is ignored), whether telemetry is on, and the exporter's settings
 * (endpoints per signal, headers, protocol, resource), with a warning, never a failure, for
 * what cannot be used.
 */
import { describe, expect, it } from "vitest"
import * as Otlp from "../../src/telemetry/Otlp.ts"
import * as Telemetry from "../../src/telemetry/Telemetry.ts"
import * as TraceContext from "../../src/telemetry/TraceContext.ts"

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const SPAN = "00f067aa0ba902b7"

describe("TraceContext", () => {
  it("reads a valid traceparent, and formats one back", () => {
    expect(TraceContext.parse(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true })
    expect(TraceContext.parse(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false })
    // A later version may carry more fields.
    expect(TraceContext.parse(`01-${TRACE}-${SPAN}-01-what-comes-next`)?.traceId).toBe(TRACE)
    expect(TraceContext.format({ traceId: TRACE, spanId: SPAN, sampled: true })).toBe(`00-${TRACE}-${SPAN}-01`)
  })

  it("ignores anything malformed", () => {
    for (
      const bad of [
        undefined,
        42,
        "",
        `00-${TRACE}-${SPAN}`,
        `00-${TRACE.toUpperCase()}-${SPAN}-01`,
        `00-${"0".repeat(32)}-${SPAN}-01`,
        `00-${TRACE}-${"0".repeat(16)}-01`,
        `ff-${TRACE}-${SPAN}-01`,
        `00-${TRACE}-${SPAN}-01-extra`,
        `00-${TRACE}x-${SPAN}-01`,
        `00-${TRACE}-${SPAN}-01${" ".repeat(600)}`
      ]
    ) expect(TraceContext.parse(bad)).toBeUndefined()
  })
})

describe("Telemetry.enabled", () => {
  it("is on with an endpoint (or one signal's), off without one or when the SDK is disabled", () => {
    expect(Telemetry.enabled({})).toBe(false)
    expect(Telemetry.enabled({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false)
    expect(Telemetry.enabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true)
    expect(Telemetry.enabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true)
    expect(Telemetry.enabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "TRUE" })).toBe(false)
  })
})

describe("Otlp.settings", () => {
  it("derives each signal's endpoint, headers and protocol, and the resource", () => {
    const s = Otlp.settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/base/",
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "https://metrics.example/ingest",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20abc, x-tenant = blue",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: "http/protobuf",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,team=agents%2Ctools,service.name=from-attributes",
      OTEL_BSP_SCHEDULE_DELAY: "250"
    })
    expect(s.traces).toEqual({ url: "http://collector:4318/base/v1/traces", headers: { Authorization: "Bearer abc", "x-tenant": "blue" }, protocol: "http/json" })
    expect(s.metrics?.url).toBe("https://metrics.example/ingest")
    expect(s.logs).toMatchObject({ url: "http://collector:4318/base/v1/logs", protocol: "http/protobuf" })
    expect(s.resource.serviceName).toBe("from-attributes")
    expect(s.resource.attributes).toEqual({ "deployment.environment": "prod", team: "agents,tools" })
    expect(s.warnings).toEqual([])
    expect(Otlp.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SERVICE_NAME: "mine" }).resource.serviceName).toBe("mine")
    expect(Otlp.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }).resource.serviceName).toBe("skein")
  })

  it("turns a signal off with OTEL_<SIGNAL>_EXPORTER=none", () => {
    const s = Otlp.settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_LOGS_EXPORTER: "none", OTEL_METRICS_EXPORTER: "None" })
    expect([s.traces !== undefined, s.metrics !== undefined, s.logs !== undefined]).toEqual([true, false, false])
  })

  it("warns, without repeating a value, about what it cannot use, and keeps going", () => {
    const secret = "Authorization=Bearer%ZZsecret"
    const s = Otlp.settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: secret,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_RESOURCE_ATTRIBUTES: "=x",
      OTEL_METRIC_EXPORT_INTERVAL: "soon"
    })
    expect(s.traces).toBeUndefined()
    expect(s.metrics).toBeUndefined()
    expect(s.logs).toMatchObject({ url: "http://c:4318/v1/logs", protocol: "http/protobuf" })
    expect(s.warnings).toEqual([
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL: traces are not exported",
      "OTEL_EXPORTER_OTLP_METRICS_HEADERS is not a list of key=value pairs: metrics are not exported",
      "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (Skein exports over OTLP/HTTP): logs go as http/protobuf",
      "OTEL_RESOURCE_ATTRIBUTES is not a list of key=value pairs; it is ignored",
      "OTEL_METRIC_EXPORT_INTERVAL is not a whole number of milliseconds above 0; the default is used"
    ])
    expect(s.warnings.join("\n")).not.toContain("secret")
  })
})
