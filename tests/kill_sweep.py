#!/usr/bin/env python3
"""The kill sweep of the test suites: a command stopped at every pause
point and at every call of each publishing system call, and what it must
leave in its directory each time.

  kill_sweep.py DIR --setup SH --cmd SH [--points "P..."] [--syscalls "S..."]
                [--next SH] [--upgraded] [--error ERRNO] [--interrupt]
                [--repair ROWS --next-on-copy SH...] [--done-rc N]

  SETUP (a shell command, run in the current directory) puts DIR as it is
  before each run of CMD. The allowed states are snapshots of DIR: "old"
  after SETUP (no DIR is a state too), "new" after an uninterrupted run of
  CMD and, with --upgraded, "upgraded": the old files under the new base
  manifest (a run killed between the two renames of a schema upgrade).

  For each pause point P: CMD with RINGSHARD_TEST_PAUSE_AT=P, SIGKILL once
  it has stopped itself there (--interrupt: SIGINT then SIGCONT, and the
  run goes on to its end; nothing may be left beside DIR). For each system
  call S and N = 1, 2, ... until CMD runs to its end (exit 0, or --done-rc):
  CMD under strace with SIGKILL injected on entry to the Nth call of S
  (counted over every thread); with --error ERRNO, the call fails with
  ERRNO instead, and the run must exit 1 and leave nothing beside DIR. The
  run that ends must leave the "new" state.

  After each killed or failed run: DIR is in an allowed state; verify passes
  when there is a DIR; NEXT works; verify passes again; nothing is left
  beside DIR (DIR.ringshard-*).

  --repair ROWS: the states of a repair of the damaged DIR SETUP makes:
  "damaged" (byte for byte as SETUP left it), "repaired" (verify passes and
  DIR holds ROWS data rows) or "none" (no DIR); "held" counts the kills
  that left DIR.ringshard-repair.* (the damaged copy at a name no run
  removes). After each kill, each NEXT-ON-COPY runs on its own copy of
  DIR's parent, in that copy: it refuses (exit 2 naming the held or
  damaged directory, DIR unchanged) or goes on from DIR (exit 0 or 3: DIR
  then verifies and holds at least ROWS rows). The run that ends leaves
  "repaired" and DIR.damaged.1 byte for byte the damaged DIR.

  Prints one line, which the C tests assert on:
    P:STATE... kills=K STATE=N... calls: S=N...
  per point its state (--interrupt: P:EXIT:STATE), the number of runs the
  sweep stopped, per state the number of system-call kills that left it
  (with --repair also held=H), per system call the number of calls made
  before the run ended (0: never called). Exit 1 saying where, on the
  first run that breaks a rule.

The snapshots are tests/snap.py's (the one every suite compares: DIR's
tree and every file's bytes, manifests without their wall time unless
raw), taken in this process and never with ringshard.
"""
import collections, gzip, os, shutil, signal, subprocess, sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from snap import snap  # noqa: E402


def data_rows(d):
    """The data rows DIR holds: every line of each data file (its own and
    its generations' segments, decompressed) but its header line."""
    n = 0
    for top in [d] + sorted(os.path.join(d, g) for g in os.listdir(d) if g.startswith("g")):
        if not os.path.isdir(top):
            continue
        for name in os.listdir(top):
            path = os.path.join(top, name)
            if ".csv" not in name or not os.path.isfile(path):
                continue
            if name.endswith(".gz"):
                with gzip.open(path, "rb") as f:
                    data = f.read()
            elif name.endswith(".zst"):
                data = subprocess.run(["zstd", "-dcq", path], stdout=subprocess.PIPE, check=True).stdout
            else:
                with open(path, "rb") as f:
                    data = f.read()
            n += max(data.count(b"\n") - 1, 0)
    return n


class Broken(Exception):
    pass


