---@meta dispatch
-- lua-language-server definitions for the `dispatch` module (LuaDispatch). Point the server at
-- this folder ("workspace.library": ["<repository>/types"], or the `types` directory of the
-- installed rock). docs/api.md is the reference; Tests/lua/check-types.lua checks that the two,
-- and the module itself, name the same functions and methods.

---A number of seconds from now, a monotonic deadline or a wall-clock deadline.
---@alias dispatch.deadline number|dispatch.time|dispatch.walltime

---A timeout for a wait: like a deadline; `nil` waits forever.
---@alias dispatch.timeout number|dispatch.time|dispatch.walltime|nil

---@alias dispatch.qos "user_interactive"|"user_initiated"|"default"|"utility"|"background"|"unspecified"

---@alias dispatch.block fun()|dispatch.work_item

---@class dispatch
---@field main dispatch.queue The main queue (`com.apple.main-thread`), serviced on the main thread.
local dispatch = {}

-- MARK: queues

---@class dispatch.queue_options
---@field label? string
---@field concurrent? boolean
---@field qos? dispatch.qos
---@field inactive? boolean
---@field target? dispatch.queue

---A serial queue with `label`, or a queue made from an options table.
---@param label_or_options? string|dispatch.queue_options
---@return dispatch.queue
function dispatch.queue(label_or_options) end

---A global concurrent queue.
---@param qos? dispatch.qos
---@return dispatch.queue
function dispatch.global(qos) end

---@class dispatch.queue
---@field label string
---@field concurrent boolean
---@field qos dispatch.qos
local queue = {}

---@class dispatch.async_options
---@field group? dispatch.group
---@field barrier? boolean
---@field qos? dispatch.qos

---`DispatchQueue.async`.
---@param block dispatch.block
---@param options? dispatch.async_options
function queue:async(block, options) end

---Runs `block` on the queue and waits; returns what it returns. Errors propagate unchanged.
---@param block dispatch.block
---@param options? {barrier?: boolean}
---@return any ...
function queue:sync(block, options) end

---@param block dispatch.block
function queue:barrier_async(block) end

---@param block dispatch.block
---@return any ...
function queue:barrier_sync(block) end

---`asyncAfter`; a walltime deadline uses `asyncAfter(wallDeadline:)`.
---@param deadline dispatch.deadline
---@param block dispatch.block
function queue:after(deadline, block) end

function queue:suspend() end

---Raises when the queue is not suspended.
function queue:resume() end

---Starts an inactive queue.
function queue:activate() end

---Only while inactive; `nil` resets the target to the default global queue.
---@param target dispatch.queue|nil
function queue:set_target(target) end

---@param key dispatch.specific_key
---@param value any
function queue:set_specific(key, value) end

---@param key dispatch.specific_key
---@return any
function queue:get_specific(key) end

---@class dispatch.specific_key
---@field name string|nil The name given to `dispatch.specific_key`.

---A new key for `set_specific` / `get_specific`.
---@param name? string
---@return dispatch.specific_key
function dispatch.specific_key(name) end

---Looks `key` up through the running queue's target chain.
---@param key dispatch.specific_key
---@return any
function dispatch.get_specific(key) end

---The label of the queue whose block runs on the calling thread (the main queue's on the main
---thread outside any block).
---@return string|nil
function dispatch.current_label() end

---Calls `fn(1) ... fn(n)` with `DispatchQueue.concurrentPerform`.
---@param n integer
---@param fn fun(i: integer)
function dispatch.concurrent_perform(n, fn) end

---Runs `fn(1) ... fn(n)` on worker interpreters in parallel; returns `{fn(1), ..., fn(n)}`.
---@param n integer
---@param fn fun(i: integer): any
---@param options? {chunk?: integer}
---@return any[]
function dispatch.concurrent_map(n, fn, options) end

-- MARK: workers and worker channels

---A pool of `count` worker interpreters (default: the number of active processors); `init` runs
---once in each worker before its first job.
---@param options? {count?: integer, init?: fun()}
---@return dispatch.pool
function dispatch.workers(options) end

