# Runs the attack suite's commands, a few at a time, each in a child forked here, and reports
# how each ended: its status, signal, peak resident memory (wait4's ru_maxrss, KiB), the
# seconds it took, the seconds until its standard error said "time limit exceeded" (or null),
# whether it hung (killed at the timeout), and its standard error. A child
# forked here (not spawned with vfork by a big test process) starts its peak afresh, so
# ru_maxrss is the child's own.
# Usage: launch.py LANES TIMEOUT IN.json OUT.json; IN.json is a list of argument vectors, OUT.json
# gets a list of {status, signal, maxrss, took, limit_at, hang, stderr} in the same order.
import concurrent.futures, json, os, signal, sys, threading, time


def run(argv, timeout):
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(write_end, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    os.close(write_end)
    said, limit_at = bytearray(), [None]

    def read():
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            said.extend(chunk)
            if len(said) > 1 << 20:
                del said[:-65536]
            if limit_at[0] is None and b"time limit exceeded" in said[-65536 - 32:]:
                limit_at[0] = time.monotonic() - started
        os.close(read_end)

    reader = threading.Thread(target=read)
    reader.start()
    hang = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > timeout:
            os.kill(pid, signal.SIGKILL)
            hang = True
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    took = time.monotonic() - started
    reader.join(5)
    return {"status": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
            "maxrss": usage.ru_maxrss, "took": took, "limit_at": limit_at[0], "hang": hang,
            "stderr": bytes(said[-4000:]).decode("utf-8", "replace")}


lanes, timeout = int(sys.argv[1]), float(sys.argv[2])
with open(sys.argv[3]) as f:
    commands = json.load(f)
with concurrent.futures.ThreadPoolExecutor(lanes) as pool:
    results = list(pool.map(lambda argv: run(argv, timeout), commands))
with open(sys.argv[4], "w") as f:
    json.dump(results, f)
