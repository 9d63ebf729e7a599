// A call to the daemon's REST API with its bearer token, shared by the CLI (`harness-rl run`) and the VS Code
// extension's DaemonClient. Each caller builds the URL and turns failures into its own errors.

/** fetch with `authorization: Bearer <token>` and, when `body` is given, that body as JSON. Rejects as fetch does. */
export function restFetch(
  url: string,
  method: string,
  token: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
}

/** A response's text and its JSON: null when the body is empty or not JSON (the caller reports the text). */
export async function readReply(res: Response): Promise<{ text: string; json: unknown }> {
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { text, json };
}
