/**
 * A worker's telemetry (docs/observability.md): OpenTelemetry traces through Temporal's own interceptors
 * (`@temporalio/interceptors-opentelemetry`: the workflow's spans, tether's among them, travel out through a
 * sink the SDK does not call on replay; each activity runs in a span whose parent came in its headers, so a
 * parent workflow's trace holds its child runs), and tether's metrics, exported over OTLP where the standard
 * `OTEL_*` variables say so and on a Prometheus endpoint when `TETHER_METRICS_PORT` does. Nothing is
 * exported, and no endpoint opened, when none of them is set.
 *
 * The providers are tether's own, not the process's global ones, so a host application's OpenTelemetry
 * setup is left as it is; only the W3C propagator and an async context manager are registered globally
 * (Temporal's interceptors need both), and only where none is yet.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { context, createTraceState, type Meter, propagation, type Tracer } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPMetricExporter as OtlpJsonMetrics } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPMetricExporter as OtlpProtoMetrics } from '@opentelemetry/exporter-metrics-otlp-proto'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { OTLPTraceExporter as OtlpJsonTraces } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as OtlpProtoTraces } from '@opentelemetry/exporter-trace-otlp-proto'
import { envDetectorSync, Resource } from '@opentelemetry/resources'
import { MeterProvider, type MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetrySinks,
  type SerializableSpan,
} from '@temporalio/interceptors-opentelemetry'
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker'
import type { ActivityTelemetry } from '../activities/index.js'
import { ATTR, INSTRUMENTATION } from '../run/index.js'
import { packageVersion, type TelemetryConfig } from '../stack/index.js'

/**
 * The workflow interceptors a tracing worker's bundle loads: tether's (workflows/trace-interceptors.ts), which
 * make the spans Temporal's OpenTelemetry workflow interceptors make, at a fraction of their cost in the
 * workflow sandbox. The compiled `.js` in a build, the `.ts` source in a checkout.
 */
export const OTEL_WORKFLOW_INTERCEPTORS = ((js) => (existsSync(js) ? js : js.replace(/\.js$/, '.ts')))(
  fileURLToPath(new URL('../workflows/trace-interceptors.js', import.meta.url)),
)

/** A worker's telemetry: made from its configuration, started with the worker, shut down after it. */
export class WorkerTelemetry {
  /** What the activities report to. */
  readonly activities: ActivityTelemetry
  private readonly tracing?: { provider: BasicTracerProvider; processor: SpanProcessor; resource: Resource }
  private readonly meters?: MeterProvider
  private readonly prometheus?: PrometheusExporter
  private readonly settings: TelemetryConfig

  /**
   * `spanProcessor` / `metricReaders` take the place of the exporters the settings name (tests, or an
   * embedder's own pipeline); the Prometheus endpoint is opened by `start()`.
   */
  constructor(
    settings: TelemetryConfig,
    options: { spanProcessor?: SpanProcessor; metricReaders?: MetricReader[] } = {},
  ) {
    this.settings = settings
    const resource = Resource.default()
      .merge(new Resource({ 'service.name': settings.serviceName, 'service.version': packageVersion() }))
      .merge(envDetectorSync.detect())
    const exporter = options.spanProcessor ? undefined : traceExporter(settings)
    const processor = options.spanProcessor ?? (exporter ? new BatchSpanProcessor(exporter) : undefined)
    if (processor) {
      const runIds = new RunIdProcessor(processor)
      const provider = new BasicTracerProvider({ resource, spanProcessors: [runIds] })
      this.tracing = { provider, processor: runIds, resource }
      // Temporal's interceptors inject and extract trace context through the global propagator, and find
      // the active span through the global context manager; set them only where the host has none.
      propagation.setGlobalPropagator(new W3CTraceContextPropagator())
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    }
    const readers: MetricReader[] = [...(options.metricReaders ?? [])]
    if (!options.metricReaders && settings.metrics) {
      readers.push(
        new PeriodicExportingMetricReader({
          exporter: metricExporter(settings.metrics),
          exportIntervalMillis: settings.metrics.intervalMs,
        }),
      )
    }
    if (settings.prometheus) {
      this.prometheus = new PrometheusExporter({
        host: settings.prometheus.host,
        port: settings.prometheus.port,
        preventServerStart: true,
      })
      readers.push(this.prometheus)
    }
    if (readers.length > 0) this.meters = new MeterProvider({ resource, readers })
    this.activities = {
      ...(this.meters ? { meter: this.meters.getMeter(INSTRUMENTATION, packageVersion()) } : {}),
      content: settings.content,
    }
  }

  /** Whether spans are made and exported. */
  get traces(): boolean {
    return this.tracing !== undefined
  }

  /** tether's meter, when metrics go anywhere. */
  get meter(): Meter | undefined {
    return this.activities.meter
  }

  /** The tracer activity spans are made with, when the worker traces. */
  get tracer(): Tracer | undefined {
    return this.tracing?.provider.getTracer(INSTRUMENTATION, packageVersion())
  }

