// The JSON vocabulary every room shares (the store, the tool runtime, host requests, the isolate
// host): values that survive JSON.stringify/JSON.parse unchanged. Types only, like host/errors.ts
// it sits below every room and imports nothing.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object: the shape of most payloads, answers and event data. */
export type JsonObject = { [key: string]: JsonValue };