---@class dispatch.pool
---@field count integer
local pool = {}

---Runs `fn(...)` in a free worker; `fn`, its upvalues and the arguments are copied.
---@param fn function
---@param ... any
---@return dispatch.job
function pool:submit(fn, ...) end

---Queued and running jobs finish, then the workers close; `submit` afterwards raises.
function pool:close() end

---@class dispatch.job
local job = {}

---`true, results...`, `false, "timeout"`, or the job's error raised again with the worker's
---traceback. Inside a task, suspends the task.
---@param timeout? dispatch.timeout
---@return boolean ok
---@return any ...
function job:wait(timeout) end

---`fn(true, results...)` or `fn(false, message, traceback)` runs on `queue` when the job ends.
---@param queue dispatch.queue
---@param fn fun(ok: boolean, ...: any)
function job:notify(queue, fn) end

---A job that has not started never runs (its `wait` raises "job cancelled before it started").
---@return boolean cancelled `true` when the job had not started
function job:cancel() end

---A worker channel: a queue of copied values shared by every interpreter (not an I/O channel,
---`dispatch.io`): `#chan` is the number queued.
---@param options? {capacity?: integer}
---@return dispatch.channel
function dispatch.channel(options) end

---@class dispatch.channel
---@operator len: integer
local channel = {}

---Copies `value` in (not nil); waits for room on a full bounded channel.
---@param value any
---@param timeout? dispatch.timeout
---@return boolean ok
---@return "timeout"|"closed"|nil reason
function channel:send(value, timeout) end

---The next value, or `nil, "timeout"`, or `nil, "closed"` once closed and empty.
---@param timeout? dispatch.timeout
---@return any value
---@return "timeout"|"closed"|nil reason
function channel:receive(timeout) end

---No more sends; values already sent are still received.
---@return boolean closed `false` when it was closed already
function channel:close() end

-- MARK: work items

---@class dispatch.work_item_options
---@field barrier? boolean
---@field qos? dispatch.qos
---@field detached? boolean
---@field enforce_qos? boolean
---@field inherit_qos? boolean
---@field assign_current_context? boolean
---@field no_qos? boolean

---A `DispatchWorkItem`.
---@param fn fun()
---@param options? dispatch.work_item_options
---@return dispatch.work_item
function dispatch.work_item(fn, options) end

---@class dispatch.work_item
local work_item = {}

---Runs the item now on the calling thread (nothing once cancelled).
function work_item:perform() end

function work_item:cancel() end

---@return boolean
function work_item:is_cancelled() end

---Waits for the item's first completion.
---@param timeout? dispatch.timeout
---@return boolean ok
---@return "timeout"|nil reason
function work_item:wait(timeout) end

---@param queue dispatch.queue
---@param block dispatch.block
function work_item:notify(queue, block) end

-- MARK: groups and semaphores

---@return dispatch.group
function dispatch.group() end

---@class dispatch.group
local group = {}

function group:enter() end

---Raises when the group was not entered.
function group:leave() end

---@param queue dispatch.queue
---@param block dispatch.block
function group:notify(queue, block) end

---@param timeout? dispatch.timeout
---@return boolean ok
---@return "timeout"|nil reason
function group:wait(timeout) end

---@param value integer `>= 0`
---@return dispatch.semaphore
function dispatch.semaphore(value) end

---@class dispatch.semaphore
local semaphore = {}

---@param timeout? dispatch.timeout
---@return boolean ok
---@return "timeout"|nil reason
function semaphore:wait(timeout) end

---@return boolean woke `true` when it woke a waiter
function semaphore:signal() end

-- MARK: time

---A monotonic deadline (`DispatchTime`): `t + s`, `t - s`, `t2 - t1` (seconds), comparisons.
---@class dispatch.time
---@field seconds number Uptime in seconds.
---@operator add(number): dispatch.time
---@operator sub(number): dispatch.time
---@operator sub(dispatch.time): number

