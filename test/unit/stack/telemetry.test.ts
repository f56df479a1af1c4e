/**
 * The worker's telemetry settings from the standard `OTEL_*` variables and tether's own: what is exported
 * where, what turns it off, and the one line that says which setting cannot work.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, readTelemetry } from '../../../src/stack/config.js'

/** The ConfigError's message for `env`; fails the test when the settings are accepted. */
function refusal(env: NodeJS.ProcessEnv): string {
  try {
    readTelemetry(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error('the settings were accepted')
}

describe('telemetry settings', () => {
  it('export nothing and open nothing when no variable is set (empty ones count as unset)', () => {
    const off = {
      traces: undefined,
      metrics: undefined,
      prometheus: undefined,
      content: 'off',
      serviceName: 'tether-worker',
    }
    expect(readTelemetry({})).toEqual(off)
    expect(readTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: '', TETHER_METRICS_PORT: '' })).toEqual(off)
  })

  it('send both signals under the shared endpoint, over OTLP/HTTP protobuf, metrics every minute', () => {
    expect(readTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({
      traces: { url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf' },
      metrics: { url: 'http://collector:4318/v1/metrics', protocol: 'http/protobuf', intervalMs: 60_000 },
    })
  })

  it("take a signal's own endpoint as it is, and its own protocol over the shared one", () => {
    const settings = readTelemetry({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
    })
    expect(settings.traces).toEqual({ url: 'https://traces.example.com/otlp', protocol: 'http/json' })
    expect(settings.metrics).toMatchObject({
      url: 'http://collector:4318/v1/metrics',
      protocol: 'http/protobuf',
    })
  })

  it('export to the default collector for `otlp`, and not at all for `none` or a disabled SDK', () => {
    expect(readTelemetry({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({
      traces: { url: 'http://localhost:4318/v1/traces' },
      metrics: undefined,
    })
    const shared = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    expect(readTelemetry({ ...shared, OTEL_METRICS_EXPORTER: 'none' })).toMatchObject({
      traces: { url: 'http://collector:4318/v1/traces' },
      metrics: undefined,
    })
    // A disabled SDK exports nothing over OTLP; the Prometheus endpoint is tether's own and stays.
    expect(
      readTelemetry({ ...shared, OTEL_SDK_DISABLED: 'TRUE', TETHER_METRICS_PORT: '9464' }),
    ).toMatchObject({
      traces: undefined,
      metrics: undefined,
      prometheus: { host: '127.0.0.1', port: 9464 },
    })
  })

  it('read the metric interval (at least a second), the Prometheus endpoint, content excerpts and the service name', () => {
    expect(
      readTelemetry({
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_METRIC_EXPORT_INTERVAL: '250',
        TETHER_METRICS_PORT: '9464',
        TETHER_METRICS_HOST: '::1',
        TETHER_TRACE_CONTENT: 'excerpts',
        OTEL_SERVICE_NAME: 'ci-agents',
      }),
    ).toMatchObject({
      metrics: { intervalMs: 1_000 },
      prometheus: { host: '::1', port: 9464 },
      content: 'excerpts',
      serviceName: 'ci-agents',
    })
  })

  it('refuse what cannot work in one line naming the variable and the fix', () => {
    expect(refusal({ OTEL_TRACES_EXPORTER: 'zipkin' })).toBe(
      'OTEL_TRACES_EXPORTER is "zipkin"; tether exports traces over OTLP only: set it to otlp or none',
    )
    expect(
      refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL is "grpc"; tether sends OTLP over HTTP: set it to http/protobuf (or ' +
        "http/json) and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (usually 4318)",
    )
    expect(refusal({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'collector:4318' })).toBe(
      'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT must be an http:// or https:// URL, not "collector:4318"',
    )
    expect(refusal({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '1m' })).toBe(
      'OTEL_METRIC_EXPORT_INTERVAL must be milliseconds, a whole number, not "1m"',
    )
    for (const port of ['abc', '0', '65536', '9464.5']) {
      expect(refusal({ TETHER_METRICS_PORT: port })).toBe(
        `TETHER_METRICS_PORT must be a port number from 1 to 65535, not "${port}"`,
      )
    }
    expect(refusal({ TETHER_TRACE_CONTENT: 'full' })).toBe(
      'TETHER_TRACE_CONTENT must be off or excerpts, not "full"',
    )
  })

  it('leave an unused metric interval alone when no metrics are pushed', () => {
    expect(readTelemetry({ OTEL_METRIC_EXPORT_INTERVAL: 'soon' }).metrics).toBeUndefined()
  })
})
