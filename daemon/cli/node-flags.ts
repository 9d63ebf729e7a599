// V8 flags for the long-running daemon process. Calls in flight survive young-generation scavenges;
// with a 32 MiB semi-space (Node's default is 16) the proxy's GC share under 64 concurrent calls fell
// from ~15% to ~5% of its CPU. Set on the command line only (V8 ignores it once the heap exists):
// bin/harness-rl.js's shebang carries the same flags for direct execution.
export const DAEMON_NODE_FLAGS = ['--max-semi-space-size=32'];