---A wall-clock deadline (`DispatchWallTime`).
---@class dispatch.walltime
---@field seconds number Unix time in seconds.
---@operator add(number): dispatch.walltime
---@operator sub(number): dispatch.walltime
---@operator sub(dispatch.walltime): number

---`DispatchTime.now()`.
---@return dispatch.time
function dispatch.now() end

---Now, Unix seconds, `"YYYY-MM-DD HH:MM:SS"` (UTC) or a date table (UTC).
---@param spec? number|string|{year: integer, month: integer, day: integer, hour?: integer, min?: integer, sec?: number}
---@return dispatch.walltime
function dispatch.walltime(spec) end

-- MARK: tasks

---Runs `fn` as a task: a coroutine whose every step is a block on `queue`.
---@param fn fun(): any
---@param queue? dispatch.queue
---@return dispatch.task
function dispatch.task(fn, queue) end

---@class dispatch.task
local task = {}

---`true, results...`, `false, "timeout"`, or the task's error raised again.
---@param timeout? dispatch.timeout
---@return boolean ok
---@return any ...
function task:wait(timeout) end

function task:cancel() end

---@return boolean
function task:is_cancelled() end

---`true` in a task's own coroutine.
---@return boolean
function dispatch.in_task() end

---Calls `fn(resume)` and waits until `resume(...)` is called; returns its arguments.
---@param fn fun(resume: fun(...: any): boolean)
---@return any ...
function dispatch.await(fn) end

-- MARK: threads, errors, lifetime

---@class dispatch.thread_info
---@field number integer 1 for the main thread, then 2, 3, ...
---@field tid integer
---@field is_main boolean
---@field name string|nil

---@return dispatch.thread_info
function dispatch.thread() end

---Releases the interpreter while sleeping; inside a task, suspends the task.
---@param seconds number
function dispatch.sleep(seconds) end

---The switch interval in force, in seconds; with an argument (>= 0), sets it first. A block that
---keeps the interpreter longer than this while another thread waits for it gives it up at its
---next instruction; 0 is cooperative (a block keeps the interpreter until it waits).
---@param seconds? number
---@return number seconds
function dispatch.switch_interval(seconds) end

---@class dispatch.once
---@overload fun(): any ...

---A callable: the first caller runs `fn`, concurrent callers wait, every caller gets its results.
---@param fn fun(): any
---@return dispatch.once
function dispatch.once(fn) end

---Flushes output and ends the process (`true`/`false` mean 0/1).
---@param code? integer|boolean
function dispatch.exit(code) end

---@return integer
function dispatch.pid() end

---@param pid integer
---@param signal string|integer `"SIGUSR1"`, `"USR1"` or a number
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function dispatch.kill(pid, signal) end

---`"ENOENT"`; `"OK"` for 0.
---@param n integer
---@return string
function dispatch.errno_name(n) end

---Handler for errors in asynchronous blocks, work items and source handlers; `nil` restores
---the default.
---@param fn fun(message: string, traceback: string, label: string|nil)|nil
function dispatch.set_error_handler(fn) end

---Services the main queue on the main thread: `"default"` until no work is left, `"once"` what
---is ready (waiting for at least one block if there is work), `"nowait"` what is ready.
---@param mode? "default"|"once"|"nowait"
---@return boolean work_left
function dispatch.run(mode) end

-- MARK: sources

---@class dispatch.source_options
---@field queue? dispatch.queue
---@field handler? fun()
---@field cancel_handler? fun()
---@field registration_handler? fun()

---@class dispatch.timer_options: dispatch.source_options
---@field deadline? dispatch.deadline
---@field interval? number
---@field leeway? number
---@field strict? boolean

dispatch.source = {}

---@param options? dispatch.timer_options
---@return dispatch.source
function dispatch.source.timer(options) end

---@param options dispatch.source_options|{signal: string|integer}
---@return dispatch.source|nil source
---@return string|nil message
---@return string|nil errno_name
function dispatch.source.signal(options) end

