/**
 * The sinks' Lua scripts. Each takes its keys as KEYS and its values as ARGV: nothing from a
 * record is ever spliced into a script's text.
 */

/**
 * The refusal every fenced script gives when a newer owner raised the fence (I9); the sinks
 * turn it into `ShardFencedError`. `<mine>` is the caller's epoch, `<newer>` the fence's.
 */
export const FENCED_REPLY = /exactly: fenced: epoch (\d+) is below (\d+)/;

/**
 * Guarded upserts, several per call. ARGV: shape ("string" or "hash"), TTL in ms (0: none),
 * the owner's epoch (0: the job is not sharded, no fence) and its subtask, then for each write
 * its version, the count n of its value arguments, and those n arguments (the value, or
 * field/value pairs). KEYS: with an epoch, first the fence hash of the call's slot; then for
 * each write its data key and its version key. A fence field of the subtask above the epoch
 * refuses the whole call before anything is written (I9). A write applies only if its
 * version is greater than the stored one, so a replayed write never moves a key back.
 * The guard is paid per call, not per write: every stored version comes in one MGET, and the
 * strings without a TTL (value and version) go out in one MSET, each in slices, as Lua's
 * unpack takes at most a few thousand values. Returns how many writes applied.
 */
const GUARDED_UPSERT = `
local shape = ARGV[1]
local ttl = tonumber(ARGV[2])
local epoch = tonumber(ARGV[3])
local from = 1
if epoch > 0 then
  local fence = tonumber(redis.call('HGET', KEYS[1], ARGV[4]) or '0')
  if fence > epoch then return redis.error_reply('exactly: fenced: epoch ' .. epoch .. ' is below ' .. fence) end
  from = 2
end
local versionKeys = {}
for i = from + 1, #KEYS, 2 do versionKeys[#versionKeys + 1] = KEYS[i] end
local stored = {}
for s = 1, #versionKeys, 1000 do
  local got = redis.call('MGET', unpack(versionKeys, s, math.min(s + 999, #versionKeys)))
  for j = 1, #got do stored[s + j - 1] = got[j] end
end
-- The version each key got in this call, for a key named twice in it.
local newer = {}
local sets = {}
local at = 5
local w = 0
local applied = 0
for i = from, #KEYS, 2 do
  w = w + 1
  local version = ARGV[at]
  local n = tonumber(ARGV[at + 1])
  local current = newer[KEYS[i + 1]] or stored[w]
  if (not current) or tonumber(version) > tonumber(current) then
    if shape == 'string' and ttl == 0 then
      local m = #sets
      sets[m + 1] = KEYS[i]
      sets[m + 2] = ARGV[at + 2]
      sets[m + 3] = KEYS[i + 1]
      sets[m + 4] = version
    else
      if shape == 'string' then
        redis.call('SET', KEYS[i], ARGV[at + 2], 'PX', ttl)
      else
        redis.call('HSET', KEYS[i], unpack(ARGV, at + 2, at + 1 + n))
        if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) end
      end
      if ttl > 0 then
        redis.call('SET', KEYS[i + 1], version, 'PX', ttl)
      else
        redis.call('SET', KEYS[i + 1], version)
      end
    end
    newer[KEYS[i + 1]] = version
    applied = applied + 1
  end
  at = at + 2 + n
end
-- In order: of a key named twice, the later value is the one left.
for s = 1, #sets, 4000 do redis.call('MSET', unpack(sets, s, math.min(s + 3999, #sets))) end
return applied
`;

/**
 * One chunk of a checkpoint's operations, applied once. KEYS[1] is the marker hash of
 * (sink, subtask): the checkpoint it last applied, how many of that checkpoint's operations
 * are in, and whether all are; in a sharded job also the fence, the newest owner's epoch.
 * KEYS[2…] are the chunk's operations' keys, one per operation, in order. ARGV: checkpoint,
 * the index of the chunk's first operation within the checkpoint, whether it is the last
 * chunk, the operation count, the owner's epoch (0: not sharded, no fence), then runs of
 * operations with one command and one argument count: the command, the argument count, how
 * many operations the run holds, then their arguments (`apply-calls.ts` builds them). A fence
 * above the epoch refuses the call before anything is written (I9). Operations the marker
 * shows applied are skipped, so a replay after a crash between chunks applies none twice,
 * whatever the chunk size then; a chunk that would leave a gap is refused. An operation that
 * fails (WRONGTYPE …) stops the chunk with the marker at it, since Redis does not undo a
 * failed script's writes. Only the commands the sink encodes are allowed. Returns how many
 * operations it applied.
 */
