#!/usr/bin/python3
# machine.py - what the figures were measured on: CPU, cores, kernel, the
# filesystem the scratch projects live on and its fsync latency (results
# and state checkpoints are written durably, so fsync bounds dispatch),
# the load average before the run, and the zerg version and commit.
#
#   bench/machine.py build/zerg [--out FILE] [--workdir DIR]
import datetime
import os
import platform
import subprocess
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


def output(cmd):
    try:
        return subprocess.check_output(cmd, text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run(env):
    plain, replace = bl.fsync_ms(env.root)
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc)
        .strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "os": os_name(),
        "loadavg": open("/proc/loadavg").read().split()[:3],
        "fs": (output(["df", "--output=fstype", env.root]) or "? ?")
        .split()[-1],
        "fsync_ms": plain,
        "replace_ms": replace,
        "zerg_version": output([env.zerg, "--version"]),
        "commit": output(["git", "-C", SRC, "rev-parse", "--short", "HEAD"]),
        "tree_modified": bool(output(["git", "-C", SRC, "status",
                                      "--porcelain", "--untracked-files=no"])),
        "python": platform.python_version(),
        "quick": env.quick,
    }
    env.save("machine", info)
    print("%s, %d cores, Linux %s, %s on %s: fsync %.1f ms, durable "
          "replace %.1f ms, load %s" % (info["cpu"], info["nproc"],
                                        info["kernel"], info["os"],
                                        info["fs"], plain, replace,
                                        " ".join(info["loadavg"])))


if __name__ == "__main__":
    env, _ = bl.parse_args("Describe the machine the benchmarks run on.")
    bl.main(run, env)
