// OpenAI Responses request → Chat Completions request: instructions and input items as chat messages,
// tools (namespaced ones under qualified names) as chat function tools, the rest of the parameters.
import type { InputItem, PartT, ResponsesRequest } from './responses-schema';
import type { ChatRequest, LeftOutTool } from './types';

type ChatMessage = Record<string, unknown> & { role: string };
function partsText(parts: PartT[]): string {
  return parts
    .map((p) =>
      p.type === 'input_text' || p.type === 'output_text' ? p.text : p.type === 'refusal' ? p.refusal : '',
    )
    .join('\n');
}

/**
 * Between a namespace and its tool's name in the function name the backend sees: valid in OpenAI
 * function names (`[A-Za-z0-9_-]`), and the form Codex itself shows models (`multi_agent_v1__spawn_agent`).
 * Calls are mapped back through the request's own tools, so a name is never split by guessing.
 */
export const NAMESPACE_SEPARATOR = '__';

export function qualifiedName(namespace: string | null | undefined, name: string): string {
  return namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name;
}

interface ToolPlan {
  /** The chat function tools (namespaced ones under their qualified names). */
  functions: { name: string; description?: string | null; parameters?: unknown; strict?: boolean | null }[];
  /** Qualified name → the namespace and name the client knows. */
  namespaced: Map<string, { namespace: string; name: string }>;
  leftOut: LeftOutTool[];
}

const HOSTED = "hosted tool: it runs on the API provider's side, and the inference backend cannot run it";
const CUSTOM = 'free-form custom tool: chat backends call function tools with JSON arguments only';
const plans = new WeakMap<ResponsesRequest, ToolPlan>();

/** How the request's tools reach the backend (computed once per request). */
export function toolPlan(req: ResponsesRequest): ToolPlan {
  const known = plans.get(req);
  if (known) return known;
  const plan: ToolPlan = { functions: [], namespaced: new Map(), leftOut: [] };
  (req.tools ?? []).forEach((t, i) => {
    if (t.type === 'function') plan.functions.push(t);
    else if (t.type === 'namespace')
      t.tools.forEach((m, j) => {
        if (m.type !== 'function') {
          plan.leftOut.push({ path: `tools[${i}].tools[${j}]`, tool: `${t.name}.${m.name}`, reason: CUSTOM });
          return;
        }
        const f = m as { name: string; description?: unknown; parameters?: unknown; strict?: unknown };
        const name = qualifiedName(t.name, f.name);
        plan.namespaced.set(name, { namespace: t.name, name: f.name });
        plan.functions.push({
          name,
          description: typeof f.description === 'string' ? f.description : null,
          parameters: f.parameters,
          strict: typeof f.strict === 'boolean' ? f.strict : null,
        });
      });
    else {
      const type = String(t.tool.type);
      const custom = type === 'custom';
      plan.leftOut.push({
        path: `tools[${i}]`,
        tool: custom ? String(t.tool.name ?? type) : type,
        reason: custom ? CUSTOM : HOSTED,
      });
    }
  });
  const seen = new Set<string>();
  for (const f of plan.functions) {
    if (seen.has(f.name))
      throw new Error(
        `tools: two tools reach the backend as ${f.name} (a namespace's tool is named namespace${NAMESPACE_SEPARATOR}name)`,
      );
    seen.add(f.name);
  }
  plans.set(req, plan);
  return plan;
}

export function responsesToChatMessages(req: ResponsesRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (req.instructions) out.push({ role: 'system', content: req.instructions });
  // An assistant turn arrives as reasoning, message and function_call items; chat wants one message.
  let turn: { content: string | null; reasoning: string | null; calls: unknown[] } | null = null;
  const flush = () => {
    if (!turn) return;
    const m: ChatMessage = { role: 'assistant', content: turn.content ?? '' };
    if (turn.reasoning !== null) m.reasoning_content = turn.reasoning;
    if (turn.calls.length) m.tool_calls = turn.calls;
    out.push(m);
    turn = null;
  };
  for (const item of req.input as InputItem[]) {
    if (item.type === 'reasoning') {
      if (turn && (turn.content !== null || turn.calls.length || turn.reasoning !== null)) flush();
      const text = item.content?.length
        ? item.content.map((c) => c.text).join('')
        : item.summary.map((s) => s.text).join('\n\n');
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.reasoning = text;
    } else if (item.type === 'message' && item.role === 'assistant') {
      if (turn?.calls.length) flush();
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.content = (turn.content ?? '') + partsText(item.content);
    } else if (item.type === 'function_call') {
      turn = turn ?? { content: null, reasoning: null, calls: [] };
      turn.calls.push({
        id: item.call_id,
        type: 'function',
        function: { name: qualifiedName(item.namespace, item.name), arguments: item.arguments },
      });
    } else if (item.type === 'function_call_output') {
      flush();
      out.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof item.output === 'string' ? item.output : partsText(item.output),
      });
    } else if (item.type === 'message') {
      flush();
      out.push({ role: item.role === 'developer' ? 'system' : item.role, content: partsText(item.content) });
    }
  }
  flush();
  return out;
}

export function responsesToChat(req: ResponsesRequest): ChatRequest {
  const chat: Record<string, unknown> = { model: req.model, messages: responsesToChatMessages(req) };
  if (req.max_output_tokens != null) chat.max_tokens = req.max_output_tokens;
  const { functions } = toolPlan(req);
  if (functions.length)
    chat.tools = functions.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description != null ? { description: t.description } : {}),
        parameters: t.parameters ?? { type: 'object', properties: {} },
        ...(t.strict != null ? { strict: t.strict } : {}),
      },
    }));
  const tc = req.tool_choice;
  if (tc !== undefined)
    chat.tool_choice = typeof tc === 'string' ? tc : { type: 'function', function: { name: tc.name } };
  if (req.parallel_tool_calls != null) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (req.user) chat.user = req.user;
  const fmt = req.text?.format;
  if (fmt?.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (fmt?.type === 'json_schema')
    chat.response_format = {
      type: 'json_schema',
      json_schema: {
        name: fmt.name,
        schema: fmt.schema,
        ...(fmt.description ? { description: fmt.description } : {}),
        ...(fmt.strict != null ? { strict: fmt.strict } : {}),
      },
    };
  if (req.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat as ChatRequest;
}