  /** Where the Prometheus endpoint listens, when it is on: `http://HOST:PORT/metrics`. */
  get prometheusUrl(): string | undefined {
    const endpoint = this.settings.prometheus
    return endpoint
      ? `http://${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}/metrics`
      : undefined
  }

  /**
   * What a Worker needs to trace: Temporal's workflow interceptors (in the workflow bundle), its activity
   * interceptors with this tracer, and the sink workflow spans leave by. Empty when the worker does not trace.
   */
  workerOptions(): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
    const tracer = this.tracer
    if (!this.tracing || !tracer) return {}
    return {
      interceptors: {
        workflowModules: [OTEL_WORKFLOW_INTERCEPTORS],
        activity: [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: this.sinks(),
    }
  }

  /**
   * The sink workflow spans are exported through: a workflow's spans of one activation at a time, each given
   * the workflow's identity (WORKFLOW_IDENTITY) of the workflow info the sink is called with.
   */
  sinks(): InjectedSinks<OpenTelemetrySinks> | Record<string, never> {
    if (!this.tracing) return {}
    const { processor, resource } = this.tracing
    return {
      exporter: {
        export: {
          fn: (info, spans) => {
            const identity: Record<string, unknown> = {}
            for (const key of WORKFLOW_IDENTITY) {
              const value = (info as unknown as Record<string, unknown>)[key]
              if (value !== undefined) identity[key] = value
            }
            for (const span of spans) processor.onEnd(readableSpan(span, identity, resource))
          },
        },
      },
    }
  }

  /** Opens the Prometheus endpoint, if there is one; a port that is taken is an error naming it. */
  async start(): Promise<void> {
    const prometheus = this.prometheus
    const endpoint = this.settings.prometheus
    if (!prometheus || !endpoint) return
    try {
      await prometheus.startServer()
    } catch (error) {
      throw new Error(
        `TETHER_METRICS_PORT: cannot serve metrics on ${endpoint.host}:${endpoint.port} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); choose a free port`,
      )
    }
  }

  /** Exports what is pending and closes everything (the Prometheus endpoint too). */
  async shutdown(): Promise<void> {
    await Promise.allSettled([this.tracing?.provider.shutdown(), this.meters?.shutdown()])
  }
}

/** A workflow span as the exporters take it (what Temporal's own sink made of one). */
function readableSpan(
  serialized: SerializableSpan,
  identity: Record<string, unknown>,
  resource: Resource,
): ReadableSpan {
  const {
    spanContext: { traceState, ...ids },
    ...rest
  } = serialized
  Object.assign(rest.attributes, identity)
  const spanContext = { ...ids, ...(traceState ? { traceState: createTraceState(traceState) } : {}) }
  return { ...rest, resource, spanContext: () => spanContext } as unknown as ReadableSpan
}

function traceExporter(settings: TelemetryConfig) {
  const target = settings.traces
  if (!target) return undefined
  return target.protocol === 'http/json'
    ? new OtlpJsonTraces({ url: target.url })
    : new OtlpProtoTraces({ url: target.url })
}

function metricExporter(target: NonNullable<TelemetryConfig['metrics']>) {
  return target.protocol === 'http/json'
    ? new OtlpJsonMetrics({ url: target.url })
    : new OtlpProtoMetrics({ url: target.url })
}

/** What a workflow span carries of the workflow info its sink is called with: who and where. */
const WORKFLOW_IDENTITY = new Set([
  'workflowId',
  'runId',
  'workflowType',
  'taskQueue',
  'namespace',
  'attempt',
  'currentBuildId',
])

/**
 * Every span carries its run's id as `tether.run.id`: Temporal's own spans name the workflow (the run id)
 * in their own words. Of the rest, a span keeps what a span attribute can hold under a name a trace reader
 * knows (`kept`); absent values go.
 */
class RunIdProcessor implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parent: Parameters<SpanProcessor['onStart']>[1]): void {
    this.next.onStart(span, parent)
  }

  onEnd(span: ReadableSpan): void {
    const attributes = span.attributes as Record<string, unknown>
    const runId = attributes[ATTR.runId] ?? attributes.temporalWorkflowId ?? attributes.workflowId
    for (const [key, value] of Object.entries(attributes)) {
      if (!kept(key, value)) delete attributes[key]
    }
    if (typeof runId === 'string') attributes[ATTR.runId] = runId
    this.next.onEnd(span)
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush()
  }

  shutdown(): Promise<void> {
    return this.next.shutdown()
  }
}

/**
 * An attribute worth exporting: a value a span attribute can hold, under a namespaced name (tether's,
 * the GenAI conventions'), one of Temporal's own (`temporal…`, `run_id`), or the workflow's identity.
 */
function kept(key: string, value: unknown): boolean {
  if (value === null || value === undefined) return false
  if (typeof value === 'object' && !Array.isArray(value)) return false
  return key.includes('.') || key.startsWith('temporal') || key === 'run_id' || WORKFLOW_IDENTITY.has(key)
}
