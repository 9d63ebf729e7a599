// A parsed wire body (a harness's request, a backend's answer, a chunk): loosely typed on purpose.
// Each wire API's fields are read where they are used; what comes from outside is checked at the
// boundary (requests.ts's schemas, parseBoundedJson), not by this type.
// biome-ignore lint/suspicious/noExplicitAny: fields of a wire body are read by name, unchecked here
export type Json = Record<string, any>;
