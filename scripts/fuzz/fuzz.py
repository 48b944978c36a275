#!/usr/bin/env python3
"""API fuzzer for the `dispatch` Lua module.

Generates random sequences of dispatch API calls (random argument types and values: nil, wrong
types, huge and negative numbers, NaN, math.huge, closed and cancelled objects, calls from inside
handlers and blocks, option tables with unknown keys) and runs each in a child `luadispatch`
process with a timeout. A Lua error is fine. A failure is:
  - an exit by a signal (SIGILL from libdispatch, SIGSEGV, SIGABRT, ...),
  - an exit status other than 0 or 1 (e.g. a sanitizer's),
  - a hang: the child outlives its timeout. Every sequence starts a watchdog timer (on its own
    serial queue) that calls dispatch.exit(0) after a second, so blocking forever in Lua (a wait
    without timeout, a sync onto a suspended queue) is not a hang; only a runtime that cannot
    run that timer's handler any more (a lost interpreter lock, a deadlock inside the runtime) is.
Failing sequences are minimised (delta debugging over the top-level statements) and written to
the output directory.

With --sandbox the children run `luadispatch --sandbox`, and a fifth of the statements try to
get out: write, remove or rename files, start processes, load binary chunks or C modules, reach
`io`, `os`, `debug` or the absent `dispatch` functions, from the main chunk, blocks, tasks,
concurrent_map bodies and workers. A sandboxed script has no way to end its process, so the
watchdog is SIGINT from outside, sent twice (the second ends the process, as in lua). A failure
is also:
  - an escape: any file of the sequence's temporary directory (its working directory and the only
    place its statements name) created, removed or changed.
--unsandboxed runs the same sequences without --sandbox: the escape check must then fail
(it proves that the check bites).

With --limits (and --sandbox) the children also run with `--memory-limit 64M --time-limit 2`,
and some of the hostile statements try to exhaust the process instead (memory bombs with the
collector running or stopped, endless loops, inside pcall too, unbounded recursion, huge strings,
long sleeps with timers pending), from the same places. The SIGINT watchdog then waits for the
time limit and a grace period: a failure is also
  - a script the time limit did not end (the watchdog had to), or one ended by a limit without
    `time limit exceeded` or `not enough memory` in its error output.

  scripts/fuzz/fuzz.py --binary .build/debug/luadispatch --seed 1 --count 300 [--jobs 6]
  scripts/fuzz/fuzz.py --binary ... --replay FILE.lua     # run one script, report its outcome
  scripts/fuzz/fuzz.py --binary ... --sandbox --count 200  # the sandbox round
  scripts/fuzz/fuzz.py --binary ... --sandbox --limits --count 100  # with both limits

The last line printed is `fuzz: N sequences, N passed, N failed` (exit status 1 if any failed).
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

WATCHDOG = 1.0
# --limits: the children's time limit, and how long after it the watchdog still waits.
TIME_LIMIT = 2.0
LIMIT_GRACE = 4.0

# ---------------------------------------------------------------------------------------------
# Generation

QUEUE_METHODS = ["async", "sync", "barrier_async", "barrier_sync", "after", "suspend", "resume",
                 "activate", "set_target", "set_specific", "get_specific"]
GROUP_METHODS = ["enter", "leave", "notify", "wait"]
SEM_METHODS = ["wait", "signal"]
ITEM_METHODS = ["perform", "cancel", "is_cancelled", "wait", "notify"]
SOURCE_METHODS = ["resume", "suspend", "cancel", "is_cancelled", "set_event_handler",
                  "set_cancel_handler", "set_registration_handler", "schedule", "merge"]
IO_METHODS = ["read", "write", "set_limit", "set_interval", "barrier", "close"]
DATA_METHODS = ["sub", "bytes", "regions"]
TASK_METHODS = ["wait", "cancel", "is_cancelled"]
FIELDS = ["label", "concurrent", "qos", "data", "handle", "kind", "fd", "type", "seconds", "name", "nope"]
ALL_METHODS = {
    "queue": QUEUE_METHODS, "group": GROUP_METHODS, "semaphore": SEM_METHODS,
    "work_item": ITEM_METHODS, "source": SOURCE_METHODS, "io": IO_METHODS, "data": DATA_METHODS,
    "task": TASK_METHODS,
}
QOS = ['"default"', '"utility"', '"background"', '"user_interactive"', '"user_initiated"',
       '"unspecified"', '"bogus"']
SIGNALS = ['"SIGUSR1"', '"SIGUSR2"', '"USR1"', '"SIGHUP"', '"SIGALRM"', '"SIGCHLD"', '"SIGWINCH"',
           '"SIGKILL"', '"SIGSTOP"', '"SIGFOO"', '""', "0", "-1", "65", "9", "19", "10", "12", "1e10", "0/0"]
NVARS = 8


# What a sandboxed script tries in order to get out (--sandbox). @TMP@ is the sequence's directory.
HOSTILE = [
    'io.open("@TMP@/escape-io", "w"):write("x")',
    'io.output("@TMP@/escape-output"); io.write("x")',
    'os.remove("@TMP@/seq.lua")',
    'os.rename("@TMP@/seq.lua", "@TMP@/escape-renamed")',
    'os.execute("touch @TMP@/escape-execute")',
    'io.popen("touch @TMP@/escape-popen"):close()',
    'os.rename(os.tmpname(), "@TMP@/escape-tmpname")',
    'os.exit(3)',
    'load(string.dump(function() return 1 end))()',
    'load(string.dump(function() return 1 end), "=b", "b")()',
    'local s = string.dump(function() return 1 end); load(function() local c = s; s = nil; return c end)()',
    'require("lpeg")',
    'require("socket").bind("127.0.0.1", 0)',
    'require("lfs").mkdir("@TMP@/escape-lfs")',
    'package.loadlib("liblua5.4.so.0", "luaopen_io")().open("@TMP@/escape-loadlib", "w")',
    'package.path = "@TMP@/?.lua"; require("seq")',
    'setmetatable(package, nil); package.path = "@TMP@/?.lua"; require("seq")',
    'package.searchers[#package.searchers + 1] = package.loadlib',
    'debug.getregistry()',
    'debug.sethook(function() end, "l")',
    'dofile("@TMP@/seq.lua")',
    'loadfile("@TMP@/seq.lua")()',
    'rawget(_G, "io").open("@TMP@/escape-rawget", "w")',
    'dispatch.fd.open("@TMP@/escape-fd", "w")',
    'dispatch.io{path = "@TMP@/escape-channel", mode = "w"}:write(0, "x", dispatch.main, function() end)',
    'dispatch.io.write(1, "x", dispatch.main, function() end)',
    'dispatch.data.map("@TMP@/seq.lua")',
    'dispatch.source.file{path = "@TMP@", events = {"write"}}:resume()',
    'dispatch.source.process{pid = dispatch.pid()}:resume()',
    'dispatch.source.signal{signal = "SIGUSR1"}:resume()',
    'dispatch.source.read{fd = 0}:resume()',
    'dispatch.kill(dispatch.pid(), "SIGKILL")',
    'dispatch.exit(3)',
    'dispatch.http.get("http://127.0.0.1:1/", dispatch.main, function() end)',
    'dispatch.net.listen{host = "127.0.0.1", port = 0}',
    'require("scenario").make_part("@TMP@/escape-scenario", 1, 1)',
]

# What a script does to exhaust its process (--limits): the limits must end each.
EXHAUSTING = [
    'local t = {} while true do t[#t + 1] = ("x"):rep(100) .. #t end',
    'collectgarbage("stop") local t = {} while true do t[#t + 1] = {1, 2, 3} end',
    'local s = ("x"):rep(2^40)',
    'local s = ("x"):rep(2^28)',
    'local function f() return 1 + f() end f()',
    'while true do end',
    'while true do pcall(function() while true do end end) end',
    'while true do pcall(error, "x") end',
    'dispatch.sleep(100)',
    'dispatch.main:after(50, function() end); dispatch.global():async(function() dispatch.sleep(100) end)',
    'dispatch.semaphore(0):wait()',
    'local q = dispatch.queue{label = "bombs", concurrent = true} for _ = 1, 4 do q:async(function() local t = {} while true do t[#t + 1] = {} end end) end',
]


class Gen:
    def __init__(self, rng, tmp, sandbox=False, limits=False):
        self.r = rng
        self.tmp = tmp
        self.sandbox = sandbox
        self.limits = limits

    def pick(self, xs):
        return self.r.choice(xs)

    def var(self):
        return "V[%d]" % self.r.randint(1, NVARS)

    def fd(self):
        # Only descriptors the sequence opened itself (F[k]), or numbers that are not open: closing
        # a low number would close libdispatch's own epoll or event descriptors, which no runtime
        # can prevent (as close(3) in C).
        return self.pick(["F[%d]" % self.r.randint(1, 4)] * 4 + ["-1", "99999", "2^31", "0/0", "nil", '"12345"', "1.5"])

    def path(self):
        return self.pick(['"fifo"', '"f1"', '"f2"', '"%s/f3"' % self.tmp, '"%s"' % self.tmp, '""', '"/nonexistent/x"',
                          '"/"', '"/dev/null"', '"/proc/self/status"', '"d1/../f1"', "nil", "42"])

    def number(self):
        return self.pick(["0", "1", "-1", "2", "3", "0.5", "-0.5", "1e-9", "0.001", "0.01", "2^31", "2^32",
                          "2^53", "2^63", "math.maxinteger", "math.mininteger", "math.huge", "-math.huge",
                          "0/0", "1e308", "-1e308", "-0.0", "100", "1000"])

    def small_time(self):
        return self.pick(["0", "0.001", "0.01", "-1", "0/0", "math.huge", "-math.huge", "nil",
                          "dispatch.now()", "dispatch.now() + 0.01", "dispatch.walltime()",
                          "dispatch.walltime(0)", "dispatch.now() - 1e300", '"soon"', "{}"])

    def value(self, depth):
        r = self.r.random()
        if r < 0.30:
            return self.var()
        if r < 0.50:
            return self.number()
        if r < 0.58:
            return self.pick(["nil", "true", "false"])
        if r < 0.66:
            return self.pick(['""', '"x"', '"label"', 'string.rep("z", 5000)', '"2018-03-08 13:30:00"',
                              '"SIGUSR1"', '"default"', '"0644"', '"r"', '"w"', '"\\0"'])
        if r < 0.74 and depth < 2:
            return self.func(depth + 1)
        if r < 0.80:
            return self.options(self.pick(["queue", "async", "item", "timer", "source", "io", "limit",
                                           "date", "any"]), depth)
        if r < 0.84:
            return self.fd()
        if r < 0.87:
            return self.pick(["print", "error", "coroutine.create(function() end)", "io.stdout",
                              "setmetatable({}, {__gc = function() end})", "{1, 2, 3}", "{{}}"])
        if r < 0.90 and depth < 2:
            # A finalizer: runs inside whatever allocation triggers the collector, on that thread.
            return "setmetatable({}, {__gc = %s})" % self.func(depth + 1)
        return self.pick(["P.queue", "P.group", "P.semaphore", "P.work_item", "P.source", "P.io", "P.data",
                          "P.time", "P.walltime", "P.key", "P.once", "dispatch.main", "dispatch.global()"])

    def options(self, kind, depth):
        keys = {
            "queue": ["label", "concurrent", "qos", "inactive", "target"],
            "async": ["group", "barrier", "qos"],
            "item": ["barrier", "qos", "detached", "enforce_qos", "inherit_qos", "assign_current_context", "no_qos"],
            "timer": ["deadline", "interval", "leeway", "strict", "queue", "handler", "cancel_handler",
                      "registration_handler"],
            "source": ["queue", "handler", "cancel_handler", "registration_handler", "signal", "fd", "path",
                       "pid", "events"],
            "io": ["path", "fd", "type", "mode", "permissions", "queue", "cleanup"],
            "limit": ["high", "low"],
            "date": ["year", "month", "day", "hour", "min", "sec"],
            "any": ["colour", "x", "[\"1\"]", "stop", "label"],
        }[kind]
        parts = []
        for _ in range(self.r.randint(0, 4)):
            key = self.pick(keys + ["unknown_key"] if self.r.random() < 0.9 else ["[1]", "[true]"])
            parts.append("%s = %s" % (key, self.option_value(key, depth)) if not key.startswith("[") else
                         "%s = %s" % (key, self.value(depth + 1)))
        return "{" + ", ".join(parts) + "}"

    def option_value(self, key, depth):
        if self.r.random() < 0.25:
            return self.value(depth + 1)
        good = {
            "label": '"q%d"' % self.r.randint(1, 9), "concurrent": self.pick(["true", "false"]),
            "qos": self.pick(QOS), "inactive": self.pick(["true", "false"]), "target": self.var(),
            "group": self.var(), "barrier": self.pick(["true", "false"]), "detached": "true",
            "enforce_qos": "true", "inherit_qos": "true", "assign_current_context": "true", "no_qos": "true",
            "deadline": self.small_time(), "interval": self.pick(["0.001", "0.01", "0", "-1", "math.huge", "0/0", "1e-12"]),
            "leeway": self.pick(["0", "0.001", "-1", "0/0", "math.huge"]), "strict": "true", "queue": self.var(),
            "handler": self.func(depth + 1) if depth < 2 else "nil",
            "cancel_handler": self.func(depth + 1) if depth < 2 else "nil",
            "registration_handler": self.func(depth + 1) if depth < 2 else "nil",
            "cleanup": self.func(depth + 1) if depth < 2 else "nil",
            "signal": self.pick(SIGNALS), "fd": self.fd(), "path": self.path(),
            "pid": self.pick(["dispatch.pid()", "1", "0", "-5", "1073741823", "0/0"]),
            "events": self.pick(['{"write"}', '{"exit"}', '{"delete", "rename", "attrib", "extend", "link"}',
                                 '{"bogus"}', '{1}', '"write"', "{}"]),
            "type": self.pick(['"stream"', '"random"', '"pipe"']),
            "mode": self.pick(['"r"', '"w"', '"a"', '"r+"', '"w+"', '"a+"', '"rb"', '"q"']),
            "permissions": self.pick(["420", '"0644"', '"999"', "-1", "0x10000"]),
            "high": self.number(), "low": self.number(),
            "year": self.pick(["2018", "0", "10000", "-1"]), "month": self.pick(["1", "12", "13", "0"]),
            "day": self.pick(["1", "31", "32"]), "hour": self.pick(["0", "23", "24"]),
            "min": self.pick(["0", "59", "60"]), "sec": self.pick(["0", "59.5", "61", "0/0"]),
        }
        return good.get(key, self.value(depth + 1))

    def func(self, depth):
        if depth > 2 or self.r.random() < 0.15:
            return self.pick(["function() end", "function() error('in block') end",
                              "function(...) local t = {...} end", "function() error({}) end"])
        body = " ".join(self.stmt(depth) for _ in range(self.r.randint(1, 3)))
        return "function(...) %s end" % body

    def args(self, depth, n=None):
        n = self.r.randint(0, 4) if n is None else n
        return ", ".join(self.value(depth) for _ in range(n))

    def maker(self, depth):
        """An expression that makes a new object."""
        k = self.r.randint(0, 26)
        if k == 0: return "dispatch.queue(%s)" % self.pick(['"q"', "nil", self.value(depth)])
        if k == 1: return "dispatch.queue(%s)" % self.options("queue", depth)
        if k == 2: return "dispatch.global(%s)" % self.pick(QOS + ["nil", "1"])
        if k == 3: return "dispatch.group()"
        if k == 4: return "dispatch.semaphore(%s)" % self.pick(["0", "1", "2", "-1", "2^40", "0.5", "nil", "0/0"])
        if k == 5: return "dispatch.work_item(%s, %s)" % (self.func(depth), self.options("item", depth))
        if k == 6: return "dispatch.source.timer(%s)" % self.options("timer", depth)
        if k == 7: return "dispatch.source.%s(%s)" % (self.pick(["data_add", "data_or", "data_replace"]),
                                                     self.options("source", depth))
        if k == 8: return "dispatch.source.signal{signal = %s, handler = %s}" % (self.pick(SIGNALS), self.func(depth + 1))
        if k == 9: return "dispatch.source.%s{fd = %s, queue = %s}" % (self.pick(["read", "write"]), self.fd(), self.var())
        if k == 10: return "dispatch.source.file{path = %s, events = %s}" % (self.path(), self.option_value("events", depth))
        if k == 11: return "dispatch.source.process{pid = %s}" % self.option_value("pid", depth)
        if k == 12: return "dispatch.source.%s(%s)" % (self.pick(["timer", "read", "file", "process", "signal"]),
                                                      self.value(depth))
        if k == 13: return "dispatch.data(%s)" % self.pick(['"abc"', '""', 'string.rep("d", 70000)', "nil", self.value(depth)])
        if k == 14: return "dispatch.data.map(%s)" % self.path()
        if k == 15: return "dispatch.io(%s)" % self.options("io", depth)
        if k == 16: return "dispatch.io{path = %s, mode = %s, queue = %s}" % (self.path(), self.option_value("mode", depth), self.var())
        if k == 17: return "dispatch.io{fd = %s, type = %s}" % (self.fd(), self.option_value("type", depth))
        if k == 18: return "dispatch.now() + %s" % self.number()
        if k == 19: return "dispatch.walltime(%s)" % self.pick(["nil", self.number(), '"2018-03-08 13:30:00"',
                                                              '"bad"', self.options("date", depth), "{}"])
        if k == 20: return "dispatch.specific_key(%s)" % self.pick(['"k"', "nil", "1", "{}"])
        if k == 21: return "dispatch.once(%s)" % self.func(depth)
        if k == 22: return "%s .. %s" % (self.var(), self.pick(['"x"', self.var(), "1"]))
        if k == 23: return "%s:sub(%s, %s)" % (self.var(), self.number(), self.number())
        if k == 24: return "dispatch.task(%s, %s)" % (self.func(depth), self.pick(["nil", self.var(), "dispatch.main", "1"]))
        if k == 25:
            # resume called at once, later from a block, twice, or never
            then = self.pick(["r(%s)" % self.value(depth), "r(); r()", "",
                              "dispatch.global():after(0.01, function() r(%s) end)" % self.value(depth)])
            return "dispatch.await(function(r) %s %s end)" % (self.stmt(depth + 1) if depth < 2 else "", then)
        return self.value(depth)

    def hostile(self, depth):
        """An attempt to get out, in the main chunk or from a block, a task or another interpreter."""
        attempt = self.pick(EXHAUSTING if self.limits and self.r.random() < 0.4 else HOSTILE).replace("@TMP@", self.tmp)
        where = self.pick(["%s", "%s", "dispatch.global():async(function() %s end)",
                           "dispatch.task(function() %s end)", "dispatch.main:async(function() %s end)",
                           "dispatch.concurrent_map(2, function() %s end)",
                           "dispatch.workers{count = 1}:submit(function() %s end):wait(1)"])
        return where % attempt

    def stmt(self, depth=0):
        if self.sandbox and self.r.random() < 0.2:
            return self.hostile(depth)
        k = self.r.randint(0, 30)
        v = self.var()
        if k <= 5:
            return "%s = %s" % (v, self.maker(depth))
        if k <= 13:
            # A method of the object's own type, or of another type (bad self).
            kind = self.pick(list(ALL_METHODS))
            m = self.pick(ALL_METHODS[kind])
            if self.r.random() < 0.8:
                return "%s:%s(%s)" % (v, m, self.method_args(m, depth))
            rest = self.method_args(m, depth)
            return "P.%s.%s(%s%s)" % (kind, m, self.value(depth), (", " + rest) if rest else "")
        if k == 14:
            return "local _ = %s.%s" % (v, self.pick(FIELDS))
        if k == 15:
            return "local _ = %s" % self.pick(["tostring(%s)" % v, "#%s" % v, "%s == %s" % (v, self.var()),
                                               "%s < %s" % (v, self.var()), "%s <= %s" % (v, self.var()),
                                               "%s - %s" % (v, self.var()), "%s + %s" % (v, self.number()),
                                               "%s .. %s" % (v, self.var()), "%s()" % v, "%s[1]" % v])
        if k == 16:
            return "dispatch.concurrent_perform(%s, %s)" % (self.pick(["0", "1", "3", "8", "-1", "0/0", "2^31", "nil", "1.5"]),
                                                           self.func(depth))
        if k == 17:
            return "dispatch.sleep(%s)" % self.pick(["0", "0.001", "0.01", "-1", "0/0", "nil", '"1"'])
        if k == 18:
            return "%s = nil; collectgarbage()" % v
        if k == 19:
            return "dispatch.set_error_handler(%s)" % self.pick(["nil", self.func(depth), "1"])
        if k == 20:
            return "for _, r in %s:regions() do end" % v
        if k == 21:
            return "local a, b = dispatch.fd.pipe(); F[%d], F[%d] = a, b" % (self.r.randint(1, 4), self.r.randint(1, 4))
        if k == 22:
            f = self.pick(["read", "write", "close", "set_nonblocking", "open"])
            if f == "close":
                # forget a closed descriptor: its number may be reused by the runtime's own files
                slot = self.r.randint(1, 4)
                return "dispatch.fd.close(F[%d]); F[%d] = nil" % (slot, slot)
            if f == "open":
                return "F[%d] = dispatch.fd.open(%s, %s, %s)" % (self.r.randint(1, 4), self.path(),
                                                                 self.option_value("mode", depth), self.pick(["nil", "420", '"0600"', "-1"]))
            extra = {"read": self.pick(["1", "0", "-1", "2^40", "math.huge"]), "write": self.pick(['"abc"', '""', "1", "nil"]),
                     "close": "", "set_nonblocking": self.pick(["", "true", "false", "1"])}[f]
            return "dispatch.fd.%s(%s%s)" % (f, self.fd(), (", " + extra) if extra else "")
        if k == 23:
            f = self.pick(["read", "write"])
            second = self.number() if f == "read" else self.pick([self.var(), '"abc"', "nil"])
            return "dispatch.io.%s(%s, %s, %s, %s)" % (f, self.fd(), second, self.var(), self.func(depth))
        if k == 24:
            return "local _ = dispatch.%s(%s)" % (self.pick(["current_label", "thread", "pid", "errno_name", "get_specific", "now"]),
                                                   self.value(depth))
        if k == 25:
            return "dispatch.kill(%s, %s)" % (self.pick(["1073741823", "0", "-1", "nil", "0/0", "dispatch.pid()"]),
                                              self.pick(["0", '"SIGFOO"', "-3", "99", "nil"]))
        if k == 26:
            return "%s = %s" % (v, self.var())
        if k == 27:
            return "dispatch.http.get(%s, %s, %s)" % (self.pick(['"http://127.0.0.1:1/x"', '"ftp://x"', '""', '"http://"', "1"]),
                                                       self.var(), self.func(depth))
        if k == 28:
            if self.r.random() < 0.5:
                return "coroutine.wrap(function() %s end)()" % self.stmt(depth + 1) if depth < 2 else "%s = dispatch.main" % v
            return "setmetatable({}, {__gc = %s}); collectgarbage('step')" % self.func(depth + 1) if depth < 2 else "collectgarbage()"
        if k == 29:
            # statements inside a task, where every wait suspends instead of blocking
            return "%s = dispatch.task(%s, %s)" % (v, self.func(depth + 1) if depth < 2 else "function() dispatch.sleep(0) end",
                                                  self.pick(["nil", self.var(), "P.queue"]))
        return "%s:%s(%s)" % (v, self.pick(["cancel", "close", "resume", "suspend", "leave", "signal", "activate"]), "")

    def method_args(self, m, depth):
        fn = self.func(depth)
        if m in ("async", "barrier_async"):
            return self.pick([fn, "%s, %s" % (fn, self.options("async", depth)), self.var(), self.args(depth)])
        if m in ("sync", "barrier_sync"):
            return self.pick([fn, self.var(), "%s, %s" % (fn, self.options("any", depth)), self.args(depth)])
        if m == "after":
            return "%s, %s" % (self.small_time(), self.pick([fn, self.var(), "nil"]))
        if m in ("notify",):
            return "%s, %s" % (self.var(), self.pick([fn, self.var(), "nil"]))
        if m == "wait":
            return self.small_time()
        if m in ("set_event_handler", "set_cancel_handler", "set_registration_handler", "barrier"):
            return self.pick([fn, "nil", "1"])
        if m == "schedule":
            return self.options("timer", depth)
        if m == "merge":
            return self.number()
        if m == "set_limit":
            return self.options("limit", depth)
        if m == "set_interval":
            return "%s, %s" % (self.number(), self.pick(["true", "nil", "1"]))
        if m == "read":
            return "%s, %s, %s, %s" % (self.number(), self.number(), self.var(), fn)
        if m == "write":
            return "%s, %s, %s, %s" % (self.number(), self.pick(['"abc"', self.var(), "nil"]), self.var(), fn)
        if m == "close":
            return self.pick(["", "{stop = true}", "{stop = 1}", "{bogus = true}"])
        if m in ("set_specific", "get_specific"):
            return "%s, %s" % (self.pick(["P.key", self.var(), "nil"]), self.value(depth))
        if m in ("sub", "bytes"):
            return "%s, %s" % (self.number(), self.number())
        return self.args(depth)


PRELUDE = """local dispatch = require("dispatch")
local __wq = dispatch.queue("fuzz.watchdog")
local __wd = dispatch.source.timer{deadline = %s, queue = __wq}
__wd:set_event_handler(function() io.stdout:write("fuzz: watchdog\\n"); dispatch.exit(0) end)
__wd:resume()
local V, F = {}, {}
local P = {queue = dispatch.queue("proto"), group = dispatch.group(), semaphore = dispatch.semaphore(1),
  work_item = dispatch.work_item(function() end), source = dispatch.source.data_add{},
  io = dispatch.io{path = "proto.txt", mode = "w"}, data = dispatch.data("proto"), time = dispatch.now(),
  walltime = dispatch.walltime(), key = dispatch.specific_key("k"), once = dispatch.once(function() return 1 end),
  task = dispatch.task(function() end)}
