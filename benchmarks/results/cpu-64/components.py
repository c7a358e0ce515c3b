import re, subprocess, sys
# CPU per operation by component of one agent profile:
#   python3 components.py BINARY PROFILE OPS
# OPS: operations the cluster served while the profile ran.
binary, prof, ops = sys.argv[1], sys.argv[2], float(sys.argv[3])
out = subprocess.run(['go', 'tool', 'pprof', '-top', '-cum', '-nodecount=100000', binary, prof],
                     capture_output=True, text=True).stdout
def secs(s):
    return float(s[:-2]) / 1000 if s.endswith('ms') else float(s[:-1])
tot = secs(re.search(r'Total samples = (\S+)', out).group(1))
rows = {}
for l in out.splitlines():
    f = l.split()
    if len(f) >= 6 and re.fullmatch(r'[0-9.]+m?s', f[3]):
        rows[' '.join(f[5:])] = secs(f[3])
def g(pat):
    return sum(v for k, v in rows.items() if re.fullmatch(pat, k))
items = [
    ('all', None),
    ('state machine (trackedFSM.ApplyBatch)', r'github.com/ledgerd/ledgerd/cluster.\(\*trackedFSM\).ApplyBatch'),
    ('rpc handlers (runOp)', r'github.com/ledgerd/ledgerd/rpc.\(\*reservations\).runOp'),
    ('ledger applyResult', r'github.com/ledgerd/ledgerd/ledger/replicated.\(\*Ledger\).applyResult'),
    ('  of it: version()', r'github.com/ledgerd/ledgerd/ledger/replicated.\(\*Ledger\).version( \(inline\))?'),
    ('  of it: fsm.DecodeResult', r'github.com/ledgerd/ledgerd/fsm.DecodeResult'),
    ('HTTP/2 server (runHandler)', r'net/http.\(\*http2serverConn\).runHandler'),
    ('raft log StoreLogs', r'github.com/hashicorp/raft.\(\*LogCache\).StoreLogs'),
    ('raft replicate (leader)', r'github.com/hashicorp/raft.\(\*Raft\).replicate'),
    ('raft appendEntries (follower)', r'github.com/hashicorp/raft.\(\*Raft\).appendEntries'),
    ('runtime.mallocgc', r'runtime.mallocgc'),
    ('GC mark workers', r'runtime.gcBgMarkWorker'),
    ('syscalls', r'internal/runtime/syscall/linux.Syscall6'),
]
for name, pat in items:
    v = tot if pat is None else g(pat)
    print(f"{name}\t{v * 1e6 / ops:.1f}")
