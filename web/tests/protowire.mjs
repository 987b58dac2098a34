// Encodes the few messages of proto/trainwatch/v1/ingest.proto that the browser tests send as
// `POST /api/v1/write` with `Content-Type: application/x-protobuf` (histograms, images and text
// exist only in that form). Plain protobuf wire format (varint, 64-bit, length-delimited); the field
// numbers are those of ingest.proto.

function varint(n) {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // int64 two's complement, as protobuf writes negative int64
  const out = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
  return Buffer.from(out);
}

const key = (field, wire) => varint((field << 3) | wire);
const f64 = (x) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return b;
};

/** One length-delimited field (a string, bytes or an embedded message's encoding). */
function bytesField(field, value) {
  const body = typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
  return Buffer.concat([key(field, 2), varint(body.length), body]);
}
const intField = (field, n) => Buffer.concat([key(field, 0), varint(n)]);
const doubleField = (field, x) => Buffer.concat([key(field, 1), f64(x)]);
const packedDoubles = (field, xs) => bytesField(field, Buffer.concat(xs.map(f64)));

function histogram(h) {
  return Buffer.concat([
    bytesField(1, h.name), intField(2, h.step), doubleField(3, h.time ?? 0),
    packedDoubles(4, h.edges), packedDoubles(5, h.counts),
  ]);
}

function image(m) {
  const parts = [bytesField(1, m.name), intField(2, m.step), doubleField(3, m.time ?? 0), intField(4, m.index ?? 0),
    bytesField(5, m.data)];
  if (m.caption) parts.push(bytesField(6, m.caption));
  return Buffer.concat(parts);
}

function text(t) {
  return Buffer.concat([bytesField(1, t.name), intField(2, t.step), doubleField(3, t.time ?? 0), bytesField(4, t.value)]);
}

/**
 * A WriteRequest of one RunBatch: { project, run, histograms?: [{name, step, time, edges, counts}],
 * images?: [{name, step, time, index, data (Buffer), caption}], texts?: [{name, step, time, value}] }.
 */
export function writeRequest(batch) {
  const parts = [bytesField(1, batch.project ?? ''), bytesField(2, batch.run)];
  for (const h of batch.histograms ?? []) parts.push(bytesField(8, histogram(h)));
  for (const m of batch.images ?? []) parts.push(bytesField(10, image(m)));
  for (const t of batch.texts ?? []) parts.push(bytesField(11, text(t)));
  return bytesField(3, Buffer.concat(parts));
}
