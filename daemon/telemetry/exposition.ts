// The Prometheus text exposition format (version 0.0.4), written by hand: counters and histograms whose
// per-call update is a map look-up and a few adds (a client library's labels() hashes its arguments on
// every call, ~500 ns each), gauges filled at scrape time.
export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Label values escape backslash, double quote and line feed; HELP text backslash and line feed. */
const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

export function formatValue(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}

function labelText(names: readonly string[], values: readonly string[], extra = ''): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? '')}"`);
  if (extra) parts.push(extra);
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`;
}

interface Family {
  render(): string;
}

export class CounterChild {
  value = 0;
  constructor(readonly labels: readonly string[]) {}
  inc(by = 1): void {
    this.value += by;
  }
}

export class Counter implements Family {
  private readonly children = new Map<string, CounterChild>();
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[] = [],
  ) {}

  /** The child for these label values (keep it: looking it up again costs a join and a map look-up). */
  labels(...values: string[]): CounterChild {
    const key = values.join('\u0000');
    let child = this.children.get(key);
    if (!child) {
      child = new CounterChild(values);
      this.children.set(key, child);
    }
    return child;
  }

  render(): string {
    let out = header(this.name, this.help, 'counter');
    for (const c of this.children.values())
      out += `${this.name}${labelText(this.labelNames, c.labels)} ${formatValue(c.value)}\n`;
    return out;
  }
}

export class HistogramChild {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot is (last bound, +Inf). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

export class Histogram implements Family {
  private readonly children = new Map<string, HistogramChild>();
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {}

  labels(...values: string[]): HistogramChild {
    const key = values.join('\u0000');
    let child = this.children.get(key);
    if (!child) {
      child = new HistogramChild(values, this.bounds);
      this.children.set(key, child);
    }
    return child;
  }

  render(): string {
    let out = header(this.name, this.help, 'histogram');
    for (const c of this.children.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += c.counts[i]!;
        const le = i < this.bounds.length ? formatValue(this.bounds[i]!) : '+Inf';
        out += `${this.name}_bucket${labelText(this.labelNames, c.labels, `le="${le}"`)} ${cumulative}\n`;
      }
      out += `${this.name}_sum${labelText(this.labelNames, c.labels)} ${formatValue(c.sum)}\n`;
      out += `${this.name}_count${labelText(this.labelNames, c.labels)} ${c.count}\n`;
    }
    return out;
  }
}

export type GaugeSample = [labelValues: string[], value: number];

/** A gauge whose samples are read at scrape time. */
export class Gauge {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly collect: () => Promise<GaugeSample[]> | GaugeSample[],
  ) {}

  async render(): Promise<string> {
    let out = header(this.name, this.help, 'gauge');
    for (const [labels, value] of await this.collect())
      out += `${this.name}${labelText(this.labelNames, labels)} ${formatValue(value)}\n`;
    return out;
  }
}

export class Registry {
  private readonly families: (Family | Gauge)[] = [];

  add<T extends Family | Gauge>(family: T): T {
    this.families.push(family);
    return family;
  }

  /** The exposition text; a gauge whose collect fails is left out (the scrape still answers). */
  async render(onError: (name: string, err: unknown) => void): Promise<string> {
    const parts: string[] = [];
    for (const f of this.families) {
      try {
        parts.push(await f.render());
      } catch (err) {
        onError((f as { name: string }).name, err);
      }
    }
    return parts.join('');
  }
}
