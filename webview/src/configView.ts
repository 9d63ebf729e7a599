// A run config as a person reads it: one section per top-level part (schedule, trainer, …) with
// its settings as "path → value" rows, secrets masked. Pure.
import { metricTitle } from './metrics';

export interface ConfigSection {
  title: string;
  rows: [path: string, value: string][];
}

const SECRET = /(^|_)(token|key|secret|password)$/i;

export function configSections(config: unknown): ConfigSection[] {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    return [{ title: 'Run', rows: [['config', valueText(config)]] }];
  }
  const general: ConfigSection = { title: 'Run', rows: [] };
  const sections: ConfigSection[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (isNested(value)) sections.push({ title: metricTitle(key), rows: flatten(value, '') });
    else general.rows.push([key, SECRET.test(key) ? masked(value) : valueText(value)]);
  }
  return general.rows.length > 0 ? [general, ...sections] : sections;
}

function flatten(value: object, prefix: string): [string, string][] {
  const rows: [string, string][] = [];
  const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value);
  if (entries.length === 0) return [[prefix || '(empty)', Array.isArray(value) ? 'none' : '—']];
  for (const [key, v] of entries) {
    const path = key.startsWith('[') ? `${prefix}${key}` : prefix ? `${prefix}.${key}` : key;
    if (isNested(v)) rows.push(...flatten(v, path));
    else rows.push([path, SECRET.test(key) ? masked(v) : valueText(v)]);
  }
  return rows;
}

/** Objects and arrays of objects get their own rows; arrays of plain values read as one list. */
function isNested(v: unknown): v is object {
  if (v === null || typeof v !== 'object') return false;
  return !Array.isArray(v) || v.some((x) => x !== null && typeof x === 'object');
}

function valueText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length ? v.map(valueText).join(', ') : 'none';
  return String(v);
}

function masked(v: unknown): string {
  return v === null || v === undefined || v === '' ? '—' : '•••••• (hidden)';
}
