/**
 * Optional OpenTelemetry tracing of a worker's activities (tool executions, probes, the record
 * watch, model calls), through @temporalio/interceptors-opentelemetry: each activity runs in a
 * span (`RunActivity:<type>`) linked to the trace context its caller sent, exported by OTLP over
 * HTTP. Off unless the environment asks for it:
 *
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT   where to send (standard)
 *   SETTLE_OTEL=1                                                       on, to the standard default
 *                                                                       (http://localhost:4318)
 *   SETTLE_OTEL=0                                                       off, whatever else is set
 *
 * The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself (headers, timeout), the
 * batch processor OTEL_BSP_*, the resource OTEL_SERVICE_NAME. Workflow spans are not exported:
 * they need the workflow interceptors inside the workflow bundle (not done yet).
 */
import type { Tracer } from '@opentelemetry/api';
import type { WorkerOptions } from '@temporalio/worker';

export const OTEL_VARIABLE = 'SETTLE_OTEL';

export interface Tracing {
  /** Activity interceptors that put each execution in a span. */
  activityInterceptors: NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']>;
  /** Sends the spans not yet exported, then stops. */
  shutdown(): Promise<void>;
}

/** Whether the environment turns tracing on (see the module comment). */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const flag = env[OTEL_VARIABLE];
  if (flag !== undefined && flag !== '0' && flag !== '1') throw new Error(`${OTEL_VARIABLE}: must be 0 or 1 (got ${JSON.stringify(flag)})`);
  if (flag === '0') return false;
  return flag === '1' || !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || !!env.OTEL_EXPORTER_OTLP_ENDPOINT;
}

/** Tracing as the environment asks, or null when it is off. */
export async function tracingFromEnv(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingEnabled(env)) return null;
  // Loaded only when tracing is on: the OpenTelemetry SDK and its exporter are a tenth of a
  // worker's module loading, which every restart (so every recovery) waits for.
  const [{ trace }, { OTLPTraceExporter }, { BasicTracerProvider, BatchSpanProcessor }, otel] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/sdk-trace-base'),
    import('@temporalio/interceptors-opentelemetry'),
  ]);
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  const tracer: Tracer = provider.getTracer(serviceName);
  // Also the global provider, so libraries' own spans join the same traces.
  trace.setGlobalTracerProvider(provider);
  return {
    activityInterceptors: [
      (ctx) => ({
        inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
        outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    shutdown: () => provider.shutdown(),
  };
}
