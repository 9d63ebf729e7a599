// How to point each coding agent at a rollout URL or a recording: the one source of these settings.
// docs/agents.md's per-agent sections are generated from it (daemon/agents/doc.ts), the extension's
// recording snippets render it with a recording's URL and key (extension/src/snippets.ts), and the CLI
// test (test/agents-cli/agents.ts) runs the real programs with it. Pure: no Node or VS Code APIs.
import type { WireApi } from '../protocol/entities';

/** Where the agent is pointed: a rollout's or a recording's URLs and key, and the served model. */
export interface AgentEndpoints {
  /** …/r/<rollout>/v1, or …/v1 for a recording */
  openaiBaseUrl: string;
  /** …/r/<rollout>, or the daemon's root for a recording (clients add /v1/messages, /v1beta/…) */
  anthropicBaseUrl: string;
  key: string;
  /** The served model name to give the agent. */
  model: string;
}

export interface EnvSetting {
  name: string;
  value: string;
  /** Shown after the variable in the docs. */
  comment?: string;
}

export interface ConfigFileSetting {
  /** Where it goes; `~` is the home folder. */
  path: string;
  language: 'toml' | 'json' | 'yaml';
  text: string;
  /** Said before the block in the docs (e.g. which other places work too). */
  intro?: string;
}

export interface AgentSettings {
  id: string;
  name: string;
  /** The npm package, for the CLIs test/agents-cli pins and runs. */
  package?: string;
  wireApi: WireApi;
  /** The wire API in words, e.g. "OpenAI Chat Completions (through litellm)". */
  wire: string;
  /** Run for real by test/e2e/agents-cli.test.ts. */
  tested: boolean;
  /** Environment variables to export. */
  env(e: AgentEndpoints): EnvSetting[];
  files(e: AgentEndpoints): ConfigFileSetting[];
  /** A non-interactive command line (shell), or undefined for an editor extension. */
  command?(e: AgentEndpoints): string;
  /** Settings made in a UI, in Markdown. */
  ui?(e: AgentEndpoints): string;
  /** Pitfalls and side calls, one Markdown paragraph each. */
  notes: string[];
  /** Shown in the extension's recording snippets. */
  recordingSnippet: boolean;
}

/**
 * The variables the extension gives new VS Code terminals while a recording runs: both providers, and
 * Claude Code's OpenTelemetry logs (its tool runs) sent to the daemon's receiver with the same key.
 */