def sh(cmd, cwd=None, env=None):
    return subprocess.run(["sh", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def must(cmd, what):
    r = sh(cmd)
    if r.returncode != 0:
        raise Broken(f"{what}: {cmd}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r


def litter(d):
    parent, base = os.path.split(os.path.abspath(d))
    return sorted(n for n in os.listdir(parent) if n.startswith(base + ".ringshard-"))


class Sweep:
    def __init__(self, o):
        self.o = o
        self.d = o["dir"]
        self.count = collections.Counter()
        self.held = 0
        self.raw = o["repair"] is not None
        must(o["setup"], "setup")
        self.old = snap(self.d, self.raw)
        if o["repair"] is None:
            self.run_to_end("the run not stopped")
            self.new = snap(self.d)
            self.up = None
            if o["upgraded"]:
                self.up = dict(self.old)
                self.up["manifest.json"] = self.new["manifest.json"]
            self.names = ["old", "new", "upgraded"]
        else:
            self.names = ["damaged", "repaired", "none"]

    def run_to_end(self, what):
        r = sh(self.o["cmd"])
        if r.returncode != self.o["done_rc"]:
            raise Broken(f"{what}: {self.o['cmd']}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")

    def state(self, where):
        if self.o["repair"] is not None:
            if not os.path.lexists(self.d):
                return "none"
            if snap(self.d, True) == self.old:
                return "damaged"
            if sh(f'"$RS" verify --quiet {self.d}').returncode == 0 and data_rows(self.d) == self.o["repair"]:
                return "repaired"
            raise Broken(f"{where}: {self.d} is neither the damaged directory nor the repaired one: "
                         f"{sorted(os.listdir(os.path.dirname(os.path.abspath(self.d))))}")
        now = snap(self.d)
        for name, s in (("old", self.old), ("new", self.new), ("upgraded", self.up)):
            if now == s and (s is not None or name == "old"):
                return name
        raise Broken(f"{where}: {self.d} is neither the old nor the new state: {sorted(now or [])}")

    def after(self, where):
        """The checks after a run stopped at `where`; returns DIR's state."""
        st = self.state(where)
        if self.o["repair"] is not None:
            if any(n.startswith(".".join([os.path.basename(self.d), "ringshard-repair", ""]))
                   for n in litter(self.d)):
                self.held += 1
            for c in self.o["next_on_copy"]:
                self.next_on_copy(c, f"{where} ({st})")
            return st
        if os.path.lexists(self.d):
            must(f'"$RS" verify --quiet {self.d}', f"{where} ({st}): verify")
        must(self.o["next"], f"{where} ({st}): the next run")
        must(f'"$RS" verify --quiet {self.d}', f"{where} ({st}): verify after the next run")
        if litter(self.d):
            raise Broken(f"{where} ({st}): left beside {self.d} after the next run: {litter(self.d)}")
        return st

    def next_on_copy(self, cmd, where):
        src = os.path.dirname(self.d) or "."
        t = "kill_sweep.copy"
        shutil.rmtree(t, ignore_errors=True)
        shutil.copytree(src, t, symlinks=True)
        td = os.path.join(t, os.path.basename(self.d))
        before = snap(td, True)
        r = sh(cmd, cwd=t)
        err = r.stderr.decode(errors="replace")
        if r.returncode == 2:
            if snap(td, True) != before:
                raise Broken(f"{where}: {cmd} refused, but {self.d} changed")
            if "ringshard-repair" not in err and "damaged" not in err:
                raise Broken(f"{where}: {cmd} refused for another reason: {err}")
        elif r.returncode in (0, 3):
            if sh(f'"$RS" verify --quiet {td}').returncode != 0 or data_rows(td) < self.o["repair"]:
                raise Broken(f"{where}: {cmd} (exit {r.returncode}) did not go on from {self.d}: {err}")
        else:
            raise Broken(f"{where}: {cmd}: exit {r.returncode}: {err}")

    def at_point(self, point):
        must(self.o["setup"], "setup")
        env = dict(os.environ, RINGSHARD_TEST_PAUSE_AT=point)
        if self.o["interrupt"]:   # the SIGINT sent below is seen at the point, whichever thread takes it
            env["RINGSHARD_TEST_PAUSE_INTERRUPTED"] = "1"
        p = subprocess.Popen(["sh", "-c", "exec " + self.o["cmd"]], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _, st = os.waitpid(p.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(st):
            raise Broken(f"{self.o['cmd']}: ended (status {st:#x}) before it stopped at {point}")
        if not self.o["interrupt"]:
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)
            p.returncode = -9
            return f"{point}:{self.after(f'killed at {point}')}"
        os.kill(p.pid, signal.SIGINT)
        os.kill(p.pid, signal.SIGCONT)
        _, st = os.waitpid(p.pid, 0)
        p.returncode = 0
        rc = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
        state = self.state(f"interrupted at {point}")
        if litter(self.d):
            raise Broken(f"interrupted at {point}: left beside {self.d}: {litter(self.d)}")
        return f"{point}:{rc}:{state}"

    def at_call(self, sc, n):
        """Stops CMD at call n of sc; False when it ran to its end."""
        must(self.o["setup"], "setup")
        how = f"error={self.o['error']}" if self.o["error"] else "signal=SIGKILL"
        quoted = "'" + self.o["cmd"].replace("'", "'\\''") + "'"
        r = sh(f"strace -f -qq -o /dev/null -e trace={sc} -e inject={sc}:{how}:when={n} sh -c {quoted}")
        if r.returncode == self.o["done_rc"]:
            st = self.state(f"not stopped ({sc} call {n})")
            if st != ("repaired" if self.o["repair"] is not None else "new"):
                raise Broken(f"{self.o['cmd']} not stopped ({sc} call {n}) left the {st} state")
            if self.o["repair"] is not None and snap(self.d + ".damaged.1", True) != self.old:
                raise Broken(f"{self.o['cmd']} not stopped ({sc} call {n}): {self.d}.damaged.1 is not the damaged DIR")
            return False
        want = 1 if self.o["error"] else 137
        if r.returncode != want:
            raise Broken(f"call {n} of {sc}: exit {r.returncode}, not the injected failure: "
                         f"{r.stderr.decode(errors='replace')}")
        if self.o["error"] and litter(self.d):
            raise Broken(f"call {n} of {sc} failed: left beside {self.d}: {litter(self.d)}")
        self.count[self.after(f"at call {n} of {sc}")] += 1
        return True

    def run(self):
        said = [self.at_point(p) for p in self.o["points"]]
        kills, calls = len(said), []
        for sc in self.o["syscalls"]:
            n = 1
            while self.at_call(sc, n):
                n += 1
            kills += n - 1
            calls.append(f"{sc}={n - 1}")
        counts = [f"{s}={self.count[s]}" for s in self.names]
        if self.o["repair"] is not None:
            counts.append(f"held={self.held}")
        return " ".join(said + [f"kills={kills}"] + counts + ["calls:"] + calls)


def main():
    args = sys.argv[1:]
    o = {"dir": args.pop(0), "setup": "true", "cmd": None, "points": [], "syscalls": [], "next": "true",
         "upgraded": False, "error": None, "interrupt": False, "repair": None, "next_on_copy": [], "done_rc": 0}
    while args:
        a = args.pop(0)
        if a in ("--upgraded", "--interrupt"):
            o[a[2:]] = True
        elif a == "--next-on-copy":
            o["next_on_copy"].append(args.pop(0))
        elif a in ("--points", "--syscalls"):
            o[a[2:]] = args.pop(0).split()
        elif a in ("--repair", "--done-rc"):
            o[a[2:].replace("-", "_")] = int(args.pop(0))
        elif a in ("--setup", "--cmd", "--next", "--error"):
            o[a[2:]] = args.pop(0)
        else:
            print(f"kill_sweep.py: unknown option {a}", file=sys.stderr)
            return 64
    try:
        print(Sweep(o).run())
    except Broken as e:
        print(f"kill_sweep.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