const APPLY_CHUNK = `
local allowed = { INCRBY = true, HINCRBY = true, RPUSH = true, LPUSH = true, SADD = true, ZADD = true, XADD = true, SET = true, HSET = true }
local marker = KEYS[1]
local checkpoint = tonumber(ARGV[1])
local first = tonumber(ARGV[2])
local last = ARGV[3] == '1'
local count = tonumber(ARGV[4])
local epoch = tonumber(ARGV[5])
local state = redis.call('HMGET', marker, 'checkpoint', 'ops', 'done', 'fence')
if epoch > 0 and tonumber(state[4] or '0') > epoch then
  return redis.error_reply('exactly: fenced: epoch ' .. epoch .. ' is below ' .. state[4])
end
local doneCheckpoint = tonumber(state[1] or '0')
local doneOps = tonumber(state[2] or '0')
if doneCheckpoint > checkpoint or (doneCheckpoint == checkpoint and state[3] == '1') then return 0 end
if doneCheckpoint < checkpoint then doneOps = 0 end
if first > doneOps then
  return redis.error_reply('exactly: chunk from operation ' .. first .. ' of checkpoint ' .. checkpoint .. ' comes before operations ' .. doneOps .. '..' .. (first - 1) .. ' are in')
end
-- Operations before doneOps - first are in already (a replay of a chunk cut short).
local skip = doneOps - first
local rpcall = redis.pcall
local at = 6
local o = 0
while o < count do
  local command = ARGV[at]
  local argc = tonumber(ARGV[at + 1])
  local n = tonumber(ARGV[at + 2])
  if not allowed[command] then return redis.error_reply('exactly: command not allowed: ' .. command) end
  at = at + 3
  for _ = 1, n do
    if o >= skip then
      local result
      if argc == 2 then
        result = rpcall(command, KEYS[o + 2], ARGV[at], ARGV[at + 1])
      elseif argc == 1 then
        result = rpcall(command, KEYS[o + 2], ARGV[at])
      else
        result = rpcall(command, KEYS[o + 2], unpack(ARGV, at, at + argc - 1))
      end
      -- A script's writes are not undone when it fails: on an error, the marker keeps what is in.
      if type(result) == 'table' and result.err then
        redis.call('HSET', marker, 'checkpoint', checkpoint, 'ops', first + o, 'done', '0')
        return redis.error_reply('exactly: operation ' .. (first + o) .. ' of checkpoint ' .. checkpoint .. ' (' .. command .. ' ' .. KEYS[o + 2] .. '): ' .. result.err)
      end
    end
    o = o + 1
    at = at + argc
  end
end
local ops = math.max(doneOps, first + count)
redis.call('HSET', marker, 'checkpoint', checkpoint, 'ops', ops, 'done', last and '1' or '0')
return math.max(0, count - skip)
`;

/**
 * Raises fences (I9): KEYS[i] is a hash and ARGV[i + 1] its field holding an epoch; ARGV[1] is
 * the new owner's epoch. If any of them is above it, nothing is raised and the call is refused
 * (this owner is not the newest); else each is set to it. Returns how many were set.
 */
const RAISE_FENCES = `
local epoch = tonumber(ARGV[1])
for i = 1, #KEYS do
  local fence = tonumber(redis.call('HGET', KEYS[i], ARGV[i + 1]) or '0')
  if fence > epoch then return redis.error_reply('exactly: fenced: epoch ' .. epoch .. ' is below ' .. fence) end
end
local raised = 0
for i = 1, #KEYS do
  local fence = tonumber(redis.call('HGET', KEYS[i], ARGV[i + 1]) or '0')
  if fence < epoch then
    redis.call('HSET', KEYS[i], ARGV[i + 1], epoch)
    raised = raised + 1
  end
end
return raised
`;

/**
 * A fresh start's forgetting of write-ahead markers in a sharded job: KEYS are the markers,
 * ARGV[1] the owner's epoch. If any marker's fence is above it, nothing is forgotten and the
 * call is refused; else each marker loses its progress (checkpoint, ops, done) and keeps its
 * fence. Returns how many were forgotten.
 */
const FORGET_MARKERS = `
local epoch = tonumber(ARGV[1])
for i = 1, #KEYS do
  local fence = tonumber(redis.call('HGET', KEYS[i], 'fence') or '0')
  if fence > epoch then return redis.error_reply('exactly: fenced: epoch ' .. epoch .. ' is below ' .. fence) end
end
for i = 1, #KEYS do redis.call('HDEL', KEYS[i], 'checkpoint', 'ops', 'done') end
return #KEYS
`;

/**
 * The at-least-once sink's commands in a sharded job, several per call, all keys in one slot.
 * KEYS[1] is the fence hash of the slot, KEYS[2…] the commands' keys. ARGV: the owner's epoch,
 * its subtask, then per command its name, its key's index in KEYS, its argument count and the
 * arguments. A fence above the epoch refuses the call before anything is written (I9). As in
 * a pipeline, a command the server refuses does not stop the others; the first refusal is
 * returned at the end. Only the commands the sink encodes are allowed.
 */
const FENCED_COMMANDS = `
local epoch = tonumber(ARGV[1])
local fence = tonumber(redis.call('HGET', KEYS[1], ARGV[2]) or '0')
if fence > epoch then return redis.error_reply('exactly: fenced: epoch ' .. epoch .. ' is below ' .. fence) end
local allowed = { INCRBY = true, HINCRBY = true, RPUSH = true, LPUSH = true, SADD = true, ZADD = true, XADD = true, SET = true, HSET = true }
local at = 3
local failed = nil
while at <= #ARGV do
  local command = ARGV[at]
  local key = KEYS[tonumber(ARGV[at + 1])]
  local argc = tonumber(ARGV[at + 2])
  if not allowed[command] then return redis.error_reply('exactly: command not allowed: ' .. command) end
  local result = redis.pcall(command, key, unpack(ARGV, at + 3, at + 2 + argc))
  if type(result) == 'table' and result.err and not failed then failed = result.err end
  at = at + 3 + argc
end
if failed then return redis.error_reply(failed) end
return 1
`;

export const SCRIPTS = {
  fencedCommands: FENCED_COMMANDS,
  guardedUpsert: GUARDED_UPSERT,
  applyChunk: APPLY_CHUNK,
  raiseFences: RAISE_FENCES,
  forgetMarkers: FORGET_MARKERS,
} as const;
export type ScriptName = keyof typeof SCRIPTS;