export function terminalEnv(e: Pick<AgentEndpoints, 'openaiBaseUrl' | 'anthropicBaseUrl' | 'key'>) {
  return {
    OPENAI_BASE_URL: e.openaiBaseUrl,
    OPENAI_API_KEY: e.key,
    ANTHROPIC_BASE_URL: e.anthropicBaseUrl,
    ANTHROPIC_AUTH_TOKEN: e.key,
    ANTHROPIC_API_KEY: e.key,
    ...Object.fromEntries(claudeCodeOtel(e).map((v) => [v.name, v.value])),
  };
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** A value as one shell word: quoted when it holds a space (`Authorization=Bearer <key>`). */
export function shellWord(value: string): string {
  return /\s/.test(value) ? `'${value.replaceAll("'", `'\\''`)}'` : value;
}

/**
 * Claude Code's own OpenTelemetry events (its monitoring docs: CLAUDE_CODE_ENABLE_TELEMETRY with the
 * OTLP logs exporter) go to the daemon's receiver beside its calls: each `claude_code.tool_result`
 * becomes a tool run on the rollout or recording (daemon/telemetry/ingest.ts). Logs only: no metrics.
 */
export function claudeCodeOtel(e: Pick<AgentEndpoints, 'anthropicBaseUrl' | 'key'>): EnvSetting[] {
  return [
    {
      name: 'CLAUDE_CODE_ENABLE_TELEMETRY',
      value: '1',
      comment: 'its tool runs onto the trajectory (OTLP logs)',
    },
    { name: 'OTEL_LOGS_EXPORTER', value: 'otlp' },
    { name: 'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL', value: 'http/protobuf' },
    { name: 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT', value: `${e.anthropicBaseUrl}/v1/logs` },
    { name: 'OTEL_EXPORTER_OTLP_HEADERS', value: `Authorization=Bearer ${e.key}` },
    {
      name: 'OTEL_LOGS_EXPORT_INTERVAL',
      value: '2000',
      comment: 'ms; it also sends what is left when it exits',
    },
  ];
}

/**
 * Qwen Code's and Gemini CLI's settings.json: no usage statistics or update checks, the auth type
 * chosen, and their OpenTelemetry (`telemetry`: OTLP over HTTP to `otlp`, prompts left out) on, so
 * each `*.tool_call` log event becomes a tool run (daemon/telemetry/tool-runs.ts). The key goes in
 * OTEL_EXPORTER_OTLP_HEADERS (cliOtelHeaders): their exporters take headers from there only.
 */
const cliSettings = (auth: string, otlp: Record<string, string>) =>
  json({
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: true, target: 'local', otlpProtocol: 'http', logPrompts: false, ...otlp },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    security: { auth: { selectedType: auth } },
  });

/** The rollout's key on the OTLP exporters' requests (Gemini CLI, Qwen Code: telemetry in settings.json). */
const cliOtelHeaders = (e: Pick<AgentEndpoints, 'key'>): EnvSetting => ({
  name: 'OTEL_EXPORTER_OTLP_HEADERS',
  value: `Authorization=Bearer ${e.key}`,
  comment: 'its telemetry (tool calls) to the daemon with the same key',
});

export const AGENT_SETTINGS: AgentSettings[] = [
  {
    id: 'claude-code',
    name: 'Claude Code',
    package: '@anthropic-ai/claude-code',
    wireApi: 'messages',
    wire: 'Anthropic Messages',
    tested: true,
    recordingSnippet: true,
    env: (e) => [
      { name: 'ANTHROPIC_BASE_URL', value: e.anthropicBaseUrl },
      { name: 'ANTHROPIC_AUTH_TOKEN', value: e.key },
      { name: 'ANTHROPIC_MODEL', value: e.model, comment: 'the main model' },
      {
        name: 'ANTHROPIC_DEFAULT_HAIKU_MODEL',
        value: e.model,
        comment: 'its small-model side calls (older versions: ANTHROPIC_SMALL_FAST_MODEL)',
      },
      {
        name: 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
        value: '1',
        comment:
          'no telemetry to Anthropic, error reports or update checks: DISABLE_AUTOUPDATER, DISABLE_TELEMETRY and DISABLE_ERROR_REPORTING (=1) one by one',
      },
      ...claudeCodeOtel(e),
    ],
    files: () => [],
    command: () =>
      'claude -p "the task" --dangerously-skip-permissions   # non-interactive; as root also IS_SANDBOX=1',
    notes: [
      'Its tool runs (`claude_code.tool_result`: tool, duration, success, result size) reach the trajectory through its OpenTelemetry logs exporter, which the `OTEL_*` variables point at the daemon’s receiver with the same key; `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` does not stop them. Leave `OTEL_METRICS_EXPORTER` unset (the daemon takes no metrics).',
      '`ANTHROPIC_AUTH_TOKEN` is sent as `Authorization: Bearer`; `ANTHROPIC_API_KEY` as `x-api-key`. The proxy takes either. Interactive `claude` asks once whether to use an `ANTHROPIC_API_KEY` it finds in the environment (and stores the answer); `ANTHROPIC_AUTH_TOKEN` is used without asking, which is why the recording sets it. In `-p` mode both work, together too (CI runs with both set).',
      'Side calls: interactive sessions make small-model calls (topic and title detection, summaries) with a Haiku name unless `ANTHROPIC_DEFAULT_HAIKU_MODEL` says otherwise, and `POST /v1/messages/count_tokens`, which the proxy counts with the backend’s tokenizer over the translated request (tagged `side`). A `-p` run makes only its main calls.',
      'Its environment text arrives as a system block after the first user turn; the proxy joins it to the leading system message so Qwen3/Qwen3.5 chat templates render it.',
      'Server tools (WebSearch: `web_search_20250305`) are left out of the backend request and the call is tagged `tool-left-out:…` (a run’s `inference.unsupported_tools: reject` makes that a 400).',
      'It warns that it does not know your model’s context window and assumes 1M tokens: set `CLAUDE_CODE_MAX_CONTEXT_TOKENS` to vLLM’s `--max-model-len`, and `CLAUDE_CODE_MAX_OUTPUT_TOKENS` (e.g. 8192) when that is small, so auto-compaction and `max_tokens` fit.',
      '`--dangerously-skip-permissions` is refused as root unless `IS_SANDBOX=1`.',
    ],
  },
  {
    id: 'codex',
    name: 'OpenAI Codex CLI',
    package: '@openai/codex',
    wireApi: 'responses',
    wire: 'OpenAI Responses',
    tested: true,
    recordingSnippet: true,
    env: (e) => [{ name: 'OPENAI_API_KEY', value: e.key }],
    files: (e) => [
      {
        path: '~/.codex/config.toml',
        language: 'toml',
        intro:
          '`$CODEX_HOME/config.toml` (default `~/.codex/config.toml`); top-level keys before the tables:',
        text: `model = "${e.model}"
model_provider = "harness-rl"
check_for_update_on_startup = false

[model_providers.harness-rl]
name = "Harness RL"
base_url = "${e.openaiBaseUrl}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[otel]
environment = "harness-rl"
log_user_prompt = false
exporter = { otlp-http = { endpoint = "${e.openaiBaseUrl}/logs", protocol = "binary", headers = { authorization = "Bearer ${e.key}" } } }
`,
      },
    ],
    command: () => 'codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "the task"',
    notes: [
      'It needs a `model_providers` entry with `wire_api = "responses"`: Codex no longer speaks Chat Completions, and the built-in `openai` provider would go to api.openai.com (`OPENAI_BASE_URL` alone is not enough).',
      'A key set after a table header belongs to that table: `check_for_update_on_startup` after `[model_providers.harness-rl]` is ignored with a warning.',
      'Its namespaced tools (`multi_agent_v1` sub-agents) reach the backend as `multi_agent_v1__spawn_agent` and come back with their namespace; its hosted `web_search` tool is left out and every call is tagged `tool-left-out:web_search (…)`. The shell tool is `exec_command` (`{"cmd": "…"}`).',
      'Its `[otel]` logs exporter sends each `codex.tool_result` event (tool, call id, duration, success, output size) to the daemon’s receiver with the same key: the tool runs appear on the trajectory. `exporter = "none"` turns that off.',
      'It warns `Model metadata for <model> not found` for a name it does not know; harmless.',
      'Under `/tmp` it cannot create its PATH helpers (a warning); keep `CODEX_HOME` elsewhere in real use.',
      '`codex exec` still looks up `github.com`, `api.github.com` and `chatgpt.com` in DNS (no connection follows in CI’s trace).',
    ],
  },
  {
    id: 'opencode',
    name: 'opencode',
    package: 'opencode-ai',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions',
    tested: true,
    recordingSnippet: false,
    env: () =>
      ['AUTOUPDATE', 'MODELS_FETCH', 'DEFAULT_PLUGINS', 'LSP_DOWNLOAD', 'SHARE'].map((what) => ({
        name: `OPENCODE_DISABLE_${what}`,
        value: '1',
      })),
    files: (e) => [
      {
        path: '~/.config/opencode/opencode.json',
        language: 'json',
        intro: '`~/.config/opencode/opencode.json` (or `opencode.json` in the project):',
        text: json({
          autoupdate: false,
          share: 'disabled',
          model: `harness-rl/${e.model}`,
          small_model: `harness-rl/${e.model}`,
          provider: {
            'harness-rl': {
              npm: '@ai-sdk/openai-compatible',
              name: 'Harness RL',
              options: { baseURL: e.openaiBaseUrl, apiKey: e.key },
              models: { [e.model]: { name: e.model } },
            },
          },
        }),
      },
    ],
    command: () => 'opencode run "the task"',
    notes: [
      'It makes a title call per session with `small_model`; the title system prompt tags it `side` in a recording.',
      'Without `OPENCODE_DISABLE_MODELS_FETCH` it downloads the models.dev catalogue at start, and without `OPENCODE_DISABLE_DEFAULT_PLUGINS` it installs plugins from npm.',
      'It always installs `@opencode-ai/plugin` from the npm registry into its config folder (`~/.config/opencode/node_modules`) in the background; 1.18.33 has no switch for that. Offline it only logs `background dependency install failed`.',
      'opencode’s `openai` provider speaks Responses instead; both are recorded correctly.',
    ],
  },
  {
    id: 'qwen-code',
    name: 'Qwen Code',
    package: '@qwen-code/qwen-code',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions',
    tested: true,
    recordingSnippet: false,
    env: (e) => [
      { name: 'OPENAI_BASE_URL', value: e.openaiBaseUrl },
      { name: 'OPENAI_API_KEY', value: e.key },
      { name: 'OPENAI_MODEL', value: e.model },
      cliOtelHeaders(e),
    ],
    files: (e) => [
      {
        path: '~/.qwen/settings.json',
        language: 'json',
        // logs only (a per-signal endpoint): no traces or metrics are exported
        text: cliSettings('openai', { otlpLogsEndpoint: `${e.anthropicBaseUrl}/v1/logs` }),
      },
    ],
    command: (e) => `qwen -p "the task" --yolo --auth-type openai --model ${e.model}`,
    notes: [
      'Its package asks for Node ≥ 22 (`engines`); 0.24.4 runs on Node 20 as CI shows, with an `EBADENGINE` warning at install.',
      'It sends usage statistics to Qwen’s telemetry endpoint unless `usageStatisticsEnabled` is false.',
      'Its `telemetry` settings (OTLP over HTTP, `otlpLogsEndpoint`) send each `qwen-code.tool_call` event (tool, duration, success) to the daemon’s receiver, the key in `OTEL_EXPORTER_OTLP_HEADERS`: the tool runs appear on the trajectory. `logPrompts: false` keeps the prompts out of them; `enabled: false` turns it off.',
    ],
  },
  {
    id: 'gemini-cli',
    name: 'Gemini CLI',
    package: '@google/gemini-cli',
    wireApi: 'gemini',
    wire: 'Gemini generateContent',
    tested: true,
    recordingSnippet: false,
    env: (e) => [
      { name: 'GOOGLE_GEMINI_BASE_URL', value: e.anthropicBaseUrl },
      { name: 'GEMINI_API_KEY', value: e.key },
      { name: 'GEMINI_CLI_TRUST_WORKSPACE', value: 'true' },
      cliOtelHeaders(e),
    ],
    files: (e) => [
      {
        path: '~/.gemini/settings.json',
        language: 'json',
        // it adds /v1/logs, /v1/traces and /v1/metrics (the daemon takes and drops metrics)
        text: cliSettings('gemini-api-key', { otlpEndpoint: e.anthropicBaseUrl }),
      },
    ],
    command: () => 'gemini -p "the task" --yolo   # --model <served model>: no router call',
    notes: [
      'Without `security.auth.selectedType` a headless run exits 41, `Invalid auth method selected`, even with `GEMINI_API_KEY` set.',
      'In a folder it has not been told to trust, `--yolo` is overridden to default approvals and the run exits 55: set `GEMINI_CLI_TRUST_WORKSPACE=true` (or pass `--skip-trust`).',
      'Without `--model` its model router first asks `gemini-…-flash-lite` how hard the request is (a non-streamed side call that expects JSON back, tagged `side` by its name), then uses the model it picked; the proxy sends every name as your served model (CI runs it so). A model that does not answer the router in JSON makes it retry several times before each turn: then pass `--model`, which skips the router.',
      'It streams (`:streamGenerateContent?alt=sse`); the proxy translates to the backend’s Chat API and back, function calls and responses included.',
      'Its `telemetry` settings (`otlpProtocol: "http"`, `otlpEndpoint`: the rollout URL, to which it adds `/v1/logs`, `/v1/traces`, `/v1/metrics`) send each `gemini_cli.tool_call` event (tool, duration, success, result size) to the daemon’s receiver, the key in `OTEL_EXPORTER_OTLP_HEADERS`: the tool runs appear on the trajectory. `enabled: false` turns it off.',
    ],
  },
  {
    id: 'cline',
    name: 'Cline and Roo Code',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions (or Anthropic Messages)',
    tested: false,
    recordingSnippet: true,
    env: () => [],
    files: () => [],
    ui: (e) =>
      `Settings → API Provider **OpenAI Compatible** · Base URL \`${e.openaiBaseUrl}\` · API Key \`${e.key}\` · Model ID \`${e.model}\``,
    notes: [
      'Set the model’s context window and max output tokens to what vLLM serves.',
      'Alternatively the **Anthropic** provider with *Use custom base URL* (the Anthropic base URL) speaks Messages. Both stream.',
    ],
  },
  {
    id: 'continue',
    name: 'Continue',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions',
    tested: false,
    recordingSnippet: true,
    env: () => [],
    files: (e) => [
      {
        path: '~/.continue/config.yaml',
        language: 'yaml',
        text: `models:
  - name: Harness RL (${e.model})
    provider: openai
    model: ${e.model}
    apiBase: ${e.openaiBaseUrl}
    apiKey: ${e.key}
    roles: [chat, edit, apply]
`,
      },
    ],
    notes: [
      'Autocomplete (`roles: [autocomplete]`) uses `/v1/completions` with a fill-in-the-middle prompt: it is recorded too, but as many short side-by-side calls, not one trajectory; give autocomplete another model entry (or none) while recording.',
    ],
  },
  {
    id: 'aider',
    name: 'aider',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions (through litellm)',
    tested: false,
    recordingSnippet: false,
    env: (e) => [
      { name: 'OPENAI_API_BASE', value: e.openaiBaseUrl },
      { name: 'OPENAI_API_KEY', value: e.key },
      {
        name: 'LITELLM_LOCAL_MODEL_COST_MAP',
        value: 'True',
        comment: 'litellm would download its price list at start',
      },
    ],
    files: () => [],
    command: (e) =>
      `aider --model openai/${e.model} --weak-model openai/${e.model} --no-check-update --analytics-disable --no-show-model-warnings --yes-always --message "the task"`,
    notes: [
      'The `openai/` prefix makes litellm use the OpenAI-compatible route; the name sent is what follows it. Without it litellm looks the name up among its own providers and fails.',
      'The weak model writes commit messages and chat summaries (side calls); without `--weak-model` it is `gpt-4o-mini`, which a recording tags `side` by the `mini` in its name.',
    ],
  },
  {
    id: 'mini-swe-agent',
    name: 'mini-swe-agent',
    wireApi: 'chat',
    wire: 'OpenAI Chat Completions (through litellm)',
    tested: false,
    recordingSnippet: false,
    env: () => [
      { name: 'LITELLM_LOCAL_MODEL_COST_MAP', value: 'True' },
      { name: 'MSWEA_COST_TRACKING', value: 'ignore_errors', comment: 'litellm has no price for your model' },
    ],
    files: (e) => [
      {
        path: 'mini.yaml',
        language: 'yaml',
        intro:
          'The endpoint goes in its model settings (`mini-extra config edit`, or the `model:` section of a config file given with `-c`):',
        text: `model:
  model_name: openai/${e.model}
  model_kwargs:
    api_base: ${e.openaiBaseUrl}
    api_key: ${e.key}
`,
      },
    ],
    command: (e) => `mini -m openai/${e.model} -t "the task" -y`,
    notes: [
      'It sends the whole history each step as Chat Completions without tools (actions are parsed from the text); in a run rollout the bridge merges the steps into one sample.',
      'A config given with `-c` replaces the default `mini.yaml` instead of adding to it; several `-c` are merged, so layer the endpoint with `-c mini.yaml -c <this file>`. Check the flags and the config keys against `mini --help` of your version.',
    ],
  },
];

