// V8 flags for the long-running daemon process. Calls in flight survive young-generation scavenges,
// so a small semi-space copies (and promotes) the same in-flight objects over and over. Under 64
// concurrent calls (bench proxy.throughput, paired runs) the proxy used 203 µs of CPU per call with
// a 32 MiB semi-space and 159 µs with 128 MiB (Node's default is 16); its peak RSS did not grow, as
// V8 only commits the semi-space it grows into. Set on the command line only (V8 ignores it once the
// heap exists): bin/harness-rl.js's shebang and package.json's demo script carry the same flags.
export const DAEMON_NODE_FLAGS = ['--max-semi-space-size=128'];
