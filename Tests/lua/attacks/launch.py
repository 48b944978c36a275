# Runs a command in a forked child and reports how it ended: the status, the signal, the peak
# resident memory (wait4's ru_maxrss, KiB) and the seconds it took, on the last line of standard
# output. A child forked here (not spawned with vfork by a big test process) starts its peak
# afresh, so ru_maxrss is the child's own. A child still running at the timeout is killed and
# reported as a hang. Usage: launch.py TIMEOUT COMMAND [ARG...]
import os, signal, sys, time

timeout, argv = float(sys.argv[1]), sys.argv[2:]
started = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
hang = 0
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() - started > timeout:
        os.kill(pid, signal.SIGKILL)
        hang = 1
        done, status, usage = os.wait4(pid, 0)
        break
    time.sleep(0.005)
took = time.monotonic() - started
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
sys.stdout.flush()
print(f"ATTACK-END status={code} signal={sig} maxrss={usage.ru_maxrss} took={took:.3f} hang={hang}", flush=True)
