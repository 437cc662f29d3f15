/**
 * The body of a sessionless Fetch request, version 11: the last version that names topics
 * (12 adds tagged fields, 13 topic ids), with the layout fetch-response.ts reads back.
 * Client-neutral: an adapter sends it as the body of its Fetch request.
 */

export const FETCH_REQUEST_VERSION = 11;
/** READ_COMMITTED: the broker answers up to the last stable offset, with the aborted transactions listed. */
const READ_COMMITTED = 1;

export interface FetchRequest {
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly partitions: ReadonlyArray<{
    readonly topic: string;
    readonly partition: number;
    readonly fetchOffset: number | bigint;
    readonly maxBytes: number;
  }>;
}

/** A read_committed Fetch v11 body for `request`: no session (id 0, epoch -1), no rack. */
export function encodeFetchRequest(request: FetchRequest): Buffer {
  const byTopic = new Map<string, FetchRequest["partitions"][number][]>();
  for (const p of request.partitions) {
    const list = byTopic.get(p.topic);
    if (list) list.push(p);
    else byTopic.set(p.topic, [p]);
  }
  const names = [...byTopic.keys()].map((topic) => Buffer.from(topic, "utf8"));
  // replica, max wait, min bytes, max bytes, isolation, session id, session epoch, topic count
  let size = 4 + 4 + 4 + 4 + 1 + 4 + 4 + 4;
  for (const name of names) size += 2 + name.length + 4;
  // partition, current leader epoch, fetch offset, log start offset, partition max bytes
  size += request.partitions.length * (4 + 4 + 8 + 8 + 4);
  size += 4 + 2; // no forgotten topics, an empty rack id
  const out = Buffer.alloc(size);
  let at = 0;
  at = out.writeInt32BE(-1, at); // not a replica
  at = out.writeInt32BE(request.maxWaitMs, at);
  at = out.writeInt32BE(request.minBytes, at);
  at = out.writeInt32BE(request.maxBytes, at);
  at = out.writeInt8(READ_COMMITTED, at);
  at = out.writeInt32BE(0, at);
  at = out.writeInt32BE(-1, at);
  at = out.writeInt32BE(byTopic.size, at);
  let t = 0;
  for (const partitions of byTopic.values()) {
    const name = names[t++] as Buffer;
    at = out.writeInt16BE(name.length, at);
    at += name.copy(out, at);
    at = out.writeInt32BE(partitions.length, at);
    for (const p of partitions) {
      at = out.writeInt32BE(p.partition, at);
      at = out.writeInt32BE(-1, at); // no leader epoch known
      at = out.writeBigInt64BE(BigInt(p.fetchOffset), at);
      at = out.writeBigInt64BE(-1n, at); // the log start offset: a consumer's is -1
      at = out.writeInt32BE(p.maxBytes, at);
    }
  }
  at = out.writeInt32BE(0, at);
  out.writeInt16BE(0, at);
  return out;
}
