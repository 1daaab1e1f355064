// Forwarding a streamed response body while knowing when it ends: what holds a resource for as
// long as a stream is open (a tenant slot, a notification-stream place) releases it here.
// Invariant: `onEnd` runs exactly once — when the body is read to its end, fails, is cancelled by
// its reader, or is closed by the holder — and nothing is read ahead of the reader (highWaterMark 0).

export interface Relayed {
  response: Response;
  /** Ends the stream for its reader now (the body it forwarded is cancelled). */
  close(): void;
}

export const relay = (response: Response, onEnd: () => void): Relayed => {
  const source = response.body;
  if (source === null) {
    onEnd();
    return { response, close: () => undefined };
  }
  const reader = source.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  let control: ReadableStreamDefaultController<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        control = controller;
      },
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (!done) return controller.enqueue(value);
          end();
          controller.close();
        } catch (error) {
          end();
          controller.error(error);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return {
    response: new Response(body, response),
    close() {
      end();
      reader.cancel().catch(() => undefined);
      try {
        control?.close();
      } catch {
        // already closed or errored
      }
    },
  };
};