export function agentSettings(id: string): AgentSettings {
  const found = AGENT_SETTINGS.find((a) => a.id === id);
  if (!found) throw new Error(`no settings for agent ${id}`);
  return found;
}

/** The agent's environment as a record. */
export function agentEnv(agent: AgentSettings, e: AgentEndpoints): Record<string, string> {
  return Object.fromEntries(agent.env(e).map((v) => [v.name, v.value]));
}

/**
 * The agent's settings as Markdown: an `sh` block (exports and, unless `command` is false, the command
 * line), the config files, the UI settings. `annotate` adds a comment to a line (e.g. the recording's
 * URL beside a rollout's).
 */
export function settingsMarkdown(
  agent: AgentSettings,
  e: AgentEndpoints,
  options: { annotate?: (line: string) => string | undefined; command?: boolean } = {},
): string {
  const annotate = options.annotate ?? (() => undefined);
  const withComment = (line: string, comment?: string) => {
    const c = [comment, annotate(line)].filter(Boolean).join('; ');
    return c ? `${line.padEnd(48)} # ${c}` : line;
  };
  const parts: string[] = [];
  const sh = agent.env(e).map((v) => withComment(`export ${v.name}=${shellWord(v.value)}`, v.comment));
  if (agent.command && options.command !== false) sh.push(agent.command(e));
  if (sh.length) parts.push(`\`\`\`sh\n${sh.join('\n')}\n\`\`\``);
  for (const f of agent.files(e)) {
    const text =
      f.language === 'json'
        ? f.text
        : f.text
            .split('\n')
            .map((l) => (l ? withComment(l) : l))
            .join('\n');
    parts.push(`${f.intro ?? `\`${f.path}\`:`}\n\n\`\`\`${f.language}\n${text.trimEnd()}\n\`\`\``);
  }
  if (agent.ui) {
    const ui = agent.ui(e);
    const note = annotate(ui);
    parts.push(note ? `${ui} (${note})` : ui);
  }
  return parts.join('\n\n');
}