---@param options dispatch.source_options|{fd: integer}
---@return dispatch.source|nil source
---@return string|nil message
---@return string|nil errno_name
function dispatch.source.read(options) end

---@param options dispatch.source_options|{fd: integer}
---@return dispatch.source|nil source
---@return string|nil message
---@return string|nil errno_name
function dispatch.source.write(options) end

---@param options? dispatch.source_options
---@return dispatch.source
function dispatch.source.data_add(options) end

---@param options? dispatch.source_options
---@return dispatch.source
function dispatch.source.data_or(options) end

---@param options? dispatch.source_options
---@return dispatch.source
function dispatch.source.data_replace(options) end

---@param options dispatch.source_options|{path: string, events?: string[]} `events` defaults to all six
---@return dispatch.source|nil source
---@return string|nil message
---@return string|nil errno_name
function dispatch.source.file(options) end

---@param options dispatch.source_options|{pid: integer, events?: string[]}
---@return dispatch.source|nil source
---@return string|nil message
---@return string|nil errno_name
function dispatch.source.process(options) end

---@class dispatch.source
---@field data any What fired since the last handler run (see docs/sources.md).
---@field handle any The fd, signal number, path or pid.
---@field kind string `"timer"`, `"signal"`, ...
local source = {}

function source:resume() end

function source:suspend() end

function source:cancel() end

---@return boolean
function source:is_cancelled() end

---@param fn fun()|nil
function source:set_event_handler(fn) end

---@param fn fun()|nil
function source:set_cancel_handler(fn) end

---@param fn fun()|nil
function source:set_registration_handler(fn) end

---Timers only.
---@param options {deadline?: dispatch.deadline, interval?: number, leeway?: number}
function source:schedule(options) end

---Data sources only.
---@param n integer `>= 0`
function source:merge(n) end

-- MARK: I/O channels (DispatchIO), data, descriptors, HTTP

---@class dispatch.io_options
---@field path? string
---@field fd? integer
---@field type? "stream"|"random"
---@field mode? string `"r"`, `"w"`, `"a"`, `"r+"`, `"w+"`, `"a+"`
---@field permissions? integer|string
---@field queue? dispatch.queue
---@field cleanup? fun(errno: integer)

---@class dispatch.io_module
---@overload fun(options: dispatch.io_options): dispatch.io
dispatch.io = {}

---@param fd integer
---@param max_length integer|number
---@param queue dispatch.queue|nil
---@param fn fun(data: dispatch.data, errno: integer)
function dispatch.io.read(fd, max_length, queue, fn) end

---@param fd integer
---@param data dispatch.data|string
---@param queue dispatch.queue|nil
---@param fn fun(remaining: dispatch.data, errno: integer)
function dispatch.io.write(fd, data, queue, fn) end

---An I/O channel (DispatchIO) on a descriptor or a file (not a worker channel, `dispatch.channel`).
---@class dispatch.io
---@field fd integer `-1` until a path channel has opened its file.
---@field type "stream"|"random"
local io_channel = {}

---@param offset integer
---@param length integer|number
---@param queue dispatch.queue|nil
---@param fn fun(done: boolean, data: dispatch.data, errno: integer)
function io_channel:read(offset, length, queue, fn) end

---@param offset integer
---@param data dispatch.data|string
---@param queue dispatch.queue|nil
---@param fn fun(done: boolean, remaining: dispatch.data, errno: integer)
function io_channel:write(offset, data, queue, fn) end

---@param limits {high?: integer|number, low?: integer}
function io_channel:set_limit(limits) end

---@param seconds number
---@param strict? boolean
function io_channel:set_interval(seconds, strict) end

---@param fn fun()
function io_channel:barrier(fn) end

---@param options? {stop?: boolean}
function io_channel:close(options) end

---@class dispatch.data_module
---@overload fun(s?: string): dispatch.data
dispatch.data = {}

---The file mapped read-only.
---@param path string
---@return dispatch.data|nil data
---@return string|nil message
---@return string|nil errno_name
function dispatch.data.map(path) end

