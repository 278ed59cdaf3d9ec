/** Reading HTTP bodies with a size limit (web streams), shared by the hub and the subscriber. */

/**
 * The result of {@link readBody}: the bytes, or `tooLarge` once more than `max` bytes arrived, or `timedOut`
 * when the whole body had not arrived by the deadline.
 */
export type BodyResult =
  { ok: true; bytes: Uint8Array } | { ok: false; tooLarge: true } | { ok: false; tooLarge: false; timedOut: true };

/**
 * Reads a body of at most `max` bytes; stops reading (and cancels the stream) as soon as the limit
 * is passed, or once `timeoutMs` (a deadline for the whole body, when given) has passed.
 * @example const r = await readBody(request.body, 65536, 30_000); if (!r.ok) return status(r.tooLarge ? 413 : 408);
 */
export async function readBody(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  timeoutMs?: number,
): Promise<BodyResult> {
  if (body === null) return { ok: true, bytes: new Uint8Array(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline =
    timeoutMs === undefined
      ? undefined
      : new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  for (;;) {
    const next = deadline === undefined ? await reader.read() : await Promise.race([reader.read(), deadline]);
    if (next === 'timeout') {
      await reader.cancel().catch(() => undefined);
      return { ok: false, tooLarge: false, timedOut: true };
    }
    const { done, value } = next;
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      clearTimeout(timer);
      await reader.cancel().catch(() => undefined);
      return { ok: false, tooLarge: true };
    }
    chunks.push(value);
  }
  clearTimeout(timer);
  if (chunks.length === 1) return { ok: true, bytes: chunks[0]! };
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { ok: true, bytes };
}

/** Discards a response body without reading more than needed (frees the connection). */
export async function discardBody(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}
