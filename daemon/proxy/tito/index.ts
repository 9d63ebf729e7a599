// Token-in-token-out: reuse sampled tokens when a harness resends history as text.
export {
  type BridgePlan,
  type BridgeRequest,
  historyChange,
  messageChange,
  type PreviousCall,
  planBridge,
} from './bridge';
export {
  AssistantTextParser,
  type CompletionToChatOptions,
  CompletionToChatStream,
  completionRequestFor,
  completionToChat,
  type ParsedAssistant,
  parseAssistantText,
} from './completion';
export {
  backendTokenizer,
  type ChatMessageLike,
  type ChatTokenizer,
  type ChatToolLike,
  contentText,
  type TokenizerFetch,
  templateMessages,
} from './tokenizer';