P.io:close()
""" % WATCHDOG


# Without io and dispatch.exit: no watchdog timer (the harness interrupts the run), no channel.
SANDBOX_PRELUDE = """local dispatch = require("dispatch")
local V, F = {}, {}
local P = {queue = dispatch.queue("proto"), group = dispatch.group(), semaphore = dispatch.semaphore(1),
  work_item = dispatch.work_item(function() end), source = dispatch.source.data_add{},
  io = dispatch.data("proto"), data = dispatch.data("proto"), time = dispatch.now(),
  walltime = dispatch.walltime(), key = dispatch.specific_key("k"), once = dispatch.once(function() return 1 end),
  task = dispatch.task(function() end)}
"""


def generate(seed, tmp, sandbox=False, limits=False):
    rng = random.Random(seed)
    g = Gen(rng, tmp, sandbox, limits)
    return [g.stmt() for _ in range(rng.randint(5, 40))]


def render(stmts, sandbox=False):
    return (SANDBOX_PRELUDE if sandbox else PRELUDE) + "".join("pcall(function() %s end)\n" % s for s in stmts)


# ---------------------------------------------------------------------------------------------
# Running

def snapshot(directory):
    """Every entry under `directory`: its size, modification time and mode."""
    seen = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            seen[os.path.relpath(path, directory)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return seen


def changes(before, after):
    return (["created " + p for p in sorted(set(after) - set(before))] +
            ["removed " + p for p in sorted(set(before) - set(after))] +
            ["changed " + p for p in sorted(set(before) & set(after)) if before[p] != after[p]])


def run_script(binary, text, timeout, env=None, sandbox=False, unsandboxed=False, limits=False):
    """Runs `text` in a fresh temporary directory; returns (verdict, detail, seconds)."""
    tmp = tempfile.mkdtemp(prefix="ldfuzz-")
    try:
        text = text.replace("@TMP@", tmp)
        os.mkfifo(os.path.join(tmp, "fifo"))
        path = os.path.join(tmp, "seq.lua")
        with open(path, "w") as f:
            f.write(text)
        before = snapshot(tmp) if sandbox else None
        start = time.monotonic()
        options = ["--memory-limit", "64M", "--time-limit", str(TIME_LIMIT)] if limits else []
        argv = [binary, "--sandbox"] + options + [path] if sandbox and not unsandboxed else [binary, "run"] + options + [path]
        p = subprocess.Popen(argv, cwd=tmp, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             env=dict(os.environ, **(env or {})))
        interrupted = False
        try:
            if sandbox:
                # The watchdog: Ctrl-C after WATCHDOG s, and once more a second later.
                for wait in ((TIME_LIMIT + LIMIT_GRACE) if limits else WATCHDOG, 1.0):
                    try:
                        out, err = p.communicate(timeout=wait)
                        break
                    except subprocess.TimeoutExpired:
                        p.send_signal(signal.SIGINT)
                        interrupted = True
                else:
                    out, err = p.communicate(timeout=max(1.0, timeout - WATCHDOG - 1.0))
            else:
                out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return "hang", "no exit within %.0f s\n%s" % (timeout, err.decode(errors="replace")[-3000:]), time.monotonic() - start
        elapsed = time.monotonic() - start
        rc = p.returncode
        tail = err.decode(errors="replace")[-4000:]
        if sandbox:
            escaped = changes(before, snapshot(tmp))
            if escaped:
                return "escape", "%s\n%s" % ("; ".join(escaped), tail), elapsed
        if limits:
            if interrupted:
                return "hang", "the time limit did not end it within %.0f s\n%s" % (LIMIT_GRACE, tail), elapsed
            if rc == 1 and ("time limit exceeded" in tail or "not enough memory" in tail):
                return "limit", "", elapsed
        if interrupted and rc in (1, -signal.SIGINT):
            return "watchdog", "", elapsed
        if rc < 0:
            return "crash", "killed by signal %d (%s)\n%s" % (-rc, signal.Signals(-rc).name, tail), elapsed
        if rc not in (0, 1):
            return "crash", "exit status %d\n%s" % (rc, tail), elapsed
        return ("watchdog" if b"fuzz: watchdog" in out else "ok"), "", elapsed
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


FAILURES = ("crash", "hang", "escape")


def fails(binary, stmts, timeout, tries, sandbox=False, unsandboxed=False, limits=False):
    for _ in range(tries):
        verdict, _, _ = run_script(binary, render(stmts, sandbox), timeout, sandbox=sandbox, unsandboxed=unsandboxed,
                                   limits=limits)
        if verdict in FAILURES:
            return True
    return False


def minimise(binary, stmts, timeout, tries=3, budget=300.0, **mode):
    """ddmin over the statement list: the smallest list found that still fails."""
    start = time.monotonic()
    n = 2
    while len(stmts) >= 2 and time.monotonic() - start < budget:
        chunk = max(1, len(stmts) // n)
        subsets = [stmts[i:i + chunk] for i in range(0, len(stmts), chunk)]
        reduced = False
        for i in range(len(subsets)):
            complement = [s for j, sub in enumerate(subsets) if j != i for s in sub]
            if fails(binary, complement, timeout, tries, **mode):
                stmts, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(stmts):
                break
            n = min(len(stmts), n * 2)
    return stmts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--time-limit", type=float, default=0, help="stop starting sequences after this many seconds")
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--out", default="fuzz-failures")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--replay", help="run this Lua file once and report")
    ap.add_argument("--print", type=int, metavar="SEED", help="print the sequence for SEED and exit")
    ap.add_argument("--sandbox", action="store_true", help="run with --sandbox, try to get out, check no file changed")
    ap.add_argument("--unsandboxed", action="store_true", help="with --sandbox: run the children without it (a control)")
    ap.add_argument("--limits", action="store_true", help="with --sandbox: both limits on, and scripts that exhaust them")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    mode = {"sandbox": a.sandbox, "unsandboxed": a.unsandboxed, "limits": a.limits}

    if a.print is not None:
        sys.stdout.write(render(generate(a.print, "@TMP@", a.sandbox, a.limits), a.sandbox))
        return 0
    if a.replay:
        verdict, detail, secs = run_script(binary, open(a.replay).read(), a.timeout, **mode)
        print("%s: %s (%.1f s) %s" % (a.replay, verdict, secs, detail))
        return 1 if verdict in FAILURES else 0

    start = time.monotonic()
    counts = {"ok": 0, "watchdog": 0, "limit": 0, "crash": 0, "hang": 0, "escape": 0}
    failures = []
    seeds = [a.seed * 1_000_003 + i for i in range(a.count)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {}
        it = iter(seeds)
        def submit_next():
            if a.time_limit and time.monotonic() - start > a.time_limit:
                return
            s = next(it, None)
            if s is not None:
                text = render(generate(s, "@TMP@", a.sandbox, a.limits), a.sandbox)
                futures[pool.submit(run_script, binary, text, a.timeout, **mode)] = s
        for _ in range(a.jobs * 2):
            submit_next()
        while futures:
            done, _ = concurrent.futures.wait(list(futures), return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                s = futures.pop(f)
                verdict, detail, secs = f.result()
                counts[verdict] += 1
                if verdict in FAILURES:
                    print("FAIL seed %d: %s: %s" % (s, verdict, detail.splitlines()[0] if detail else ""), flush=True)
                    failures.append((s, verdict, detail))
                submit_next()
    total = sum(counts.values())
    elapsed = time.monotonic() - start
    if failures:
        os.makedirs(a.out, exist_ok=True)
    for s, verdict, detail in failures:
        stmts = generate(s, "@TMP@", a.sandbox, a.limits)
        if not a.no_minimise:
            stmts = minimise(binary, stmts, a.timeout, **mode)
        path = os.path.join(a.out, "seed-%d.lua" % s)
        with open(path, "w") as f:
            f.write("-- fuzz seed %d: %s\n-- %s\n" % (s, verdict, (detail.splitlines() or [""])[0]))
            f.write(render(stmts, a.sandbox))
        print("minimised seed %d to %d statements: %s" % (s, len(stmts), path), flush=True)
        print(detail[-2000:], flush=True)
    print("fuzz: seed %d, %d sequences in %.0f s (%d ended on their own, %d by the watchdog%s), %d crashes, %d hangs%s"
          % (a.seed, total, elapsed, counts["ok"], counts["watchdog"],
             ", %d by a limit" % counts["limit"] if a.limits else "", counts["crash"], counts["hang"],
             ", %d escapes" % counts["escape"] if a.sandbox else ""))
    print("fuzz: %d sequences, %d passed, %d failed" % (total, total - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
