// Disposers returned by every registration-like call: idempotent functions that also work with
// `using` (Symbol.dispose), so owners can tie a registration's lifetime to a block or an effect.

export interface Disposer {
  (): void;
  [Symbol.dispose](): void;
}

export const disposer = (release: () => void): Disposer => {
  let done = false;
  const dispose = (() => {
    if (done) return;
    done = true;
    release();
  }) as Disposer;
  dispose[Symbol.dispose] = dispose;
  return dispose;
};
