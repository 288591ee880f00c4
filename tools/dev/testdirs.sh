# Sourced by tools/dev/tsan.sh and tools/test.sh (for the MPI suite): puts the
# tests' temporary directories (tests/support.c, make_tmpdir) on /dev/shm
# when it is a tmpfs with 4 GiB free, unless RINGSHARD_TEST_TMPDIR already
# says where.
# Why: every output file is fsynced, file by file, and on a disk those
# waits (and their system time) are most of these passes' time, while what
# they are there to check - TSan's view of the threads, the ranks' outputs
# against one process's - is the same on any file system. The Release suite
# and the ASan pass (tools/dev/sanitize.sh says why) keep /tmp, so every test
# still runs against a disk file system.
# Usage: . tools/dev/testdirs.sh NAME     (NAME prefixes the line it prints)
if [ -z "${RINGSHARD_TEST_TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
  [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
  [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge 4194304 ]; then
  export RINGSHARD_TEST_TMPDIR=/dev/shm
fi
echo "$1: test directories in ${RINGSHARD_TEST_TMPDIR:-/tmp}"
