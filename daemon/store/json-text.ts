// A body whose JSON text is already at hand (the request as the harness sent it, the payload the
// backend got, the answer the harness got): the store writes that text instead of serialising the
// value again. JSON.parse(text) must give `value`; anything that serialises it generically gets `value`.
export class JsonText {
  constructor(
    readonly text: string,
    readonly value: unknown,
  ) {}

  toJSON(): unknown {
    return this.value;
  }
}

/** The value itself, unwrapped. */
export const plainValue = (v: unknown): unknown => (v instanceof JsonText ? v.value : v);

/** The JSON text of `v` (its known text when it has one); null for null or undefined. */
export const jsonText = (v: unknown): string | null =>
  v instanceof JsonText ? v.text : v === undefined || v === null ? null : JSON.stringify(v);
