#!/usr/bin/env python3
"""peak_rss.py LIMIT_MIB CMD [ARGS...]: runs CMD with this process's standard
streams and exits with its status, unless its peak resident set went over
LIMIT_MIB, then exits 99 saying so. A bound on what a command holds, for
tests fed a finite but long stream: unlike an address-space limit
(prlimit --as) it also holds for sanitizer builds, which reserve terabytes
of address space they never touch."""
import resource
import subprocess
import sys

limit_kib = int(sys.argv[1]) * 1024
rc = subprocess.call(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
if peak > limit_kib:
    print(f"peak_rss.py: {sys.argv[2]}: peak RSS {peak} KiB, over the bound of {limit_kib} KiB",
          file=sys.stderr)
    sys.exit(99)
sys.exit(rc if rc >= 0 else 128 - rc)
