import { crc32, deflateRawSync } from 'node:zlib';

/** One entry of a hand-built ZIP: any name, and sizes that may lie. */
export interface RawEntry {
  name: string;
  data: Uint8Array;
  /** Deflate the data (method 8); default stored (method 0). */
  deflate?: boolean;
  /** The uncompressed size written in the headers; default the true size. */
  declaredSize?: number;
  /** Already deflated bytes of `data` (saves deflating a large bomb twice). */
  deflated?: Uint8Array;
}

/**
 * Builds a ZIP file byte by byte (APPNOTE 4.3), for hostile archives that yazl refuses to write:
 * names with `../`, absolute names, backslashes, sizes that lie.
 */
export function rawZip(entries: RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const data = e.deflate ? Buffer.from(e.deflated ?? deflateRawSync(e.data)) : Buffer.from(e.data);
    const crc = crc32(e.data);
    const size = e.declaredSize ?? e.data.byteLength;
    const method = e.deflate ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(0, 10);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.byteLength, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.byteLength, 26);
    local.writeUInt16LE(0, 28);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(20, 4);
    cd.writeUInt16LE(20, 6);
    cd.writeUInt16LE(0x800, 8);
    cd.writeUInt16LE(method, 10);
    cd.writeUInt32LE(0, 12);
    cd.writeUInt32LE(crc, 16);
    cd.writeUInt32LE(data.byteLength, 20);
    cd.writeUInt32LE(size, 24);
    cd.writeUInt16LE(name.byteLength, 28);
    cd.writeUInt32LE(offset, 42);
    central.push(cd, name);
    parts.push(local, name, data);
    offset += local.byteLength + name.byteLength + data.byteLength;
  }
  const cdBuf = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(cdBuf.byteLength, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, cdBuf, eocd]);
}