---Immutable bytes (`DispatchData`): `#d`, `d1 .. d2`, `d1 == d2`.
---@class dispatch.data
---@operator len: integer
---@operator concat(dispatch.data|string|number): dispatch.data
local data = {}

---A slice without copying, indexed as `string.sub`.
---@param i integer
---@param j? integer
---@return dispatch.data
function data:sub(i, j) end

---A Lua string copy.
---@param i? integer
---@param j? integer
---@return string
function data:bytes(i, j) end

---Iterates over `offset, region`.
---@return fun(): integer, dispatch.data
function data:regions() end

dispatch.fd = {}

---@return integer read_fd
---@return integer write_fd
function dispatch.fd.pipe() end

---@param path string
---@param mode string
---@param permissions? integer|string
---@return integer|nil fd
---@return string|nil message
---@return string|nil errno_name
function dispatch.fd.open(path, mode, permissions) end

---@param fd integer
---@param max integer
---@return string|nil bytes
---@return string|nil message
---@return string|nil errno_name
function dispatch.fd.read(fd, max) end

---@param fd integer
---@param s string
---@return integer|nil written
---@return string|nil message
---@return string|nil errno_name
function dispatch.fd.write(fd, s) end

---@param fd integer
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function dispatch.fd.close(fd) end

---@param fd integer
---@param on? boolean
---@return true
function dispatch.fd.set_nonblocking(fd, on) end

dispatch.net = {}

---@class dispatch.net_listen_options
---@field host? string Default `"127.0.0.1"`; a name is resolved without holding the interpreter.
---@field port? integer 0..65535; 0 (the default) picks a free port.
---@field path? string A Unix-domain socket instead of `host`/`port`.
---@field backlog? integer Default 128.

---A non-blocking, close-on-exec listening socket: `fd, port` (`fd, path` for Unix).
---@param options dispatch.net_listen_options
---@return integer|nil fd
---@return integer|string|nil port_or_message
---@return string|nil errno_name
function dispatch.net.listen(options) end

---@param fd integer
---@return integer|nil conn_fd
---@return string peer_or_message `"host:port"`, the path for Unix, or `"EAGAIN"`.
---@return string|nil errno_name
function dispatch.net.accept(fd) end

---Starts a non-blocking connect; `fn` runs on `queue` with the connected descriptor, or `nil`,
---a message and the errno name (`"ECONNREFUSED"`, `"EAI_NONAME"`, ...).
---@param options {host?: string, port?: integer, path?: string}
---@param queue dispatch.queue|nil
---@param fn fun(fd: integer|nil, err: string|nil, errno_name: string|nil)
function dispatch.net.connect(options, queue, fn) end

---A bound non-blocking UDP socket: `fd, port`.
---@param options? {host?: string, port?: integer}
---@return integer|nil fd
---@return integer|string|nil port_or_message
---@return string|nil errno_name
function dispatch.net.udp(options) end

---One datagram; never blocks.
---@param fd integer
---@param data string|dispatch.data
---@param host string
---@param port integer
---@return integer|nil sent
---@return string|nil message
---@return string|nil errno_name
function dispatch.net.sendto(fd, data, host, port) end

---One datagram (at most `max` bytes of it); never blocks.
---@param fd integer
---@param max integer
---@return string|nil data
---@return string host_or_message
---@return integer|string port_or_errno_name
function dispatch.net.recvfrom(fd, max) end

---@param fd integer
---@param how "read"|"write"|"both"
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function dispatch.net.shutdown(fd, how) end

---@class dispatch.net_serve_options
---@field host? string Default `"127.0.0.1"`.
---@field port? integer 0..65535; 0 (the default) picks a free port.
---@field path? string A Unix-domain socket instead of `host`/`port` (removed when the server closes).
---@field backlog? integer Default 511.
---@field queue? dispatch.queue Where the callbacks run; default: the main queue on the main thread, else a new serial queue.
---@field reuseport? boolean `SO_REUSEPORT` before binding.
---@field on_error? fun(message: string, code: string) The first accept failure of a run (`"EMFILE"`, ...).

