/** Reading HTTP bodies with a size limit (web streams), shared by the hub and the subscriber. */

/** The result of {@link readBody}: the bytes, or `tooLarge` once more than `max` bytes arrived. */
export type BodyResult = { ok: true; bytes: Uint8Array } | { ok: false; tooLarge: true };

/**
 * Reads a body of at most `max` bytes; stops reading (and cancels the stream) as soon as the limit
 * is passed.
 * @example const r = await readBody(request.body, 65536); if (!r.ok) return status(413);
 */
export async function readBody(body: ReadableStream<Uint8Array> | null, max: number): Promise<BodyResult> {
  if (body === null) return { ok: true, bytes: new Uint8Array(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, tooLarge: true };
    }
    chunks.push(value);
  }
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
