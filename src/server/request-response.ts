/**
 * The request and response descriptions that the Source server's core reads and returns, and that its
 * adapters (`handler.ts`, `node-adapter.ts`) translate from and to the wire.
 */
import type { FileHandle } from 'node:fs/promises';

/** The request as the core needs it. `headers` has lower-case names (like `IncomingMessage.headers`). */
export interface ResponderRequest {
  method: string;
  /** The request-target as received (origin-form `/path?query`, or absolute-form). */
  target: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** Body of a core response. A `file` body owns `handle`: the writer must close it. */
export type ResponderBody =
  | { type: 'bytes'; bytes: Uint8Array }
  | {
      type: 'file';
      handle: FileHandle;
      /** First byte, inclusive. */
      start: number;
      /** Last byte, exclusive. */
      end: number;
      /** Compress the range with gzip while writing (no Content-Length is set then). */
      gzip: boolean;
    };

/**
 * A response description: status, header fields (lower-case names) and an optional body (none for HEAD).
 * Read-only: the core returns the same object for repeated plain GETs of a cached file.
 */
export interface ResponderResponse {
  status: number;
  headers: Record<string, string>;
  body?: ResponderBody;
}

/** A function from request to response description, as adapters call it. */
export type ResponderHandler = (request: ResponderRequest) => ResponderResponse | Promise<ResponderResponse>;
