package jepsen

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SocketOwner finds which of the given processes owns the far end of a
// loopback TCP connection that a proxy accepted: remote and local are the
// accepted connection's addresses. It
// reads /proc/net/tcp{,6} to turn the address into a socket inode and then
// looks for that inode among each process's file descriptors: no root
// needed for our own child processes. It returns "" when no process
// matches (a client connection, or a process that has already exited).
//
// This is how a single proxy in front of a node can still apply per-link
// faults: hashicorp/raft dials peers with a plain net.Dial, so the source
// port is ephemeral and only the kernel knows which process owns it.
func SocketOwner(remote, local net.Addr, pids map[string]int) string {
	ta, ok := remote.(*net.TCPAddr)
	if !ok {
		return ""
	}
	tl, ok := local.(*net.TCPAddr)
	if !ok {
		return ""
	}
	// The kernel builds /proc/net/tcp while sockets come and go and can
	// skip entries when the table changes under a read; retry briefly.
	inode := ""
	for attempt := 0; inode == "" && attempt < 6; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Millisecond)
		}
		inode = socketInode(ta, tl)
	}
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for name, pid := range pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
			if err == nil && l == want {
				return name
			}
		}
	}
	return ""
}

// socketInode returns the inode of the live TCP socket whose local address
// is a and whose peer is b. Matching both ends matters: an ephemeral port
// may be reused towards another peer while an older connection from it
// lingers in TIME_WAIT (listed with inode 0).
func socketInode(a, b *net.TCPAddr) string {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if in := scanTCPTable(file, a, b); in != "" {
			return in
		}
	}
	return ""
}

func scanTCPTable(file string, a, b *net.TCPAddr) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	// Large reads: each read walks the table afresh, so fewer reads means
	// fewer chances to miss an entry.
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		ip, port, ok := parseProcAddr(fields[1])
		if !ok || port != a.Port || !ip.Equal(a.IP) || fields[9] == "0" {
			continue
		}
		if rip, rport, ok := parseProcAddr(fields[2]); ok && rport == b.Port && rip.Equal(b.IP) {
			return fields[9]
		}
	}
	return ""
}

// parseProcAddr decodes "0100007F:1F90" (IPv4, little-endian words) or the
// 32-hex-digit IPv6 form.
func parseProcAddr(s string) (net.IP, int, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	if len(h) != 8 && len(h) != 32 {
		return nil, 0, false
	}
	ip := make(net.IP, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return nil, 0, false
		}
		// Each 32-bit word is printed in host (little-endian) order.
		ip[w*4+0] = byte(v)
		ip[w*4+1] = byte(v >> 8)
		ip[w*4+2] = byte(v >> 16)
		ip[w*4+3] = byte(v >> 24)
	}
	return ip, int(port), true
}
