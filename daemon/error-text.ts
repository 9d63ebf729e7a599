// The message of a thrown value, for logs and error answers: an Error's message, anything else as text.
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