---Listens and calls `fn` on the server's queue with each accepted connection.
---@param options dispatch.net_serve_options
---@param fn fun(conn: dispatch.connection)
---@return dispatch.server|nil server
---@return string|nil message
---@return string|nil errno_name
function dispatch.net.serve(options, fn) end

---A non-blocking connect; `fn` runs on `queue` (default as for `serve`) with a connection, or
---`nil`, a message and the errno name.
---@param options {host?: string, port?: integer, path?: string}
---@param queue dispatch.queue|nil
---@param fn fun(conn: dispatch.connection|nil, message: string|nil, code: string|nil)
---@overload fun(options: {host?: string, port?: integer, path?: string}, fn: fun(conn: dispatch.connection|nil, message: string|nil, code: string|nil))
function dispatch.net.dial(options, queue, fn) end

---A connection over a connected stream socket, which it owns from then on.
---@param fd integer
---@param queue? dispatch.queue
---@return dispatch.connection|nil conn
---@return string|nil message
---@return string|nil errno_name
function dispatch.net.wrap(fd, queue) end

---A listening socket of `dispatch.net.serve`; counts as outstanding work until closed. Also `__close`.
---@class dispatch.server
---@field port integer|nil The bound port (TCP).
---@field path string|nil The socket's path (Unix-domain).
---@field fd integer|nil The listening descriptor; `nil` once closed.
---@field closed boolean
---@field accept_errors integer Accept failures seen.
local server = {}

---Stops listening and closes the socket (a Unix path is removed); accepted connections go on.
function server:close() end

---A connected stream socket of `dispatch.net`: reads go to a callback as strings, writes are
---made at once and queued when the socket is full. Also `__close`.
---@class dispatch.connection
---@field peer string `"127.0.0.1:54321"`, `"[::1]:54321"`, or the path for Unix.
---@field fd integer|nil The descriptor (not to close); `nil` once closed.
---@field closed boolean True once closed or closing.
---@field write_queue_size integer Bytes queued and not yet written.
local conn = {}

---Reads: `fn(data)` with each read, `fn(nil)` at end of stream, `fn(nil, message, code)` on an
---error; reading then stops. `nil` stops reading.
---@param fn fun(data: string|nil, message: string|nil, code: string|nil)|nil
function conn:on_data(fn) end

---`fn()` runs each time the write queue empties; `nil` clears it.
---@param fn fun()|nil
function conn:on_drain(fn) end

---Writes at once, queueing what the socket does not take; `fn` runs once the bytes are written
---(`fn()`) or the write failed (`fn(message, code)`).
---@param data string|dispatch.data
---@param fn? fun(message: string|nil, code: string|nil)
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function conn:write(data, fn) end

---Half-close: the writing side ends once the queue is written; reading goes on.
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function conn:shutdown() end

---Closes once the queue is written (`now = true`: at once, dropping it); no callback runs afterwards.
---@param options? {now?: boolean}
function conn:close(options) end

---@alias dispatch.connection_option "nodelay"|"keepalive"|"reuseaddr"|"reuseport"|"rcvbuf"|"sndbuf"

---@param name dispatch.connection_option
---@param value boolean|integer Booleans, except `rcvbuf` and `sndbuf` (bytes).
---@return true|nil ok
---@return string|nil message
---@return string|nil errno_name
function conn:set_option(name, value) end

---@param name dispatch.connection_option
---@return boolean|integer|nil value
---@return string|nil message
---@return string|nil errno_name
function conn:get_option(name) end

dispatch.http = {}

---An HTTP GET through libcurl (loaded at the first call); `fn` runs on `queue` (nil: the default
---global queue) with the body, the status code and an error message (each nil when absent).
---@param url string
---@param queue dispatch.queue|nil
---@param fn fun(body: string|nil, status: integer|nil, err: string|nil)
function dispatch.http.get(url, queue, fn) end

return dispatch
