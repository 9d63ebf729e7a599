// OTLP/HTTP export requests as the daemon's receiver takes them (`/v1/traces`, `/v1/logs`): the
// OTLP/JSON shape of opentelemetry-proto's ExportTraceServiceRequest and ExportLogsServiceRequest
// (lowerCamelCase fields, ids as hex, 64-bit integers as decimal strings or numbers). Protobuf bodies
// are decoded into this same shape first (telemetry/otlp-proto.ts). Unknown fields are ignored, as
// the OTLP spec asks of receivers.
import { z } from 'zod';

const Int64 = z.union([z.string().regex(/^-?\d+$/, 'a decimal integer'), z.number().int()]);
const UInt64 = z.union([z.string().regex(/^\d+$/, 'a decimal integer'), z.number().int().nonnegative()]);
const HexId = z.string().regex(/^([0-9a-fA-F]{2})*$/, 'hex digits');

export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number | string;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}
export interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

export const OtlpAnyValue: z.ZodType<OtlpAnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: Int64.optional(),
    doubleValue: z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).optional(),
    arrayValue: z.object({ values: z.array(OtlpAnyValue).optional() }).optional(),
    kvlistValue: z.object({ values: z.array(OtlpKeyValue).optional() }).optional(),
    bytesValue: z.string().optional(),
  }),
);
export const OtlpKeyValue: z.ZodType<OtlpKeyValue> = z.lazy(() =>
  z.object({ key: z.string(), value: OtlpAnyValue.optional() }),
);
const Attributes = z.array(OtlpKeyValue).optional();
const Resource = z.object({ attributes: Attributes }).optional();
const Scope = z.object({ name: z.string().optional(), version: z.string().optional() }).optional();

export const OtlpSpan = z.object({
  traceId: HexId.optional(),
  spanId: HexId.optional(),
  parentSpanId: HexId.optional(),
  name: z.string().default(''),
  kind: z.number().int().optional(),
  startTimeUnixNano: UInt64.optional(),
  endTimeUnixNano: UInt64.optional(),
  attributes: Attributes,
  status: z.object({ code: z.number().int().optional(), message: z.string().optional() }).optional(),
});

export const OtlpLogRecord = z.object({
  timeUnixNano: UInt64.optional(),
  observedTimeUnixNano: UInt64.optional(),
  severityNumber: z.number().int().optional(),
  severityText: z.string().optional(),
  eventName: z.string().optional(),
  body: OtlpAnyValue.optional(),
  attributes: Attributes,
  traceId: HexId.optional(),
  spanId: HexId.optional(),
});

export const OtlpTracesRequest = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: Resource,
        scopeSpans: z.array(z.object({ scope: Scope, spans: z.array(OtlpSpan).optional() })).optional(),
      }),
    )
    .optional(),
});

export const OtlpLogsRequest = z.object({
  resourceLogs: z
    .array(
      z.object({
        resource: Resource,
        scopeLogs: z
          .array(z.object({ scope: Scope, logRecords: z.array(OtlpLogRecord).optional() }))
          .optional(),
      }),
    )
    .optional(),
});

export type OtlpSpan = z.infer<typeof OtlpSpan>;
export type OtlpLogRecord = z.infer<typeof OtlpLogRecord>;
export type OtlpTracesRequest = z.infer<typeof OtlpTracesRequest>;
export type OtlpLogsRequest = z.infer<typeof OtlpLogsRequest>;
